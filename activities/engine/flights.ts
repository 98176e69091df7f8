/**
 * Identical reads joined. By default never older than the call: a read of `key` joins another only when that other
 * has not started yet, so every caller gets an answer read entirely after it asked, exactly as if it had sent its own.
 * A caller that only needs an answer read before some later moment of its own (the look-alike list before a create,
 * activities/realize.ts) may instead accept a read that started at most `reuseMs` before its call.
 *
 * Why: when many services on one load balancer are applied at once, each group of new Backends or Frontends lists
 * every object of its kind on that load balancer first (the look-alike check of activities/realize.ts), and such a
 * list grows with the load balancer: at 1000 services, 20 pages per list, and the apply's Engine requests grew with
 * the square of the fleet (docs/scaling.md). Joined, the lists of one kind and parent cost at most two listings at a
 * time (the one running, the one waiting for it) however many groups ask; reused for `reuseMs`, one listing per
 * `reuseMs` at most.
 */
export class FreshFlights<T> {
  readonly #running = new Map<string, Promise<T>>();
  readonly #waiting = new Map<string, Promise<T>>();
  /** The newest read of each key that started less than `reuseMs` ago and has not failed. */
  readonly #recent = new Map<string, { startedAt: number; answer: Promise<T> }>();

  /**
   * @param reuseMs how old a read may be (counted from its start) for callers that accept a recent one; 0: none do.
   * @param now the clock (tests).
   */
  constructor(
    readonly reuseMs = 0,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * `read()`'s answer, or the answer of an identical read that starts after this call; with `recent`, also that of an
   * identical read that started at most `reuseMs` before it.
   */
  run(key: string, read: () => Promise<T>, o: { recent?: boolean } = {}): Promise<T> {
    if (o.recent) {
      const recent = this.#recent.get(key);
      if (recent && this.now() - recent.startedAt <= this.reuseMs) return recent.answer;
    }
    const waiting = this.#waiting.get(key);
    if (waiting) return waiting;
    const running = this.#running.get(key);
    if (!running) return this.#start(key, read);
    // One is on its way, but it started before this call: read again after it, for this caller and whoever else
    // asks meanwhile.
    const next = running
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        this.#waiting.delete(key);
        return this.#start(key, read);
      });
    this.#waiting.set(key, next);
    return next;
  }

  /** Reads running or waiting (for tests and metrics). */
  get size(): number {
    return this.#running.size + this.#waiting.size;
  }

  /** Answers kept for callers that accept a recent one (for tests). */
  get kept(): number {
    return this.#recent.size;
  }

  #start(key: string, read: () => Promise<T>): Promise<T> {
    const startedAt = this.now();
    const p = read();
    this.#running.set(key, p);
    const entry = { startedAt, answer: p };
    const forget = () => {
      if (this.#recent.get(key) === entry) this.#recent.delete(key);
    };
    if (this.reuseMs > 0) {
      this.#recent.set(key, entry);
      // Kept no longer than it can be used: a load balancer's lists are not held after its burst of creates.
      setTimeout(forget, this.reuseMs).unref();
    }
    const done = () => {
      if (this.#running.get(key) === p) this.#running.delete(key);
    };
    p.then(done, () => {
      done();
      // A failed read is never an answer to a later caller.
      forget();
    });
    return p;
  }
}
