/**
 * How long the Engine takes to deploy a new object, learned per kind by the worker from what it saw, and the readiness
 * poll schedule aimed at it.
 *
 * Why: polling from the first second costs about six GETs per object on deploys of 1-3 s (docs/benchmarks.md), and
 * Engine requests are what a token's budget is spent on. Knowing the distribution of deploy times, the worker polls
 * where the deploy is likely to have finished: first at the AIM quantile, then at quantiles that each halve the
 * probability still outstanding (p = 1 - (1 - AIM) / 2^k), so a deploy costs about 1 + 2 (1 - AIM) GETs on average
 * whatever its scale, and the slack after a deploy finishes shrinks as the deploy runs later.
 *
 * A quick deploy is still noticed quickly: a deploy that was ready at the first poll is recorded as having taken half
 * the time to it (the middle of what the polls can tell), so deploys that become faster pull the aim down by about
 * half per median's worth of samples until the polls catch up with them. Before a kind has MIN_SAMPLES observations
 * the prior applies: today's fast schedule (PRIOR_FIRST_MS, x PRIOR_BACKOFF up to MAX_GAP_MS), which notices any
 * deploy within a fraction of a second and measures it closely.
 *
 * Not every deploy is worth the same: a Backend's Frontend and Servers, a Frontend's Binds, wait for it, so its slack
 * is paid by everything under it, while a Bind's or a Server's slack only counts when it is the last deploy of its
 * load balancer. Deploys of kinds other objects are created under are *watched*: polled from a low quantile of their
 * kind (WATCH_FIRST) at a steady gap of one WATCH_STEPS-th of the kind's spread, which cuts the slack along a chain by
 * about three quarters for a few more GETs on a quarter of the objects (docs/benchmarks.md, `unwatched`).
 *
 * Memory is bounded: the last SAMPLES_PER_KIND deploy times per kind (a ring), four kinds.
 */
import { KIND_DEFINITIONS, KINDS, type Kind } from '../domain';

/**
 * Samples kept per kind. 64 resolve the quantiles the schedule uses (down to 1 - (1 - AIM)/8) from at least four
 * samples beyond them, and follow a change of the Engine's pace within 64 deploys; 4 kinds x 64 numbers per worker.
 */
export const SAMPLES_PER_KIND = 64;
/** Below this many samples of a kind, the prior schedule: eight give a median that one outlier cannot move far. */
export const MIN_SAMPLES = 8;
/**
 * The quantile of the first poll. 0.5: the median deploy is seen by one GET, one in two needs more (about two GETs
 * per object on average); lower aims trade GETs for less slack, higher ones the reverse (the bench measures both).
 */
export const DEFAULT_AIM = 0.5;
/** Polls are never closer than this: below it, a GET's own round trip is a large part of the gap. */
export const MIN_GAP_MS = 100;
/**
 * Nor further apart than this, once past the first poll: it bounds the slack of a deploy that runs longer than the
 * worker has seen (the schedule then polls at this pace), as today's schedule does.
 */
export const MAX_GAP_MS = 500;
/** How far past the largest ready-by time seen the sure schedule polls first (DeployTimes.sureSchedule): a quarter. */
export const SURE_MARGIN = 0.25;
/** The prior: the first poll this long after the create, then gaps growing by PRIOR_BACKOFF up to MAX_GAP_MS. */
export const PRIOR_FIRST_MS = 250;
export const PRIOR_BACKOFF = 1.25;
/** The quantile of a watched deploy's first poll: one in ten is ready before it. */
export const WATCH_FIRST = 0.1;
/**
 * A watched deploy is polled every (q(1 - WATCH_FIRST) - q(WATCH_FIRST)) / WATCH_STEPS ms: on deploys spread evenly
 * over 1-3 s, every 200 ms, about five GETs per deploy and 0.1 s of slack where the median-aimed schedule has two
 * GETs and 0.38 s. Scaled by the spread, the cost in GETs is the same whatever the Engine's pace.
 */
export const WATCH_STEPS = 8;

/**
 * The kinds other objects are created under (some kind's `dependsOn` links to them): Backends and Frontends. Their
 * deploys are watched.
 */
