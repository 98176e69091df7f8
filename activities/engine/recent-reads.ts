/**
 * The last answer of each object's GET, with the time it was sent, so that a reconciliation round can close with the
 * state it read itself a moment ago instead of asking the Engine again (docs/architecture.md, "Closing a round").
 *
 * Why: a round watches every object it creates until the Engine answers Deployed, then observes the load balancer
 * once more to check that nothing is left to do. Without this the closing observation read each of those objects a
 * second time, a second or two after the first: on the core workload 28 of its 175 requests.
 *
 * An answer is handed out only when it was sent at or after the time the caller names (its round's start), and only
 * while nothing this client sent could have changed the object since: a PUT or DELETE of it, sent or in flight, forgets
 * it, and a GET whose answer overlaps such a write is not remembered. Bounded: the oldest answers go first.
 *
 * Two clocks meet here: the round's start is workflow time (the Temporal server's clock, when the workflow task ran),
 * a GET's send time is this worker's wall clock. They are compared as they are, so the rule holds to within the skew
 * between the two machines: a worker whose clock is behind the server's reads a few more objects again (safe), one
 * whose clock is ahead by d ms may close a round on a read sent up to d ms before the round began, of an object this
 * worker has not written since; the tag list is still fresh. With clocks kept by NTP (milliseconds) against rounds of
 * seconds that is the same window a fresh read has anyway. What the cache buys is measured by `npm run bench --
 * --core` (docs/benchmarks.md, mode `no-recent-reads`); the worker option `recentReads: false` turns it off.
 */
export class RecentReads<T> {
  readonly #reads = new Map<string, { sentAt: number; value: T }>();
  /** Writes per identifier: odd while one is in flight. A GET is remembered only if the count did not move meanwhile. */
  readonly #writes = new Map<string, number>();

  constructor(readonly max = 20_000) {}

  /** Before sending a GET: the token to hand to `remember` with its answer. */
  begin(id: string, now = Date.now()): { id: string; sentAt: number; writes: number } {
    return { id, sentAt: now, writes: this.#writes.get(id) ?? 0 };
  }

  /** A GET's answer, kept unless a write of the object started or ended while it was on its way. */
  remember(token: { id: string; sentAt: number; writes: number }, value: T): void {
    const writes = this.#writes.get(token.id) ?? 0;
    if (writes !== token.writes || writes % 2 === 1) return;
    this.#reads.delete(token.id);
    if (this.#reads.size >= this.max) {
      const oldest = this.#reads.keys().next();
      if (!oldest.done) this.#reads.delete(oldest.value);
    }
    this.#reads.set(token.id, { sentAt: token.sentAt, value: structuredClone(value) });
  }

  /** A write of the object is about to be sent: forget what was read of it, until `written` (always call both). */
  writing(id: string): void {
    this.#reads.delete(id);
    this.#writes.set(id, (this.#writes.get(id) ?? 0) + 1);
  }

  /** The write started by `writing(id)` ended (answered or failed). */
  written(id: string): void {
    this.#reads.delete(id);
    // Bounded like the answers: forgetting the counts only makes GETs in flight unrememberable (below), never wrong.
    if (this.#writes.size >= this.max && !this.#writes.has(id)) this.#writes.clear();
    const n = (this.#writes.get(id) ?? 0) + 1;
    // Even at rest, whatever was forgotten: a GET that began during the write holds an odd count and differs.
    this.#writes.set(id, n % 2 === 0 ? n : n + 1);
  }

  /** The last answer for `id`, if its GET was sent at or after `since` and nothing was written since; a copy. */
  since(id: string, since: number): T | undefined {
    const read = this.#reads.get(id);
    if (!read || read.sentAt < since) return undefined;
    return structuredClone(read.value);
  }

  get size(): number {
    return this.#reads.size;
  }
}
