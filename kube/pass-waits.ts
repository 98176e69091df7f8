/**
 * The waits of lbaas kube for the passes it started: how it learns that a Service's pass (or teardown) has finished
 * without holding a sync slot, and without one open Temporal poll per Service.
 *
 * Each wait is a series of turns. A turn is one poll for the pass's outcome (the update's result) that lasts at most
 * TURN_MS; a turn that ends without an outcome puts the wait at the back of the line. At most MAX_OPEN_TURNS turns run
 * at once, oldest wait first. Passes finish roughly in the order they were applied (the workers take their tasks in
 * that order), so the oldest waits are the ones most likely to be answered next; a pass that runs long (an Engine
 * retrying, a load balancer deploying for minutes) gives its place up after one turn instead of holding it.
 *
 * Why not one open poll per Service, as before: a Temporal update poll is a long poll that the server ends without
 * an outcome after about 20 s and the client sends again. With 1,000 Services applied at once that was ~8 polls per
 * Service (7,943 at 1,000) and 1,000 open polls at any time, and the whole apply ran at 0.79-0.86x the services/min
 * of the same fleet applied through `lbaas apply`, whose waits are 32 at a time (bench/fleet.ts); bounded, lbaas kube
 * was faster than that fleet (docs/benchmarks.md, "Kubernetes at cluster scale").
 *
 * The cost: when more than MAX_OPEN_TURNS passes all run longer than a turn, a finished pass can wait for its turn:
 * at most (waits ahead of it / MAX_OPEN_TURNS) turns. docs/kubernetes.md says so.
 */

/** Turns running at once: as many as the fleet's client keeps waits in flight (bench/fleet.ts). */
export const MAX_OPEN_TURNS = 32;
/**
 * The longest one turn polls: the server's own long-poll expiry (about 20 s), so a turn is one poll request and a
 * wait that gives its place up has waited as long as one unanswered poll would have anyway.
 */
export const TURN_MS = 20_000;

/** One turn: the outcome, or null when the turn ended (its deadline passed) before the pass had finished. */
export type Turn<T> = (withinMs: number) => Promise<T | null>;

interface Entry<T> {
  turn: Turn<T>;
  /** Still wanted: false once the wait was replaced or dropped (a newer apply, a delete, leadership lost). */
  live: () => boolean;
  settle: (r: { ok: true; value: T } | { ok: false; error: unknown }) => void;
}

export class PassWaits {
  readonly #line: Entry<unknown>[] = [];
  #open = 0;

  constructor(
    readonly maxOpen = MAX_OPEN_TURNS,
    readonly turnMs = TURN_MS,
  ) {
    if (!Number.isInteger(maxOpen) || maxOpen < 1) throw new Error(`PassWaits: maxOpen must be an integer >= 1, got ${maxOpen}`);
    if (!(turnMs > 0)) throw new Error(`PassWaits: turnMs must be > 0, got ${turnMs}`);
  }

  /** Waits in line or in a turn. */
  get size(): number {
    return this.#line.length + this.#open;
  }

  /** Turns running now. */
  get open(): number {
    return this.#open;
  }

  /**
   * Queues a wait: its turns run until one answers (settle with the value) or fails (settle with the error). A wait
   * that is no longer `live` when its turn comes is dropped without a turn and never settled.
   */
  add<T>(turn: Turn<T>, live: () => boolean, settle: Entry<T>['settle']): void {
    this.#line.push({ turn, live, settle } as Entry<unknown>);
    this.#next();
  }

  /** Drops every wait in line (leadership lost, stopping); turns running end on their own and are not settled again. */
  clear(): void {
    this.#line.length = 0;
  }

  #next(): void {
    while (this.#open < this.maxOpen && this.#line.length > 0) {
      const e = this.#line.shift() as Entry<unknown>;
      if (!e.live()) continue;
      this.#open++;
      void this.#run(e);
    }
  }

  async #run(e: Entry<unknown>): Promise<void> {
    let answer: { ok: true; value: unknown } | { ok: false; error: unknown } | null;
    try {
      const value = await e.turn(this.turnMs);
      answer = value === null ? null : { ok: true, value };
    } catch (error) {
      answer = { ok: false, error };
    }
    this.#open--;
    if (answer === null) {
      if (e.live()) this.#line.push(e);
    } else if (e.live()) {
      e.settle(answer);
    }
    this.#next();
  }
}
