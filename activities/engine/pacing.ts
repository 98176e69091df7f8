/**
 * The Engine request budget of one worker: every request the Engine client sends waits here first.
 *
 * Two mechanisms, one for each thing the Engine tells us:
 * - A token bucket (`requestsPerSecond`, `burst`): the budget an operator grants the worker. Requests queue for a
 *   token in arrival order, so a busy worker sends at the budget instead of in bursts the Engine will refuse.
 *   With `initialRequestsPerSecond` the budget is adaptive (a worker's default): the bucket starts at that rate and,
 *   while requests queue for it and no 429 has come, its rate doubles every `doublingMs` up to `requestsPerSecond`,
 *   the ceiling (the slow start of TCP, applied to a request rate). The first 429 ends the growth and halves the rate,
 *   which holds for `recoveryMs` and then grows only by `increasePerSecond` (the growth overshot by up to twice what
 *   the Engine accepts); from then on the rate is the 429 handling's, still under the ceiling.
 * - A shared backoff on 429: the Engine limits per token, not per request, so one 429 pauses everything this client
 *   sends (not just the request that got it) and halves the bucket's rate (multiplicative decrease). Without
 *   Retry-After the pause is capped exponential with full jitter (`backoffStartMs` doubling to `backoffCapMs`,
 *   each pause drawn uniformly from 0 to that bound, so workers sharing a token do not retry in step); with
 *   Retry-After the pause is what the Engine asked for. While no 429 comes back the rate returns to the rate the 429
 *   came at within `recoveryMs`, along a cubic curve that is steep at first and flat near that rate, then grows by
 *   `increasePerSecond` each second up to the granted budget: the worker slows down on 429 and speeds up again when
 *   they stop (the window growth of TCP CUBIC, RFC 9438, applied to a request rate).
 *
 * Only 429s answered to requests sent after the last decrease count towards the next one: a burst of requests in
 * flight when the first 429 arrives is one signal, not twenty, and does not drive the rate to the floor.
 *
 * Waiting here is pacing, not retrying: the request is sent once. A 429 still fails its request, and the caller
 * (Temporal, through the activities) retries after `retryDelayMs()`.
 */
import { setTimeout as delay } from 'node:timers/promises';

/**
 * Where the adaptive budget a worker gets by default starts: 10 requests/s. The Engine's per-token limit is not
 * published; 10/s is an account-friendly first rate, and a worker with little to do never goes beyond it.
 */
export const DEFAULT_INITIAL_REQUESTS_PER_SECOND = 10;
/**
 * The adaptive budget's ceiling: 1,000 requests/s. A fleet applied at once (1,000 services on two load balancers,
 * about 170 requests each) needs about 700 requests/s to converge 250 services a minute, so a lower ceiling would make
 * a default worker the bottleneck on an Engine that grants more (at 50/s the same fleet takes an hour). The growth
 * still stops at the Engine's first 429 and halves, so an Engine that limits the token lower is met within a second
 * or two of doubling, at most twice its limit; the ceiling only bounds what one worker sends to an Engine that never
 * says 429.
 */
export const DEFAULT_MAX_REQUESTS_PER_SECOND = 1_000;
/**
 * While requests queue and no 429 comes, the adaptive rate doubles every second: from 10/s past the core workload's
 * peaks (near 40/s) in about 2 s and to the ceiling in about 7 s, so a burst of work waits little; and an Engine limit below the rate is met within a second or two, at
 * most twice that limit, which the first 429 halves.
 */
export const DEFAULT_DOUBLING_MS = 1_000;
/** Requests that may go out at once after a quiet spell: 10, the number of objects one load balancer's pass creates side by side. */
export const DEFAULT_BURST = 10;
/** The first backoff bound without Retry-After: 1 s, the upstream controller's first retry delay. */
export const DEFAULT_BACKOFF_START_MS = 1_000;
/** The backoff bound stops doubling at one minute: a throttled worker still tries about once a minute. */
export const DEFAULT_BACKOFF_CAP_MS = 60_000;
/**
 * Rate gained per second beyond the rate of the last 429, once back at it: 0.1 requests/s each second. Slow on
 * purpose: above that rate each probe of the Engine's limit costs a 429, and a fast climb probes often.
 */
