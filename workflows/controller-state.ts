/**
 * The entity state of one service's controller: desired spec and revision, the pass in flight, the last result,
 * retry timing, delete; the server pool subscription is an object of its own (workflows/pool-subscription.ts).
 * Pure and deterministic (time comes from the workflow clock); serializable for continue-as-new.
 */
import { validateSpec } from '../domain';
import type { ControllerStatus, PassResult, Phase, PoolMembers, PoolMembersMessage } from '../contract';
import { PoolSubscription, type PoolSubscriptionSnapshot } from './pool-subscription';

export interface RunningPass {
  number: number;
  revision: number;
  spec: unknown;
  teardown: boolean;
  startedAt: number;
  /** The pool members the pass reconciles (a service with `serverPool`). */
  pool: PoolMembers | null;
}

/** Server pools: the pool fields (workflows/pool-subscription.ts) are absent in snapshots of controllers from before pools. */
export interface ControllerSnapshot extends PoolSubscriptionSnapshot {
  spec: unknown;
  revision: number;
  passCount: number;
  lastResult: PassResult | null;
  failures: number;
  dirty: boolean;
  deleting: boolean;
  retryAt: number | null;
}

export class ControllerState {
  spec: unknown = null;
  revision = 0;
  passCount = 0;
  lastResult: PassResult | null = null;
  failures = 0;
  dirty = false;
  deleting = false;
  retryAt: number | null = null;
  running: RunningPass | null = null;
  deleted: PassResult | null = null;
  /** The subscription to the spec's server pool and the members received from it. */
  readonly pool: PoolSubscription;
  /** Transient (not carried over by continue-as-new): the latest rate-limit notice from a worker. */
  rateLimitedUntil: number | null = null;
  #lbs: string[] = [];

  constructor(
    readonly serviceUid: string,
    restored: ControllerSnapshot | undefined,
    private readonly now: () => number,
  ) {
    const { pool, subscribedPool, poolMissing, resubscribe, ...own } = restored ?? {};
    this.pool = new PoolSubscription({ pool, subscribedPool, poolMissing, resubscribe });
    if (restored) {
      Object.assign(this, own);
      this.pool.restoreWanted(this.#readSpec(restored.spec));
    }
  }

  /** Reads the load balancers of a spec; returns the server pool it names. */
  #readSpec(spec: unknown): string | null {
    const r = spec === null || spec === undefined ? null : validateSpec(spec);
    this.#lbs = r?.ok ? [...r.spec.loadBalancers].sort() : [];
    return r?.ok ? (r.spec.serverPool ?? null) : null;
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
    this.dirty = true;
    this.failures = 0;
    this.retryAt = null;
  }

  /** The spec's pool could not be subscribed to: the spec's revision fails with `error` until an apply or a resync. */
  poolFailed(name: string, error: string): void {
    this.pool.failed(name);
    this.dirty = false;
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

  /** Records a new desired spec (already validated by the update's validator). Latest wins. */
  apply(spec: unknown): number {
    this.spec = spec;
    this.pool.want(this.#readSpec(spec));
    this.revision++;
    this.dirty = true;
    this.failures = 0;
    this.retryAt = null;
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
    this.pool.resync();
    this.dirty = true;
    this.retryAt = null;
  }

  requestDelete(): void {
    if (this.deleting) return;
    this.deleting = true;
    this.retryAt = null;
    this.failures = 0;
  }

  hasWork(): boolean {
    if (this.deleting) return this.deleted === null && this.retryAt === null;
    return this.dirty && this.spec !== null && this.poolReady();
  }

  retryDelayMs(): number | null {
    return this.retryAt === null ? null : Math.max(0, this.retryAt - this.now());
  }

  retryDue(): void {
    this.retryAt = null;
    if (!this.deleting) this.dirty = true;
  }

  beginPass(): RunningPass {
    this.passCount++;
    this.dirty = false;
    this.running = { number: this.passCount, revision: this.revision, spec: this.spec, teardown: this.deleting, startedAt: this.now(), pool: this.pool.forPass() };
    return this.running;
  }

  /** A newer revision or a delete makes the pass in flight obsolete. */
  isSuperseded(pass: RunningPass): boolean {
    if (this.running !== pass) return false;
    const newerPool = !pass.teardown && pass.pool !== null && this.pool.members !== null && this.pool.members.revision > pass.pool.revision;
    return this.revision > pass.revision || (this.deleting && !pass.teardown) || newerPool;
  }

  /** Ends a pass; `null` when it was superseded (its outcome says nothing about the current revision). */
  endPass(pass: RunningPass, result: PassResult | null): void {
    if (this.running === pass) this.running = null;
    if (!result) return;
    this.lastResult = result;
    if (result.converged) {
      this.failures = 0;
      this.retryAt = null;
    } else if (pass.revision === this.revision && (pass.pool === null || pass.pool.revision === this.pool.members?.revision)) {
      this.failures++;
      this.retryAt = this.now() + Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (this.failures - 1));
    }
  }

  finishDelete(result: PassResult): void {
    this.deleted = result;
  }

  /** The result that answers waitConverged(revision): the last finished pass of that revision or a newer one. */
  resultFor(revision: number): PassResult | null {
    return this.lastResult && this.lastResult.revision >= revision ? this.lastResult : null;
  }

  get phase(): Phase {
    const last = this.lastResult;
    if (this.deleting) return 'Deleting';
    if (this.running || (this.dirty && this.poolReady()) || !last || last.revision < this.revision) return 'Converging';
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

  snapshot(): ControllerSnapshot {
    return {
      spec: this.spec,
      revision: this.revision,
      passCount: this.passCount,
      lastResult: this.lastResult,
      failures: this.failures,
      dirty: this.dirty,
      deleting: this.deleting,
      retryAt: this.retryAt,
      ...this.pool.snapshot(),
    };
  }
}

/** Failed passes are retried after 5 s, doubling up to 10 min: quick for a blip, gentle on a broken Engine. */
export const RETRY_FIRST_MS = 5_000;
export const RETRY_MAX_MS = 10 * 60_000;
