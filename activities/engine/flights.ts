/**
 * Identical reads joined, never older than the call: a read of `key` joins another only when that other has not
 * started yet, so every caller gets an answer read entirely after it asked, exactly as if it had sent its own.
 *
 * Why: when many services on one load balancer are applied at once, each group of new Backends or Frontends lists
 * every object of its kind on that load balancer first (the look-alike check of activities/realize.ts), and such a
 * list grows with the load balancer: at 1000 services, 20 pages per list, and the apply's Engine requests grew with
 * the square of the fleet (docs/scaling.md). Joined, the lists of one kind and parent cost at most two listings at a
 * time (the one running, the one waiting for it) however many groups ask.
 */
export class FreshFlights<T> {
  readonly #running = new Map<string, Promise<T>>();
  readonly #waiting = new Map<string, Promise<T>>();

  /** `read()`'s answer, or the answer of an identical read that starts after this call. */
  run(key: string, read: () => Promise<T>): Promise<T> {
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

  #start(key: string, read: () => Promise<T>): Promise<T> {
    const p = read();
    this.#running.set(key, p);
    const done = () => {
      if (this.#running.get(key) === p) this.#running.delete(key);
    };
    p.then(done, done);
    return p;
  }
}