export const DEFAULT_INCREASE_PER_SECOND = 0.1;
/**
 * Time to climb back to the rate of the last 429: 10 s. A worker sending at its budget that meets a lone 429 (two
 * token buckets at the same rate disagree by network jitter) loses about a quarter of this times the halved rate,
 * 25 requests at 20/s, where a linear climb at 0.1/s would lose about 500 (measured: bench/budget.ts). Against an
 * Engine limit below the budget the rate stays flat just under that limit for most of these 10 s, so 429s still come
 * no more often than every 10-25 s.
 */
export const DEFAULT_RECOVERY_MS = 10_000;
/** The rate never drops below one request every two seconds, however many 429s arrive. */
export const DEFAULT_MIN_REQUESTS_PER_SECOND = 0.5;

export interface PacingOptions {
  /**
   * Granted budget in requests per second; `Infinity` (the default) sends without a bucket until the first 429.
   * With `initialRequestsPerSecond`, the ceiling the adaptive budget grows to.
   */
  requestsPerSecond?: number;
  /** Makes the budget adaptive: the rate it starts at (at most `requestsPerSecond`). Absent: a fixed budget. */
  initialRequestsPerSecond?: number;
  /** How fast the adaptive rate grows while requests queue and no 429 came: it doubles every this many ms. */
  doublingMs?: number;
  /** Requests that may go out at once after a quiet spell; default `DEFAULT_BURST`. */
  burst?: number;
  backoffStartMs?: number;
  backoffCapMs?: number;
  increasePerSecond?: number;
  /** Time to climb back to the rate of the last 429; default `DEFAULT_RECOVERY_MS`. */
  recoveryMs?: number;
  minRequestsPerSecond?: number;
  /** For tests: the clock, the sleep and the jitter source. */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

/** What happened on a 429, for metrics and logs. */
export interface ThrottleEvent {
  /** Whether this 429 started a new backoff (false: it answered a request sent before the last one began). */
  escalated: boolean;
  /** How long everything now waits before the next request, in ms. */
  pauseMs: number;
  /** How much this 429 lengthened the time spent backing off, in ms (0 when it fell inside a pause in force). */
  addedBackoffMs: number;
  /** The bucket's rate after the decrease. */
  requestsPerSecond: number;
  /** Retry-After of the answer in ms, when it had one. */
  retryAfterMs?: number;
}

export interface PacingStats {
  /** 429s answered to this client. */
  rateLimited: number;
  /** Wall-clock time during which a backoff pause was in force, in ms (overlapping pauses counted once). */
  backoffMs: number;
  /** The bucket's current rate; `Infinity` while unbounded. */
  requestsPerSecond: number;
  /** Whether a backoff pause is in force now. */
  backingOff: boolean;
}

function positive(name: string, value: number, allowInfinity = false): number {
  if (!(value > 0) || (!allowInfinity && !Number.isFinite(value))) throw new TypeError(`${name} must be a positive number, got ${value}`);
  return value;
}

/** Send times kept to estimate the current rate when no budget is set (the rate to halve on a first 429). */
const RATE_WINDOW_MS = 2_000;

export class RequestPacer {
  readonly #max: number;
  readonly #burst: number;
  readonly #start: number;
  readonly #cap: number;
  readonly #increase: number;
  readonly #recovery: number;
  readonly #min: number;
  /** The adaptive budget's doubling time; null for a fixed budget. */
  readonly #doubling: number | null;
  readonly #now: () => number;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #random: () => number;
  readonly #listeners: ((e: ThrottleEvent) => void)[] = [];

