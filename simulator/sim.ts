/**
 * The simulator's behaviour, independent of HTTP: object lifecycle (create, update, delete, deploy timers),
 * tags, the admin operations, and the seeded draws for delays and faults. Routes translate requests into these
 * calls; `SimError` carries the HTTP status and the error shape's message and validation.
 */
import { buildFaults, compileRoutes, type FaultModel, NO_RATES } from './faults';
import {
  type Fields,
  ID_PATTERN,
  isPending,
  KIND_SPECS,
  type Kind,
  type SimObject,
  STATE_BY_TITLE,
  STATES,
  type StateId,
  type StateTitle,
} from './model';
import { Prng } from './prng';
import { Stats } from './stats';
import { Store } from './store';
import { parseFields, type ParsedFields, type Validation } from './validate';

export class SimError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly validation?: Validation,
  ) {
    super(message);
  }
}

export interface SimConfig {
  seed: number;
  deployMs: { min: number; max: number };
  deleteMs: { min: number; max: number };
  log?: (line: string) => void;
}

export interface SeedInput {
  kind: Kind;
  fields?: Record<string, unknown>;
  name?: string;
  state?: StateTitle;
  tags?: string[];
  identifier?: string;
  force?: boolean;
}

export interface PatchInput {
  name?: string;
  state?: StateTitle;
  fields?: Record<string, unknown>;
  tags?: string[];
  force?: boolean;
}

/** An object as the admin API shows it: links as bare ids, state by title, drawn delays and timestamps. */
export interface AdminObject {
  kind: Kind;
  identifier: string;
  name: string;
  state: StateTitle;
  tags: string[];
  fields: Record<string, string | number | boolean>;
  createdAt: string;
  updatedAt: string;
  deployMs: number | null;
  deployStartedAt: string | null;
  deployedAt: string | null;
  deleting: boolean;
  deleteMs: number | null;
}

const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());

const STREAM_IDS = 0;
const STREAM_FAULTS = 1;
const STREAM_DEPLOY = 2;

export class Simulator {
  readonly store: Store;
  readonly stats = new Stats();
  readonly ids: Prng;
  private readonly faultPrng: Prng;
  private readonly deployPrng: Prng;
  readonly baseline: FaultModel;
  private model: FaultModel;
  private routesRe: RegExp | null = null;
  /** Called after every change to objects or tags (persistence). */
  onChange: () => void = () => {};

  constructor(readonly config: SimConfig) {
    this.ids = new Prng(config.seed, STREAM_IDS);
    this.faultPrng = new Prng(config.seed, STREAM_FAULTS);
    this.deployPrng = new Prng(config.seed, STREAM_DEPLOY);
    this.store = new Store(() => this.ids.hex32());
    this.baseline = {
      seed: config.seed,
      latencyMs: { min: 0, max: 0 },
      deployMs: { ...config.deployMs },
      deleteMs: { ...config.deleteMs },
      rates: { ...NO_RATES },
      routes: null,
      dropMode: 'mixed',
    };
    this.model = structuredClone(this.baseline);
  }

  log(line: string): void {
    this.config.log?.(line);
  }

  get faults(): FaultModel {
    return structuredClone(this.model);
  }

  /** Replaces the fault model (keys left out take the startup defaults); a given seed reseeds the draws. */
  setFaults(input: unknown): FaultModel {
    const next = buildFaults(input, this.baseline);
    this.routesRe = compileRoutes(next.routes);
    this.model = next;
    if (typeof input === 'object' && input !== null && 'seed' in input) {
      this.faultPrng.reseed(next.seed, STREAM_FAULTS);
      this.deployPrng.reseed(next.seed, STREAM_DEPLOY);
    }
    return this.faults;
  }

  // --- request faults ---------------------------------------------------------------------------------------

  drawLatency(): number {
    const { min, max } = this.model.latencyMs;
    return max > 0 ? this.faultPrng.int(min, max) : 0;
  }

