/**
 * The seeded draws: request faults, deploy and delete delays with their outcomes, tag index lag. Each family has
 * its own PRNG stream, so switching one on does not shift the others' sequences (the same seed and the same
 * requests give the same identifiers, delays and faults, whatever else the fault model says).
 *
 * A deploy's delay and outcome are drawn for the object itself: from the seed, the object's key (its kind, name and
 * load balancer) and how many deploys of that key came before. They do not depend on the order in which objects were created, so two
 * builds of the orchestrator that create the same objects in another order meet the same deploy delays (the
 * benchmark's lower bound is computed from them: bench/bound.ts).
 */
import type { FaultModel } from './faults';
import { Prng } from './prng';

export const STREAM_IDS = 0;
const STREAM_FAULTS = 1;
const STREAM_DEPLOY = 2;
/** Added with the realistic profile; a stream of its own keeps the older streams' sequences unchanged. */
const STREAM_TAG_LAG = 3;

export class Draws {
  private readonly faultPrng: Prng;
  private readonly deployPrng: Prng;
  private seed: number;
  /** Deploys drawn so far per kind and name. */
  private readonly deploysOf = new Map<string, number>();
  private readonly lagPrng: Prng;
  private routesRe: RegExp | null = null;

  constructor(
    seed: number,
    private model: FaultModel,
  ) {
    this.seed = seed;
    this.faultPrng = new Prng(seed, STREAM_FAULTS);
    this.deployPrng = new Prng(seed, STREAM_DEPLOY);
    this.lagPrng = new Prng(seed, STREAM_TAG_LAG);
  }

  /** Uses a new model from now on (its `routes` already validated). */
  use(model: FaultModel): void {
    this.model = model;
    this.routesRe = model.routes ? new RegExp(model.routes) : null;
  }

  reseed(seed: number): void {
    this.seed = seed;
    this.deploysOf.clear();
    this.faultPrng.reseed(seed, STREAM_FAULTS);
    this.deployPrng.reseed(seed, STREAM_DEPLOY);
    this.lagPrng.reseed(seed, STREAM_TAG_LAG);
  }

  latency(): number {
    const { min, max } = this.model.latencyMs;
    return max > 0 ? this.faultPrng.int(min, max) : 0;
  }

  private routeMatches(method: string, path: string): boolean {
    return !this.routesRe || this.routesRe.test(`${method} ${path}`);
  }

  /** Before applying a request: a 5xx status, 429, or null to go ahead. */
  requestFault(method: string, path: string): number | null {
    const r = this.model.rates;
    if ((r.serverError <= 0 && r.rateLimited <= 0) || !this.routeMatches(method, path)) return null;
    if (this.faultPrng.chance(r.serverError)) return [500, 502, 503][this.faultPrng.int(0, 2)] ?? 500;
    if (this.faultPrng.chance(r.rateLimited)) return 429;
    return null;
  }

  /** After applying a request: lose its answer? */
  drop(method: string, path: string): '502' | 'reset' | null {
    const rate = this.model.rates.dropAfterCommit;
    if (rate <= 0 || !this.routeMatches(method, path) || !this.faultPrng.chance(rate)) return null;
    if (this.model.dropMode === 'mixed') return this.faultPrng.chance(0.5) ? 'reset' : '502';
    return this.model.dropMode;
  }

  /** The delay and outcome of the next deploy of the object known by `key` (simulator/sim.ts deployKey). */
  deploy(key: string): { ms: number; failed: boolean } {
    const { min, max } = this.model.deployMs;
    const nth = this.deploysOf.get(key) ?? 0;
    this.deploysOf.set(key, nth + 1);
    const prng = new Prng(this.seed ^ fnv1a(`${key}\u0000${nth}`), STREAM_DEPLOY);
    const ms = prng.int(min, max);
    return { ms, failed: prng.chance(this.model.rates.deploymentError) };
  }

  /** How long a deleted object is deprovisioned (0: gone at once; no draw then). */
  deleteDelay(): number {
    const { min, max } = this.model.deleteMs;
    return max > 0 ? this.deployPrng.int(min, max) : 0;
  }

  /** How long the tag index lags behind one tag or untag (0: no lag; no draw then). */
  tagLag(): number {
    const { min, max } = this.model.tagLagMs;
    return max > 0 ? this.lagPrng.int(min, max) : 0;
  }
}

/** FNV-1a, 32 bits: mixes an object's key into the seed of its own deploy draws. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
