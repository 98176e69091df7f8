/**
 * Heartbeats for Engine activities. A ticker proves the worker is alive while requests run (a killed worker's
 * attempt is retried after the heartbeat timeout instead of the whole start-to-close timeout), and it always
 * re-sends the latest progress details: Temporal hands the last details to the next attempt, which resumes from
 * them, and a bare heartbeat would overwrite them.
 */
import { Context } from '@temporalio/activity';

/** Beat at least this often; ENGINE_CALL's heartbeat timeout (workflows/options.ts) is a few times longer. */
export const HEARTBEAT_EVERY_MS = 5_000;

export class Heartbeat<D> {
  #details: D | undefined;
  readonly #ctx: Context | null;
  #timer: NodeJS.Timeout | null = null;

  constructor() {
    this.#ctx = currentContext();
    this.#details = this.#ctx?.info.heartbeatDetails as D | undefined;
  }

  /** What the previous attempt recorded, if any. */
  get previous(): D | undefined {
    return this.#ctx?.info.heartbeatDetails as D | undefined;
  }

  /** Records progress and sends it (Temporal throttles what reaches the server; the last details always do). */
  record(details: D): void {
    this.#details = details;
    this.#ctx?.heartbeat(details);
  }

  start(): this {
    if (this.#ctx && !this.#timer) {
      this.#timer = setInterval(() => this.#ctx?.heartbeat(this.#details), HEARTBEAT_EVERY_MS);
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