  private routeMatches(method: string, path: string): boolean {
    return !this.routesRe || this.routesRe.test(`${method} ${path}`);
  }

  /** Before applying a request: a 5xx status, 429, or null to go ahead. */
  drawRequestFault(method: string, path: string): number | null {
    const r = this.model.rates;
    if ((r.serverError <= 0 && r.rateLimited <= 0) || !this.routeMatches(method, path)) return null;
    if (this.faultPrng.chance(r.serverError)) return [500, 502, 503][this.faultPrng.int(0, 2)] ?? 500;
    if (this.faultPrng.chance(r.rateLimited)) return 429;
    return null;
  }

  /** After applying a request: lose its answer? */
  drawDrop(method: string, path: string): '502' | 'reset' | null {
    const rate = this.model.rates.dropAfterCommit;
    if (rate <= 0 || !this.routeMatches(method, path) || !this.faultPrng.chance(rate)) return null;
    if (this.model.dropMode === 'mixed') return this.faultPrng.chance(0.5) ? 'reset' : '502';
    return this.model.dropMode;
  }

  // --- lifecycle --------------------------------------------------------------------------------------------

  newIdentifier(): string {
    for (;;) {
      const id = this.ids.hex32();
      if (!this.store.byId.has(id)) return id;
    }
  }

  private checkLinks(parsed: ParsedFields): void {
    for (const l of parsed.links) {
      const target = this.store.getLive(l.identifier);
      if (!target) parsed.errors[l.field] = `Object "${l.identifier}" does not exist.`;
      else if (target.kind !== l.kind) {
        parsed.errors[l.field] = `Object "${l.identifier}" is a ${KIND_SPECS[target.kind].title}, not a ${KIND_SPECS[l.kind].title}.`;
      }
    }
  }

  private fail(parsed: ParsedFields): void {
    if (Object.keys(parsed.errors).length > 0) throw new SimError(422, 'Validation failed.', parsed.errors);
  }

