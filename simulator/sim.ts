/**
 * The simulator's behaviour, independent of HTTP: object lifecycle (create, update, delete, deploy timers) and
 * tags (tagging.ts). Seeded draws live in draws.ts, fixtures and drift (the admin operations) in fixtures.ts,
 * admin views in views.ts. Routes translate requests into these calls; `SimError` carries the HTTP status and the error
 * shape's message and validation.
 */
import { Draws, STREAM_IDS } from './draws';
import { buildFaults, type FaultModel, NO_RATES } from './faults';
import { mannersOf, type Profile, REALISTIC_DELETE_MS } from './manners';
import { type FieldSpec, type Fields, KIND_SPECS, type Kind, type SimObject, STATES, type StateId } from './model';
import { Prng } from './prng';
import { RateLimiter } from './ratelimit';
import { Stats } from './stats';
import { Store } from './store';
import { Tagging } from './tagging';
import { SimError } from './errors';
import { parseFields, type ParsedFields } from './validate';
import { type AdminObject, adminObjects } from './views';

export { SimError } from './errors';

export interface SimConfig {
  seed: number;
  deployMs: { min: number; max: number };
  /** Left out: 0 in the ideal profile, REALISTIC_DELETE_MS in the realistic one. */
  deleteMs?: { min: number; max: number };
  /** The profile the simulator starts with and returns to on reset. Default 'ideal'. */
  profile?: Profile;
  log?: (line: string) => void;
}

export class Simulator {
  readonly store: Store;
  readonly stats = new Stats();
  readonly ids: Prng;
  readonly draws: Draws;
  readonly limiter = new RateLimiter();
  /** The startup model of each profile: what keys left out of `PUT /_sim/faults` take. */
  readonly baselines: Record<Profile, FaultModel>;
  readonly profile: Profile;
  private model: FaultModel;
  private readonly tagging: Tagging;
  /** Called after every change to objects or tags (persistence). */
  onChange: () => void = () => {};

  constructor(readonly config: SimConfig) {
    this.ids = new Prng(config.seed, STREAM_IDS);
    this.store = new Store(() => this.ids.hex32());
    this.profile = config.profile ?? 'ideal';
    const base = (profile: Profile, deleteMs: { min: number; max: number }): FaultModel => ({
      profile,
      seed: config.seed,
      latencyMs: { min: 0, max: 0 },
      deployMs: { ...config.deployMs },
      deleteMs: { ...(config.deleteMs ?? deleteMs) },
      rates: { ...NO_RATES },
      routes: null,
      dropMode: 'mixed',
      ...mannersOf(profile),
    });
    this.baselines = { ideal: base('ideal', { min: 0, max: 0 }), realistic: base('realistic', REALISTIC_DELETE_MS) };
    this.model = structuredClone(this.baselines[this.profile]);
    this.draws = new Draws(config.seed, this.model);
    this.tagging = new Tagging(this.store, this.draws, () => this.onChange());
  }

  log(line: string): void {
    this.config.log?.(line);
  }

  get faults(): FaultModel {
    return structuredClone(this.model);
  }

  /** Replaces the fault model (keys left out take the profile's defaults); a given seed reseeds the draws. */
  setFaults(input: unknown): FaultModel {
    const next = buildFaults(input, this.baselines, this.profile);
    this.model = next;
    this.draws.use(next);
    this.limiter.clear();
    if (typeof input === 'object' && input !== null && 'seed' in input) this.draws.reseed(next.seed);
    return this.faults;
  }

  /** The rate limit for one API token: null to go ahead, or the 429's headers (Retry-After only when switched on). */
  rateLimited(token: string): Record<string, string> | null {
    const limit = this.model.rateLimit;
    const wait = limit ? this.limiter.take(token, limit) : null;
    if (wait === null) return null;
    return limit?.retryAfter ? { 'Retry-After': String(wait) } : {};
  }

  // --- lifecycle --------------------------------------------------------------------------------------------

