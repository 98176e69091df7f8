/**
 * Heartbeats for Engine activities. A ticker proves the worker is alive while requests run (a killed worker's
 * attempt is retried after the heartbeat timeout instead of the whole start-to-close timeout), and it always
 * re-sends the latest progress details: Temporal hands the last details to the next attempt, which resumes from
 * them, and a bare heartbeat would overwrite them.
 */
import { Context } from '@temporalio/activity';
import { isRateLimitedDetails, type RateLimitedDetails } from '../contract';

/** Beat at least this often; ENGINE_CALL's heartbeat timeout (workflows/options.ts) is a few times longer. */
export const HEARTBEAT_EVERY_MS = 5_000;

/** The progress in details as sent (bare, or wrapped while rate limited). */
function progressOf<D>(details: unknown): D | undefined {
  return (isRateLimitedDetails(details) ? details.progress : details) as D | undefined;
}

/**
 * How long one 429 keeps an activity saying "rate limited" past the pause it caused: 30 s spans the gaps between the
 * 429s of a throttled worker, so the notice does not flicker between them.
 */
export const RATE_LIMIT_HOLD_MS = 30_000;

/** Makes every activity whose Engine request is answered 429 say so on its heartbeat (see `noteRateLimited`). */
export function reportRateLimits(pacer: { onThrottle(listener: (e: { pauseMs: number }) => void): void }, now: () => number = Date.now): void {
  pacer.onThrottle((e) => noteRateLimited(now() + e.pauseMs + RATE_LIMIT_HOLD_MS));
}

/** Until when the pacer holds back each running activity's requests (set by `noteRateLimited`). */
const throttled = new WeakMap<Context, number>();
/** The heartbeat of each running activity that has one, so that a throttle notice re-sends its progress. */
const beating = new WeakMap<Context, Heartbeat<unknown>>();

/**
 * The Engine answered a request of the current activity 429 and its requests wait until `until`: the activity
 * heartbeats at once with that time (its progress kept), and keeps saying it on every beat until the time has passed.
 */
export function noteRateLimited(until: number): void {
  const ctx = currentContext();
  if (!ctx) return;
  throttled.set(ctx, Math.max(throttled.get(ctx) ?? 0, until));
  const hb = beating.get(ctx);
  if (hb) hb.beat();
  else ctx.heartbeat(detailsFor(ctx, undefined));
}

function detailsFor(ctx: Context, progress: unknown): unknown {
  const until = throttled.get(ctx);
  if (until === undefined || until <= Date.now()) return progress;
  const wrapped: RateLimitedDetails = { lbaasRateLimited: 1, engineRateLimitedUntil: until, progress };
  return wrapped;
}

export class Heartbeat<D> {
  #details: D | undefined;
  readonly #ctx: Context | null;
  #timer: NodeJS.Timeout | null = null;

  constructor() {
    this.#ctx = currentContext();
    this.#details = progressOf<D>(this.#ctx?.info.heartbeatDetails);
    if (this.#ctx) beating.set(this.#ctx, this as Heartbeat<unknown>);
  }

  /** What the previous attempt recorded, if any. */
  get previous(): D | undefined {
    return progressOf<D>(this.#ctx?.info.heartbeatDetails);
  }

  /** Records progress and sends it (Temporal throttles what reaches the server; the last details always do). */
  record(details: D): void {
    this.#details = details;
    this.beat();
  }

  /** Sends the latest progress, wrapped while the Engine throttles this activity. */
  beat(): void {
    if (this.#ctx) this.#ctx.heartbeat(detailsFor(this.#ctx, this.#details));
  }

  start(): this {
    if (this.#ctx && !this.#timer) {
      this.#timer = setInterval(() => this.beat(), HEARTBEAT_EVERY_MS);
      this.#timer.unref();
    }
    return this;
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }
}

/** Where one step of an activity keeps its progress: what the previous attempt recorded, and how to record. */
export interface ProgressSlot<D> {
  readonly previous: D | undefined;
  record(details: D): void;
}

/**
 * One heartbeat carrying the progress of several steps of one activity (the objects of a group), each in a slot of
 * its own: every beat sends all slots, so what one step recorded is never overwritten by another's.
 */
export class SharedHeartbeat<D> {
  readonly #hb = new Heartbeat<Record<string, D>>();
  readonly #current: Record<string, D> = { ...(this.#hb.previous ?? {}) };

  /**
   * The slot of one step. Its `previous` is what was recorded for the step so far, by an earlier attempt or by this
   * one (the group records the look-alikes of all its objects before any of them is created).
   */
  slot(key: string): ProgressSlot<D> {
    const current = this.#current;
    return {
      get previous() {
        return current[key];
      },
      record: (details: D) => {
        this.#current[key] = details;
        this.#hb.record({ ...this.#current });
      },
    };
  }

  start(): this {
    this.#hb.start();
    return this;
  }

  stop(): void {
    this.#hb.stop();
  }
}

/** The activity context, or null outside an activity (the benchmark's baseline calls the same code directly). */
export function currentContext(): Context | null {
  try {
    return Context.current();
  } catch {
    return null;
  }
}

/** Runs `body` with a heartbeat ticker. */
export async function withHeartbeat<D, T>(body: (hb: Heartbeat<D>) => Promise<T>): Promise<T> {
  const hb = new Heartbeat<D>().start();
  try {
    return await body(hb);
  } finally {
    hb.stop();
  }
}