  private newObject(kind: Kind, identifier: string, name: string, fields: Fields, state: StateId): SimObject {
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
      pendingResult: null,
      deleting: false,
      deleteMs: null,
      timer: null,
    };
  }

  private cancelTimer(o: SimObject): void {
    if (o.timer) clearTimeout(o.timer);
    o.timer = null;
  }

  /** Starts a deploy: pending state now, the drawn delay and outcome later. */
  private startDeploy(o: SimObject, mode: 'create' | 'update'): void {
    this.cancelTimer(o);
    const { min, max } = this.model.deployMs;
    const ms = this.deployPrng.int(min, max);
    const failed = this.deployPrng.chance(this.model.rates.deploymentError);
    o.state = mode === 'create' ? '4' : '0';
    o.pendingResult = failed ? '2' : mode === 'create' ? '3' : '1';
    o.deployMs = ms;
    o.deployStartedAt = Date.now();
    o.deployedAt = null;
    this.armDeploy(o, ms);
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

  /** Engine DELETE. False when the deletion was already under way (nothing changed). */
  remove(o: SimObject): boolean {
    if (o.deleting) return false;
    const deps = this.store.dependents(o);
    if (deps.length > 0) {
      const what = deps.map((d) => `${d.objects.size} ${KIND_SPECS[d.kind].title}(s) via ${d.field}`).join(', ');
      throw new SimError(409, `${KIND_SPECS[o.kind].title} ${o.identifier} is still referenced by ${what}.`);
    }
    this.cancelTimer(o);
    o.pendingResult = null;
    this.store.unindex(o);
    const { min, max } = this.model.deleteMs;
    const ms = max > 0 ? this.deployPrng.int(min, max) : 0;
    o.deleteMs = ms;
    if (ms > 0) {
      const t = setTimeout(() => {
        o.timer = null;
        this.store.drop(o);
      }, ms);
      t.unref();
      o.timer = t;
    } else {
      this.store.drop(o);
    }
    this.onChange();
    return true;
  }

  tag(o: SimObject, tag: string): void {
    if (!this.store.addTag(o, tag)) {
      throw new SimError(422, `Resource ${o.identifier} is already tagged "${tag}".`, { tag: 'Already tagged.' });
    }
    o.updatedAt = Date.now();
    this.onChange();
  }

  untag(o: SimObject, tag: string): void {
    if (!this.store.removeTag(o, tag)) throw new SimError(404, `Resource ${o.identifier} is not tagged "${tag}".`);
    o.updatedAt = Date.now();
    this.onChange();
  }

  // --- admin ------------------------------------------------------------------------------------------------

  seed(input: SeedInput): SimObject {
    const force = input.force === true;
    const id = input.identifier ?? this.newIdentifier();
    if (!force && !ID_PATTERN.test(id)) {
      throw new SimError(422, 'Validation failed.', { identifier: 'Must be 32 lowercase hex characters.' });
    }
    if (id === '' || id.includes('/')) throw new SimError(422, 'Validation failed.', { identifier: 'Invalid identifier.' });
    if (this.store.byId.has(id)) throw new SimError(409, `Object ${id} already exists.`);
    const body = { ...(input.fields ?? {}) };
    if (body.name === undefined && input.name !== undefined) body.name = input.name;
    const parsed = parseFields(input.kind, body, force ? { name: '', fields: {} } : null);
    if (!force) this.checkLinks(parsed);
    this.fail(parsed);
    const o = this.newObject(input.kind, id, parsed.name, parsed.fields, STATE_BY_TITLE[input.state ?? 'Deployed']);
    for (const t of input.tags ?? []) o.tags.add(t);
    this.store.insert(o);
    if (!force && isPending(o.state)) this.startDeploy(o, o.state === '4' ? 'create' : 'update');
    this.onChange();
    return o;
  }

  patch(id: string, input: PatchInput): SimObject {
    const o = this.store.getLive(id);
    if (!o) throw new SimError(404, `Object ${id} not found.`);
    const force = input.force === true;
    const body = { ...(input.fields ?? {}) };
    if (body.name === undefined && input.name !== undefined) body.name = input.name;
    const parsed = parseFields(o.kind, body, o);
    if (!force) this.checkLinks(parsed);
    this.fail(parsed);
    this.store.setFields(o, parsed.name, parsed.fields);
    if (input.tags) {
      for (const t of [...o.tags]) this.store.removeTag(o, t);
      for (const t of input.tags) this.store.addTag(o, t);
    }
    if (input.state) {
      this.cancelTimer(o);
      o.pendingResult = null;
      o.state = STATE_BY_TITLE[input.state];
      if (!force && isPending(o.state)) this.startDeploy(o, o.state === '4' ? 'create' : 'update');
    }
    o.updatedAt = Date.now();
    this.onChange();
    return o;
  }

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
    this.model = structuredClone(this.baseline);
    this.routesRe = null;
    this.ids.reseed(this.config.seed, STREAM_IDS);
    this.faultPrng.reseed(this.config.seed, STREAM_FAULTS);
    this.deployPrng.reseed(this.config.seed, STREAM_DEPLOY);
    this.onChange();
  }

  cancelAll(): void {
    for (const o of this.store.byId.values()) this.cancelTimer(o);
  }

  adminView(o: SimObject): AdminObject {
    return {
      kind: o.kind,
      identifier: o.identifier,
      name: o.name,
      state: STATES[o.state].title,
      tags: [...o.tags],
      fields: { name: o.name, ...o.fields },
      createdAt: new Date(o.createdAt).toISOString(),
      updatedAt: new Date(o.updatedAt).toISOString(),
      deployMs: o.deployMs,
      deployStartedAt: iso(o.deployStartedAt),
      deployedAt: iso(o.deployedAt),
      deleting: o.deleting,
      deleteMs: o.deleteMs,
    };
  }

  objects(): AdminObject[] {
    return [...this.store.byId.values()].map((o) => this.adminView(o));
  }
}