  newIdentifier(): string {
    for (;;) {
      const id = this.ids.hex32();
      if (!this.store.byId.has(id)) return id;
    }
  }

  /** Links must name existing objects of the right kind that are not being deleted. */
  checkLinks(parsed: ParsedFields): void {
    for (const l of parsed.links) {
      const target = this.store.getLive(l.identifier);
      if (!target) parsed.errors[l.field] = `Object "${l.identifier}" does not exist.`;
      else if (target.kind !== l.kind) {
        parsed.errors[l.field] = `Object "${l.identifier}" is a ${KIND_SPECS[target.kind].title}, not a ${KIND_SPECS[l.kind].title}.`;
      }
    }
  }

  fail(parsed: ParsedFields): void {
    if (Object.keys(parsed.errors).length > 0) throw new SimError(422, 'Validation failed.', parsed.errors);
  }

  newObject(kind: Kind, identifier: string, name: string, fields: Fields, state: StateId): SimObject {
    const now = Date.now();
    return {
      kind,
      identifier,
      name,
      fields,
      state,
      tags: new Set(),
      createdAt: now,
      updatedAt: now,
      deployMs: null,
      deployStartedAt: null,
      deployedAt: null,
      deploySeenAt: null,
      pendingResult: null,
      deleting: false,
      deleteMs: null,
      timer: null,
    };
  }

  cancelTimer(o: SimObject): void {
    if (o.timer) clearTimeout(o.timer);
    o.timer = null;
  }

  /** Starts a deploy: pending state now, the drawn delay and outcome later. */
  startDeploy(o: SimObject, mode: 'create' | 'update'): void {
    this.cancelTimer(o);
    const { ms, failed } = this.draws.deploy(this.deployKey(o));
    o.state = mode === 'create' ? '4' : '0';
    o.pendingResult = failed ? '2' : mode === 'create' ? '3' : '1';
    o.deployMs = ms;
    o.deployStartedAt = Date.now();
    o.deployedAt = null;
    o.deploySeenAt = null;
    this.armDeploy(o, ms);
  }

  /**
   * What a deploy's draw is keyed on: kind, name and the load balancer the object hangs under (a service's objects
   * have the same names on each of its load balancers; load balancers are seeded, their identifiers do not depend on
   * the order of later creates).
   */
  private deployKey(o: SimObject): string {
    let root: SimObject | undefined = o;
    for (let depth = 0; root && root.kind !== 'loadbalancer' && depth < 4; depth++) {
      const link: FieldSpec | undefined = KIND_SPECS[root.kind].fields.find((f) => f.type === 'link' && f.required && f.key !== 'default_backend');
      root = link ? this.store.get(String(root.fields[link.key] ?? '')) : undefined;
    }
    return `${o.kind}\u0000${o.name}\u0000${root?.kind === 'loadbalancer' ? root.identifier : ''}`;
  }

  /** (Re)arms the timer of a pending deploy; used by startDeploy and when a state file is loaded. */
  armDeploy(o: SimObject, ms: number): void {
    this.cancelTimer(o);
    const t = setTimeout(() => this.settle(o), Math.max(0, ms));
    t.unref();
    o.timer = t;
  }

  private settle(o: SimObject): void {
    o.timer = null;
    if (o.deleting || o.pendingResult === null) return;
    o.state = o.pendingResult;
    o.pendingResult = null;
    o.deployedAt = o.updatedAt = Date.now();
    this.log(`deploy ${KIND_SPECS[o.kind].title} ${o.identifier} -> ${STATES[o.state].title}`);
    this.onChange();
  }

  create(kind: Kind, body: Record<string, unknown>): SimObject {
    const parsed = parseFields(kind, body, null);
    this.checkLinks(parsed);
    this.fail(parsed);
    const o = this.newObject(kind, this.newIdentifier(), parsed.name, parsed.fields, '4');
    this.store.insert(o);
    this.startDeploy(o, 'create');
    this.onChange();
    return o;
  }

