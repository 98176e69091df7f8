/**
 * The entity state of one service's controller: desired spec and revision, the last result, and what it is doing
 * (a tagged phase, workflows/controller-phase.ts: idle, due, running, retrying, deleting, deleted); the server pool
 * subscription is an object of its own (workflows/pool-subscription.ts). Pure and deterministic (time comes from the
 * workflow clock); serializable for continue-as-new.
 */
import { formatIssues, MAX_INDEX_BYTES, planPoolDelta, poolIndexBytes, readPoolIndex, resolvePool, validateSpec, type DeltaPlan, type PoolIndex, type ValidatedSpec } from '../domain';
import { PASS_TERMINATED, type ControllerStatus, type PassResult, type Phase, type PoolMembersMessage } from '../contract';
import {
  failuresOf,
  passOf,
  phaseForSnapshot,
  phaseFromFlat,
  retryAtOf,
  retryDelayAfter,
  RETRY_FIRST_MS,
  type CheckedSpec,
  type FlatWorkFields,
  type RunningPass,
  type WorkPhase,
} from './controller-phase';
import { PoolSubscription, type PoolSubscriptionSnapshot } from './pool-subscription';
import { MAX_KNOWN } from './input';

export { RETRY_FIRST_MS, RETRY_MAX_MS, type CheckedSpec, type RunningPass } from './controller-phase';

/**
 * A continue-as-new snapshot (the `state` of a `v: 2` input, contract/schema.ts). `work` is the controller's phase
 * (workflows/controller-phase.ts). Snapshots of the previous release (read by workflows/legacy/controller.ts) may
 * lack it and carry only the flat fields (failures, dirty, deleting, retryAt) of the builds before the phase; this
 * build writes `work` alone, which the previous release reads too (a rollback). Server pools: the pool fields
 * (workflows/pool-subscription.ts) are absent in snapshots of controllers that never had a pool.
 */
export interface ControllerSnapshot extends PoolSubscriptionSnapshot, Partial<FlatWorkFields> {
  spec: unknown;
  revision: number;
  passCount: number;
  lastResult: PassResult | null;
  work?: WorkPhase;
  /** Objects superseded passes created (absent in snapshots of builds before supersededCreatesSignal). */
  supersededCreates?: string[];
  /**
   * What the last converged pass left for pool-delta passes (domain/pool-index.ts); absent when there is none (the
   * next pass is a full one), and in snapshots of builds before pool-delta passes.
   */
  poolIndex?: PoolIndex;
}

/** Identifiers of superseded passes' creates kept at most (the newest): as many as a pass takes as `known`. */
export const MAX_SUPERSEDED_CREATES = MAX_KNOWN;

/**
 * The apply update's check, shared by its validator (which refuses, writing nothing) and its handler (which runs on
 * replay too, where validators do not): the spec document validated, of this controller's service. The one place a
 * spec sent by a Temporal client is validated (docs/architecture.md#where-the-spec-is-validated).
 */
export function checkApplied(serviceUid: string, doc: unknown): CheckedSpec {
  const result = validateSpec(doc);
  if (!result.ok) return { ok: false, error: `invalid spec:\n${formatIssues(result.issues)}` };
  if (result.spec.serviceUid !== serviceUid) return { ok: false, error: `serviceUid: ${result.spec.serviceUid} does not match this controller's service ${serviceUid}` };
  return { ok: true, spec: result.spec };
}

/**
 * The spec a full pass is handed: the one the apply validated, a pool spec resolved into the pool's members (none
 * known yet: a delete needs none). Nothing is parsed again; the members are checked (domain/pool.ts resolvePool).
 */
export function passSpec(pass: RunningPass): { ok: true; spec: ValidatedSpec } | { ok: false; message: string } {
  const checked = pass.checked;
  if (checked === null) return { ok: false, message: 'no spec was applied' };
  if (!checked.ok) return { ok: false, message: checked.error };
  if (checked.spec.serverPool === undefined) return { ok: true, spec: checked.spec };
  return resolvePool(checked.spec, pass.pool?.servers ?? []);
}