  #rate: number;
  #tokens: number;
  #refilledAt: number;
  #pauseUntil = 0;
  /** Incremented on every decrease; a request carries the epoch it was sent in. */
  #epoch = 0;
  /** Consecutive escalations without a success in between: the exponent of the backoff bound. */
  #streak = 0;
  #rateLimited = 0;
  #backoffMs = 0;
  #recent: number[] = [];
  /**
   * Since when the request at the head of the queue waits for a token; null while none does. The adaptive rate grows
   * only during such waits: a worker with little to do keeps its rate, so a later burst does not meet the Engine at a
   * rate nothing has tried.
   */
  #waitingSince: number | null = null;
  /** The rate of the last decrease before and after halving, and when its climb back started; null before any 429. */
  #climb: { from: number; to: number; since: number } | null = null;
  #queue: Promise<void> = Promise.resolve();

  constructor(options: PacingOptions = {}) {
    this.#max = positive('requestsPerSecond', options.requestsPerSecond ?? Infinity, true);
    this.#burst = positive('burst', options.burst ?? DEFAULT_BURST);
    this.#start = positive('backoffStartMs', options.backoffStartMs ?? DEFAULT_BACKOFF_START_MS);
    this.#cap = positive('backoffCapMs', options.backoffCapMs ?? DEFAULT_BACKOFF_CAP_MS);
    this.#increase = positive('increasePerSecond', options.increasePerSecond ?? DEFAULT_INCREASE_PER_SECOND);
    this.#recovery = positive('recoveryMs', options.recoveryMs ?? DEFAULT_RECOVERY_MS);
    this.#min = Math.min(positive('minRequestsPerSecond', options.minRequestsPerSecond ?? DEFAULT_MIN_REQUESTS_PER_SECOND), this.#max);
    this.#now = options.now ?? (() => performance.now());
    this.#sleep = options.sleep ?? ((ms) => delay(ms));
    this.#random = options.random ?? Math.random;
    const initial = options.initialRequestsPerSecond;
    if (initial !== undefined && positive('initialRequestsPerSecond', initial) > this.#max) {
      throw new TypeError(`initialRequestsPerSecond must not exceed requestsPerSecond (${this.#max}), got ${initial}`);
    }
    this.#doubling = initial === undefined ? null : positive('doublingMs', options.doublingMs ?? DEFAULT_DOUBLING_MS);
    this.#rate = initial ?? this.#max;
    this.#tokens = this.#burst;
    this.#refilledAt = this.#now();
  }

  /** Called on every 429 (after the pacer has reacted). Listener exceptions are ignored. */
  onThrottle(listener: (e: ThrottleEvent) => void): void {
    this.#listeners.push(listener);
  }

  /**
   * Waits for the request's turn: after any backoff pause and, when the rate is bounded, for a token. Turns are
   * handed out in call order. Resolves to the epoch to pass to `settle` with the answer.
   */
  acquire(): Promise<number> {
    const turn = this.#queue.then(() => this.#waitTurn());
    this.#queue = turn.then(
      () => undefined,
      () => undefined,
    );
    return turn;
  }