  /**
   * The object for a PUT or a tag request. One being deleted is 404 on the ideal Engine, where it has left every
   * list; 409 where it stays listed (`deleteListed`): it exists, GET and lists show it, but it cannot change.
   */
  changeable(id: string, kind?: Kind): SimObject {
    const o = this.store.get(id);
    const title = kind ? KIND_SPECS[kind].title : 'Resource';
    if (!o || (kind && o.kind !== kind)) throw new SimError(404, `${title} ${id} not found.`);
    if (o.deleting) {
      if (!this.model.deleteListed) throw new SimError(404, `${title} ${id} not found.`);
      throw new SimError(409, `${KIND_SPECS[o.kind].title} ${id} is being deleted.`);
    }
    return o;
  }

  update(o: SimObject, body: Record<string, unknown>): SimObject {
    const parsed = parseFields(o.kind, body, o);
    this.checkLinks(parsed);
    this.fail(parsed);
    this.store.setFields(o, parsed.name, parsed.fields);
    o.updatedAt = Date.now();
    this.startDeploy(o, 'update');
    this.onChange();
    return o;
  }

  /**
   * Engine DELETE. False when the deletion was already under way (nothing changed). Dependents being deleted
   * but still listed (`deleteListed`) still hold the object: 409 until they are gone.
   */
  remove(o: SimObject): boolean {
    if (o.deleting) return false;
    const deps = this.store.dependents(o);
    if (deps.length > 0) {
      const what = deps.map((d) => `${d.objects.size} ${KIND_SPECS[d.kind].title}(s) via ${d.field}`).join(', ');
      throw new SimError(409, `${KIND_SPECS[o.kind].title} ${o.identifier} is still referenced by ${what}.`);
    }
    this.cancelTimer(o);
    o.pendingResult = null;
    this.store.markDeleting(o, this.model.deleteListed);
    const ms = this.draws.deleteDelay();
    o.deleteMs = ms;
    if (ms > 0) {
      const t = setTimeout(() => {
        o.timer = null;
        this.store.drop(o);
        this.onChange();
      }, ms);
      t.unref();
      o.timer = t;
    } else {
      this.store.drop(o);
    }
    this.onChange();
    return true;
  }

  // --- tags (tagging.ts) -----------------------------------------------------------------------------------

  beginTagRequest(o: SimObject): number {
    return this.tagging.begin(o, this.model);
  }

  tag(o: SimObject, tag: string): void {
    this.tagging.tag(o, tag);
  }

  untag(o: SimObject, tag: string): void {
    this.tagging.untag(o, tag);
  }

  // --- admin ------------------------------------------------------------------------------------------------

  /** Out-of-band deletion: immediate, and takes everything that references the object with it. */
  adminDelete(id: string): void {
    const o = this.store.get(id);
    if (!o) throw new SimError(404, `Object ${id} not found.`);
    const drop = (x: SimObject): void => {
      for (const d of this.store.dependents(x)) for (const child of [...d.objects.values()]) drop(child);
      this.cancelTimer(x);
      this.store.drop(x);
    };
    drop(o);
    this.onChange();
  }

  /** Clears objects, tags, counters and faults, and restarts every PRNG stream from the startup seed. */
  reset(): void {
    this.cancelAll();
    this.store.clear();
    this.stats.reset();
    this.limiter.clear();
    this.model = structuredClone(this.baselines[this.profile]);
    this.draws.use(this.model);
    this.ids.reseed(this.config.seed, STREAM_IDS);
    this.draws.reseed(this.config.seed);
    this.onChange();
  }

  cancelAll(): void {
    for (const o of this.store.byId.values()) this.cancelTimer(o);
    this.tagging.cancelAll();
  }

  objects(): AdminObject[] {
    return adminObjects(this.store);
  }

  /** Which optional parts of answers to leave out (render.ts). */
  get sparse(): FaultModel['sparse'] {
    return this.model.sparse;
  }
}