export const WATCHED_KINDS: ReadonlySet<Kind> = new Set(
  KINDS.flatMap((k) => {
    const def = KIND_DEFINITIONS[k];
    const to = def.dependsOn === null ? undefined : (def.fields as Record<string, { to?: string }>)[def.dependsOn]?.to;
    return to !== undefined && to !== 'loadbalancer' ? [to as Kind] : [];
  }),
);

export interface DeployTimesOptions {
  /**
   * Learn deploy times and aim the polls at them (default true); false keeps every deploy on the prior schedule, the
   * fixed one of before (`npm run bench -- --core` measures what learning buys against it).
   */
  learn?: boolean;
  aim?: number;
  /** Watch the deploys of WATCHED_KINDS (default true); false polls every kind on the aimed schedule (the bench's baseline). */
  watch?: boolean;
  samplesPerKind?: number;
  minSamples?: number;
}

/** The poll schedule of one deploy: offsets in ms from the create, one after another. */
export interface PollSchedule {
  /** When to poll next, given when the previous poll was (null before the first). */
  next(previousAtMs: number | null): number;
  /** Whether the schedule is learned (false: the prior). */
  readonly learned: boolean;
}

export class DeployTimes {
  readonly aim: number;
  readonly watch: boolean;
  readonly learn: boolean;
  readonly #size: number;
  readonly #min: number;
  readonly #rings = new Map<Kind, { values: number[]; next: number }>();
  /** The same deploys' ready-by times (the poll that found each ready): an upper bound of each deploy. */
  readonly #readyBy = new Map<Kind, { values: number[]; next: number }>();