  async #waitTurn(): Promise<number> {
    for (;;) {
      const now = this.#now();
      this.#refill(now);
      if (now < this.#pauseUntil) {
        await this.#sleep(this.#pauseUntil - now);
        continue;
      }
      if (!Number.isFinite(this.#rate) || this.#tokens >= 1) {
        if (Number.isFinite(this.#rate)) this.#tokens -= 1;
        this.#waitingSince = null;
        this.#noteSent(now);
        return this.#epoch;
      }
      this.#waitingSince ??= now;
      await this.#sleep(Math.ceil(((1 - this.#tokens) / this.#rate) * 1000));
    }
  }

  #noteSent(now: number): void {
    if (Number.isFinite(this.#max)) return;
    this.#recent.push(now);
    while (this.#recent.length > 0 && (this.#recent[0] as number) < now - RATE_WINDOW_MS) this.#recent.shift();
  }

  #refill(now: number): void {
    const from = this.#refilledAt;
    const elapsed = Math.max(0, now - from) / 1000;
    this.#refilledAt = now;
    if (!Number.isFinite(this.#rate)) return;
    this.#tokens = Math.min(this.#burst, this.#tokens + elapsed * this.#rate);
    const climb = this.#climb;
    if (!climb) {
      // Adaptive and no 429 yet: grow for the part of the interval during which a request waited for a token.
      const waited = this.#waitingSince === null ? 0 : now - Math.max(from, this.#waitingSince);
      if (this.#doubling !== null && waited > 0) this.#rate = Math.min(this.#max, this.#rate * 2 ** (waited / this.#doubling));
      return;
    }
    // The climb starts when the pause ends: time spent paused says nothing about what the Engine would accept.
    const t = Math.max(0, now - Math.max(climb.since, this.#pauseUntil));
    const k = this.#recovery;
    const rate = t < k ? climb.to - (climb.to - climb.from) * ((k - t) / k) ** 3 : climb.to + ((t - k) / 1000) * this.#increase;
    this.#rate = Math.min(this.#max, rate);
  }

  /**
   * Reports the answer to a request sent in `epoch`. On 429 it returns how long the caller should wait before trying
   * again (the pause now in force, at least one token's worth); otherwise 0.
   */
  settle(epoch: number, status: number | 'error', retryAfterMs?: number): number {
    const now = this.#now();
    if (status !== 429) {
      if (status !== 'error' && epoch === this.#epoch) this.#streak = 0;
      return 0;
    }
    this.#rateLimited++;
    this.#refill(now);
    const escalated = epoch === this.#epoch;
    let added = 0;
    if (escalated) {
      this.#epoch++;
      this.#streak++;
      const current = Number.isFinite(this.#rate) ? this.#rate : Math.max(this.#min * 2, (this.#recent.length * 1000) / RATE_WINDOW_MS);
      this.#rate = Math.max(this.#min, current / 2);
      // The first 429 of an adaptive budget ends a growth that doubled the rate every `doublingMs`: the rate it came
      // at may be twice what the Engine accepted, so the climb aims at the halved rate, the last one known to pass
      // (it holds there for `recoveryMs`), and probes beyond it only by `increasePerSecond`. Later 429s come at rates
      // the rate approached slowly: the climb back to them is the fixed budget's.
      const overshoot = this.#doubling !== null && this.#climb === null;
      this.#climb = { from: this.#rate, to: overshoot ? this.#rate : current, since: now };
      this.#tokens = 0;
      const bound = Math.min(this.#cap, this.#start * 2 ** (this.#streak - 1));
      const pause = retryAfterMs ?? this.#random() * bound;
      added = this.#pauseFor(now, pause);
    } else if (retryAfterMs !== undefined) {
      added = this.#pauseFor(now, retryAfterMs);
    }
    const pauseMs = Math.max(0, this.#pauseUntil - now);
    const event: ThrottleEvent = { escalated, pauseMs, addedBackoffMs: added, requestsPerSecond: this.#rate, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // Metrics must never fail an Engine call.
      }
    }
    // Measured from the same instant the pause was set: a second clock read here could shorten a Retry-After.
    return this.#retryDelayAt(now);
  }

  /** Extends the pause to `now + ms`; returns by how much the time spent backing off grew. */
  #pauseFor(now: number, ms: number): number {
    const until = now + ms;
    if (until <= this.#pauseUntil) return 0;
    const added = until - Math.max(now, this.#pauseUntil);
    this.#backoffMs += added;
    this.#pauseUntil = until;
    return added;
  }

  /** How long a request that failed with 429 should wait before it is tried again: the pause, or one token's time. */
  retryDelayMs(): number {
    return this.#retryDelayAt(this.#now());
  }

  #retryDelayAt(now: number): number {
    const token = Number.isFinite(this.#rate) ? 1000 / this.#rate : 0;
    // Whole milliseconds, rounded up, but not for floating-point noise: (t + 1000) - t can be 1000.00000000003.
    return Math.ceil(Math.max(this.#pauseUntil - now, token) - 1e-6);
  }

  stats(): PacingStats {
    const now = this.#now();
    this.#refill(now);
    return {
      rateLimited: this.#rateLimited,
      backoffMs: this.#backoffMs - Math.max(0, this.#pauseUntil - now),
      requestsPerSecond: this.#rate,
      backingOff: now < this.#pauseUntil,
    };
  }
}