export class ControllerState {
  /**
   * The spec document as the client sent it: what the continue-as-new snapshot carries, so that the previous build
   * (a rollback) reads it as it always has. The passes get `checked`, its validated form.
   */
  spec: unknown = null;
  /** `spec` validated, once per apply (or per restore), never again on its way to the passes. */
  #checked: CheckedSpec | null = null;
  revision = 0;
  passCount = 0;
  lastResult: PassResult | null = null;
  /**
   * Objects created by passes that were superseded, which return no result: handed to every pass as known
   * identifiers (the tag index lags behind tagging) until a pass converges, which has then read them.
   */
  supersededCreates: string[] = [];
  /** What the controller is doing (the only place pending work, the pass in flight, retries and deletion live). */
  #work: WorkPhase = { tag: 'idle' };
  /** The subscription to the spec's server pool and the members received from it. */
  readonly pool: PoolSubscription;
  /**
   * The identifiers the last converged pass reconciled, while a pool-delta pass may use them: dropped by anything
   * that calls for the full pass (an apply, a resync, a full pass starting, a failed or stale pass).
   */
  poolIndex: PoolIndex | null = null;
  /** Transient (not carried over by continue-as-new): the latest rate-limit notice from a worker. */
  rateLimitedUntil: number | null = null;
  #lbs: string[] = [];