  constructor(o: DeployTimesOptions = {}) {
    this.aim = o.aim ?? DEFAULT_AIM;
    this.watch = o.watch ?? true;
    this.learn = o.learn ?? true;
    this.#size = o.samplesPerKind ?? SAMPLES_PER_KIND;
    this.#min = o.minSamples ?? MIN_SAMPLES;
    if (!(this.aim > 0 && this.aim < 1)) throw new RangeError(`aim: expected a quantile between 0 and 1 (exclusive), got ${this.aim}`);
    if (!(Number.isInteger(this.#size) && this.#size >= 1)) throw new RangeError(`samplesPerKind: expected an integer >= 1, got ${this.#size}`);
  }

  /**
   * Records one observed deploy: it was not ready at `notReadyAtMs` (0 when the first poll found it ready) and ready at
   * `readyAtMs`, both from the create. The deploy ended in between; the middle is taken.
   */
  record(kind: Kind, notReadyAtMs: number, readyAtMs: number): void {
    const ms = Math.max(0, (Math.max(0, notReadyAtMs) + Math.max(notReadyAtMs, readyAtMs)) / 2);
    this.#push(this.#rings, kind, ms);
    this.#push(this.#readyBy, kind, Math.max(0, notReadyAtMs, readyAtMs));
  }

  #push(rings: Map<Kind, { values: number[]; next: number }>, kind: Kind, ms: number): void {
    let ring = rings.get(kind);
    if (!ring) rings.set(kind, (ring = { values: [], next: 0 }));
    if (ring.values.length < this.#size) ring.values.push(ms);
    else ring.values[ring.next] = ms;
    ring.next = (ring.next + 1) % this.#size;
  }

  /**
   * The schedule of a deploy nothing waits on (a pool-delta pass's Servers, workflows/reconcile-delta.ts): one GET
   * is the aim, not the slack. The first poll comes when the deploys seen so far were all over (the largest of their
   * ready-by times, the polls that found them ready, which bound them from above) plus SURE_MARGIN of it, for a deploy
   * a little slower than any of the last SAMPLES_PER_KIND (one in 1,200 Servers needed a second GET without it, at
   * deploys of 100-300 ms); after it, the prior's gaps. Before MIN_SAMPLES deploys of the kind, the prior schedule.
   */
  sureSchedule(kind: Kind): PollSchedule {
    if (!this.learn) return priorSchedule();
    const sorted = [...(this.#readyBy.get(kind)?.values ?? [])].sort((a, b) => a - b);
    if (sorted.length < this.#min) return priorSchedule();
    const largest = sorted[sorted.length - 1] as number;
    const first = Math.max(MIN_GAP_MS, largest + Math.max(MIN_GAP_MS, Math.round(largest * SURE_MARGIN)));
    let gap = MIN_GAP_MS;
    return {
      learned: true,
      next(previous) {
        if (previous === null) return first;
        const at = previous + gap;
        gap = Math.min(MAX_GAP_MS, Math.round(gap * PRIOR_BACKOFF));
        return at;
      },
    };
  }

  /** The samples of a kind, sorted ascending. */
  samples(kind: Kind): number[] {
    return [...(this.#rings.get(kind)?.values ?? [])].sort((a, b) => a - b);
  }

  /** The schedule for a new deploy of `kind`, from what was seen so far: watched for WATCHED_KINDS (unless `watch` is off). */
  schedule(kind: Kind): PollSchedule {
    if (!this.learn) return priorSchedule();
    const sorted = this.samples(kind);
    if (sorted.length < this.#min) return priorSchedule();
    return this.watch && WATCHED_KINDS.has(kind) ? watchedSchedule(sorted) : aimedSchedule(sorted, this.aim);
  }
}

export function priorSchedule(): PollSchedule {
  let gap = PRIOR_FIRST_MS;
  return {
    learned: false,
    next(previous) {
      if (previous === null) return PRIOR_FIRST_MS;
      const at = previous + gap;
      gap = Math.min(MAX_GAP_MS, Math.round(gap * PRIOR_BACKOFF));
      return at;
    },
  };
}

/** The q-quantile of sorted samples (nearest rank; q in [0, 1]). */
export function quantileOf(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) throw new RangeError('no samples');
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i] as number;
}

/**
 * Polls at the quantiles AIM, then 1 - (1 - AIM)/2, 1 - (1 - AIM)/4, ... gaps kept within [MIN_GAP_MS, MAX_GAP_MS].
 * Past the largest sample (a deploy longer than any seen) the gaps grow from MIN_GAP_MS by PRIOR_BACKOFF up to
 * MAX_GAP_MS: such a deploy is no longer near its expected end, and its time, once seen, teaches the estimator.
 */
export function aimedSchedule(sorted: readonly number[], aim: number): PollSchedule {
  let k = 0;
  let beyond = MIN_GAP_MS;
  const largest = sorted[sorted.length - 1] as number;
  return {
    learned: true,
    next(previous) {
      const target = quantileOf(sorted, 1 - (1 - aim) / 2 ** k);
      k++;
      if (previous === null) return Math.max(MIN_GAP_MS, target);
      if (previous >= largest) {
        const at = previous + beyond;
        beyond = Math.min(MAX_GAP_MS, Math.round(beyond * PRIOR_BACKOFF));
        return at;
      }
      return Math.min(previous + MAX_GAP_MS, Math.max(previous + MIN_GAP_MS, target));
    },
  };
}

/**
 * Polls a watched deploy at the WATCH_FIRST quantile, then every spread / WATCH_STEPS (within [MIN_GAP_MS,
 * MAX_GAP_MS]) up to the largest sample; past it, gaps growing by PRIOR_BACKOFF up to MAX_GAP_MS, as the aimed
 * schedule does.
 */
export function watchedSchedule(sorted: readonly number[]): PollSchedule {
  const gap = Math.min(MAX_GAP_MS, Math.max(MIN_GAP_MS, Math.round((quantileOf(sorted, 1 - WATCH_FIRST) - quantileOf(sorted, WATCH_FIRST)) / WATCH_STEPS)));
  const largest = sorted[sorted.length - 1] as number;
  let beyond = gap;
  return {
    learned: true,
    next(previous) {
      if (previous === null) return Math.max(MIN_GAP_MS, quantileOf(sorted, WATCH_FIRST));
      if (previous < largest) return previous + gap;
      const at = previous + beyond;
      beyond = Math.min(MAX_GAP_MS, Math.round(beyond * PRIOR_BACKOFF));
      return at;
    },
  };
}