  constructor(
    readonly serviceUid: string,
    restored: ControllerSnapshot | undefined,
    private readonly now: () => number,
  ) {
    const { pool, subscribedPool, poolMissing, resubscribe } = restored ?? {};
    this.pool = new PoolSubscription({ pool, subscribedPool, poolMissing, resubscribe });
    if (restored) {
      this.spec = restored.spec;
      this.revision = restored.revision;
      this.passCount = restored.passCount;
      this.lastResult = restored.lastResult;
      this.supersededCreates = Array.isArray(restored.supersededCreates) ? restored.supersededCreates.filter((id) => typeof id === 'string') : [];
      this.#work = restored.work ? phaseForSnapshot(restored.work) : phaseFromFlat(restored);
      // A snapshot is an input like any other (any client may start a controller with one, and the previous build
      // wrote those this run may restore): validated once here.
      this.pool.restoreWanted(this.#check(restored.spec === null || restored.spec === undefined ? null : checkApplied(serviceUid, restored.spec)));
      this.poolIndex = readPoolIndex(restored.poolIndex);
    }
  }

  /** The phase, read-only (tests and the loop's conditions). */
  get work(): Readonly<WorkPhase> {
    return this.#work;
  }

  /** The pass in flight, if any. */
  get running(): RunningPass | null {
    return passOf(this.#work);
  }

  /** A delete was asked for (the teardown may be running, retrying or done). */
  get deleting(): boolean {
    return this.#work.tag === 'deleting' || this.#work.tag === 'deleted';
  }

  /** The teardown's result once it converged. */
  get deleted(): PassResult | null {
    return this.#work.tag === 'deleted' ? this.#work.result : null;
  }

  /** Consecutive failed passes of the current revision. */
  get failures(): number {
    return failuresOf(this.#work);
  }

  /** When the next pass runs after a failure (workflow time), if one is scheduled. */
  get retryAt(): number | null {
    return retryAtOf(this.#work);
  }

  /** Work arrived: a pass is due (or, while one runs, another follows it); `reset` starts the failure count anew. */
  #moreWork(reset: boolean): void {
    const w = this.#work;
    const failures = reset ? 0 : failuresOf(w);
    if (w.tag === 'running') this.#work = { ...w, again: true, failures };
    else if (w.tag === 'idle' || w.tag === 'due' || w.tag === 'retrying') this.#work = { tag: 'due', failures };
  }

  /** Keeps the checked spec and its load balancers; returns the server pool it names. */
  #check(checked: CheckedSpec | null): string | null {
    this.#checked = checked;
    this.#lbs = checked?.ok ? [...checked.spec.loadBalancers].sort() : [];
    return checked?.ok ? (checked.spec.serverPool ?? null) : null;
  }

  /** The held spec, validated (null before the first apply). */
  get checked(): CheckedSpec | null {
    return this.#checked;
  }

  /** The server pool the spec names (null: inline servers). */
  get poolName(): string | null {
    return this.pool.wanted;
  }

  /** Members of the spec's pool are known (always true for inline servers). */
  poolReady(): boolean {
    return this.pool.ready();
  }

  /** The subscription differs from what the spec wants, or a resync asked to subscribe again. */
  needsSubscription(): boolean {
    return this.deleted === null && this.pool.needsStep();
  }

  /** Members from a pool: new members of the spec's pool make work (a pass), unless the service is being deleted. */
  receiveMembers(m: PoolMembersMessage): void {
    if (this.pool.receive(m) !== 'taken' || this.deleting) return;
    this.#moreWork(true);
  }

  /** The spec's pool could not be subscribed to: the spec's revision fails with `error` until an apply or a resync. */
  poolFailed(name: string, error: string): void {
    this.pool.failed(name);
    if (this.#work.tag === 'due') this.#work = { tag: 'idle' };
    const last = this.lastResult;
    this.lastResult = {
      serviceUid: this.serviceUid,
      revision: this.revision,
      converged: false,
      status: last?.status ?? {},
      loadBalancers: last?.loadBalancers ?? {},
      objects: last?.objects ?? [],
      ...(last?.objectsOmitted ? { objectsOmitted: last.objectsOmitted } : {}),
      pass: this.passCount,
      finishedAt: this.now(),
      error,
    };
  }

  /**
   * Records a new desired spec, which the update's validator accepted; the handler's half of that check
   * (checkApplied) canonicalizes it, since on replay the validator does not run. Latest wins.
   */
  apply(spec: unknown): number {
    const checked = checkApplied(this.serviceUid, spec);
    if (!checked.ok) throw new TypeError(`apply: the validator let through a spec it refuses: ${checked.error}`);
    this.spec = spec;
    this.poolIndex = null;
    this.pool.want(this.#check(checked));
    this.revision++;
    this.#moreWork(true);
    return this.revision;
  }

  /** A worker's notice that the Engine is throttling this service's requests until `until`. */
  noteRateLimited(until: number): void {
    if (!Number.isFinite(until)) return;
    this.rateLimitedUntil = Math.max(this.rateLimitedUntil ?? 0, until);
  }

  /** Whether the last notice still holds at `now`. */
  rateLimited(): boolean {
    return this.rateLimitedUntil !== null && this.rateLimitedUntil > this.now();
  }

  requestResync(): void {
    if (this.spec === null || this.deleting) return;
    // A resync is a full pass: it sees drift anywhere, which a pool-delta pass does not look for.
    this.poolIndex = null;
    this.pool.resync();
    this.#moreWork(false);
  }

  /** A delete: the pass in flight (a reconcile pass) is superseded, and teardown passes run until one converges. */
  requestDelete(): void {
    if (this.deleting) return;
    this.#work = { tag: 'deleting', pass: passOf(this.#work), retryAt: null, failures: 0 };
  }

  /** A pass can start now. */
  hasWork(): boolean {
    const w = this.#work;
    if (w.tag === 'deleting') return w.pass === null && w.retryAt === null;
    return w.tag === 'due' && this.spec !== null && this.poolReady();
  }

  retryDelayMs(): number | null {
    const at = this.retryAt;
    return at === null ? null : Math.max(0, at - this.now());
  }

  /** The retry time was reached. */
  retryDue(): void {
    const w = this.#work;
    if (w.tag === 'retrying') this.#work = { tag: 'due', failures: w.failures };
    else if (w.tag === 'deleting') this.#work = { ...w, retryAt: null };
  }

  /**
   * The pool-delta pass due now, or null when the full pass is due: a reconcile pass is due (not a retry of a failed
   * one), the index is of the current spec revision and pool, and the pool's members are newer than the index's. A
   * delta that cannot be planned from the index drops it.
   */
  poolDelta(): DeltaPlan | null {
    const index = this.poolIndex;
    const w = this.#work;
    const members = this.pool.forPass();
    if (index === null || w.tag !== 'due' || w.failures > 0 || members === null) return null;
    if (index.revision !== this.revision || index.pool !== members.pool || members.revision <= index.poolRevision) return null;
    const checked = this.#checked;
    const plan = checked?.ok ? planPoolDelta(index, checked.spec, members.servers) : { full: 'invalid spec' };
    if ('full' in plan) {
      this.poolIndex = null;
      return null;
    }
    return plan;
  }

  /** Starts a pass; a full one (`delta` unset) drops the index: until it converges, nothing it held is certain. */
  beginPass(o: { delta?: boolean } = {}): RunningPass {
    this.passCount++;
    const w = this.#work;
    if (!o.delta) this.poolIndex = null;
    const pass: RunningPass = { number: this.passCount, revision: this.revision, spec: this.spec, checked: this.#checked, teardown: w.tag === 'deleting', startedAt: this.now(), pool: this.pool.forPass(), ...(o.delta ? { delta: true } : {}) };
    if (w.tag === 'deleting') this.#work = { ...w, pass, retryAt: null };
    else this.#work = { tag: 'running', pass, again: false, failures: failuresOf(w) };
    return pass;
  }

  /** A newer revision, newer pool members or a delete make the pass in flight obsolete. */
  isSuperseded(pass: RunningPass): boolean {
    if (this.running !== pass) return false;
    if (this.deleting) return !pass.teardown;
    // A pool-delta pass is short and writes only what changed: newer members follow it rather than cancel it.
    const newerPool = !pass.delta && pass.pool !== null && this.pool.members !== null && this.pool.members.revision > pass.pool.revision;
    return this.revision > pass.revision || newerPool;
  }

  /** Whether `pass` reconciled what is wanted now (its revision and pool members are the current ones). */
  #current(pass: RunningPass): boolean {
    return pass.revision === this.revision && (pass.pool === null || pass.pool.revision === this.pool.members?.revision);
  }

  /**
   * Ends a pass; `result` null when it was superseded (its outcome says nothing about the current revision).
   * `terminated`: the pass was ended from outside (a stranded pass, worker/stranded.ts): it says nothing about the
   * service either, so it is retried at the first retry step and the consecutive failures stay as they were.
   */
  endPass(pass: RunningPass, result: PassResult | null, o: { terminated?: boolean; index?: PoolIndex | null } = {}): void {
    if (result) this.lastResult = result;
    // A converged full pass has read what superseded passes created; a pool-delta pass reads nothing.
    if (result?.converged && !pass.delta) this.supersededCreates = [];
    // Kept only while it fits its bound beside the pool's members in the snapshot (domain/pool-index.ts, MAX_INDEX_BYTES).
    this.poolIndex = result?.converged && !pass.teardown && o.index && poolIndexBytes(o.index) <= MAX_INDEX_BYTES ? o.index : null;
    const w = this.#work;
    const counted = o.terminated ? 0 : 1;
    const delay = (failures: number) => (o.terminated ? RETRY_FIRST_MS : retryDelayAfter(failures + 1));
    if (w.tag === 'running' && w.pass === pass) {
      if (result?.converged) this.#work = w.again ? { tag: 'due', failures: 0 } : { tag: 'idle' };
      else if (result && this.#current(pass) && !w.again) this.#work = { tag: 'retrying', at: this.now() + delay(w.failures), failures: w.failures + counted };
      else this.#work = { tag: 'due', failures: result && this.#current(pass) ? w.failures + counted : w.failures };
    } else if (w.tag === 'deleting' && w.pass === pass) {
      // Only a teardown's failure delays the next teardown; a superseded reconcile pass just ends.
      const failed = pass.teardown && result !== null && !result.converged;
      this.#work = failed ? { tag: 'deleting', pass: null, retryAt: this.now() + delay(w.failures), failures: w.failures + counted } : { ...w, pass: null };
    }
  }

  /** The teardown converged: the controller ends. */
  finishDelete(result: PassResult): void {
    this.#work = { tag: 'deleted', result };
  }

  /**
   * The result that answers waitConverged(revision): the last finished pass of that revision or a newer one. A pass
   * terminated from outside answers nothing: its retry follows within seconds.
   */
  resultFor(revision: number): PassResult | null {
    const r = this.lastResult;
    return r && r.revision >= revision && !wasTerminated(r) ? r : null;
  }

  get phase(): Phase {
    const last = this.lastResult;
    if (this.deleting) return 'Deleting';
    // A pass terminated from outside is retried within seconds: the service is still converging, not failed.
    if (this.running || (this.#work.tag === 'due' && this.poolReady()) || !last || last.revision < this.revision || wasTerminated(last)) return 'Converging';
    if (this.pool.newerThan(last.pool?.revision ?? -1)) return 'Converging';
    return last.converged ? 'Converged' : 'Failed';
  }

  loadBalancers(): string[] {
    return this.#lbs;
  }

  status(): ControllerStatus {
    const r = this.lastResult;
    return {
      serviceUid: this.serviceUid,
      phase: this.phase,
      revision: this.revision,
      status: r?.status ?? {},
      loadBalancers: r?.loadBalancers ?? {},
      objects: r?.objects ?? [],
      ...(r?.objectsOmitted ? { objectsOmitted: r.objectsOmitted } : {}),
      lastPass: r
        ? { pass: r.pass, revision: r.revision, converged: r.converged, finishedAt: r.finishedAt, ...(r.error ? { error: r.error } : {}), ...(r.pool ? { poolRevision: r.pool.revision } : {}) }
        : null,
      running: this.running ? { pass: this.running.number, revision: this.running.revision, startedAt: this.running.startedAt, teardown: this.running.teardown } : null,
      nextRetryAt: this.retryAt,
      consecutiveFailures: this.failures,
      ...(this.poolName === null ? {} : { pool: { name: this.poolName, revision: this.pool.members?.revision ?? null, servers: this.pool.members?.servers.length ?? null } }),
      engineRateLimitedUntil: this.rateLimited() ? this.rateLimitedUntil : null,
    };
  }

  /** Markdown for the Web UI's current details. */
  details(): string {
    const s = this.status();
    // Paragraphs need blank lines in markdown; single newlines would run everything into one line in the Web UI.
    const paragraphs = [`**${s.phase}** — revision ${s.revision}`];
    if (s.pool) paragraphs.push(`server pool ${s.pool.name}, revision ${s.pool.revision ?? '(waiting for the pool)'}`);
    if (s.engineRateLimitedUntil !== null) {
      paragraphs.push(`**rate limited by the Engine**: requests held back until ${new Date(s.engineRateLimitedUntil).toISOString()}`);
    }
    if (s.running) paragraphs.push(`pass ${s.running.pass} running (revision ${s.running.revision}${s.running.teardown ? ', delete' : ''})`);
    if (s.lastPass) paragraphs.push(`last pass ${s.lastPass.pass}: ${s.lastPass.converged ? 'converged' : `failed: ${s.lastPass.error ?? ''}`}`);
    if (s.nextRetryAt) paragraphs.push(`retry at ${new Date(s.nextRetryAt).toISOString()}`);
    const status = Object.entries(s.status).map(([addr, ports]) => `- ${addr}: ${ports.join(', ')}`);
    if (status.length > 0) paragraphs.push(status.join('\n'));
    return paragraphs.join('\n\n');
  }

  /** A superseded pass's creates (supersededCreatesSignal), kept for the passes to come. */
  noteSupersededCreates(identifiers: unknown): void {
    if (!Array.isArray(identifiers)) return;
    const ids = identifiers.filter((id): id is string => typeof id === 'string' && id !== '');
    this.supersededCreates = [...new Set([...this.supersededCreates, ...ids])].slice(-MAX_SUPERSEDED_CREATES);
  }

  /** Objects a pool-delta pass destroyed: no pass needs to look for them any more. */
  forgetCreates(identifiers: readonly string[]): void {
    if (identifiers.length === 0) return;
    const gone = new Set(identifiers);
    this.supersededCreates = this.supersededCreates.filter((id) => !gone.has(id));
  }

  snapshot(): ControllerSnapshot {
    return {
      spec: this.spec,
      revision: this.revision,
      passCount: this.passCount,
      lastResult: this.lastResult,
      work: phaseForSnapshot(this.#work),
      ...(this.supersededCreates.length > 0 ? { supersededCreates: this.supersededCreates } : {}),
      ...(this.poolIndex ? { poolIndex: this.poolIndex } : {}),
      ...this.pool.snapshot(),
    };
  }
}

/** A result the controller wrote for a pass terminated from outside (controller.ts). */
export function wasTerminated(r: PassResult | null): boolean {
  return r?.error?.startsWith(PASS_TERMINATED) ?? false;
}
