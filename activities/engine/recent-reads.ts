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
 * One clock only: the round's start is a mark this client took itself (`mark()`: its id and its monotonic clock),
 * handed through the workflow to the closing observation; a mark another client took (another worker process) is
 * not honoured, that observation reads every object again. Neither the Temporal server's clock nor another
 * machine's is ever compared with this one, and a wall-clock step (NTP) changes nothing. What the cache buys is
 * measured by `npm run bench -- --core` (docs/benchmarks.md, mode `no-recent-reads`); the worker option
 * `recentReads: false` turns it off.
 */
import { randomUUID } from 'node:crypto';
import type { ReadMark } from '../../contract';

export class RecentReads<T> {
  /** This client's id in its marks. */
  readonly reader: string = randomUUID();
  readonly #reads = new Map<string, { sentAt: number; value: T }>();
  /** Writes per identifier: odd while one is in flight. A GET is remembered only if the count did not move meanwhile. */
  readonly #writes = new Map<string, number>();

  constructor(
    readonly max = 20_000,
    /** The monotonic clock (ms) of this process; tests pass their own. */
    readonly now: () => number = () => performance.now(),
  ) {}

  /** The start of a round, on this client's clock: what `since` compares with. */
  mark(): ReadMark {
    return { reader: this.reader, at: this.now() };
  }

  /** Before sending a GET: the token to hand to `remember` with its answer. */
  begin(id: string): { id: string; sentAt: number; writes: number } {
    return { id, sentAt: this.now(), writes: this.#writes.get(id) ?? 0 };
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

  /**
   * The last answer for `id`, if `since` is this client's mark, its GET was sent at or after it and nothing was
   * written since; a copy.
   */
  since(id: string, since: ReadMark): T | undefined {
    if (since.reader !== this.reader) return undefined;
    const read = this.#reads.get(id);
    if (!read || read.sentAt < since.at) return undefined;
    return structuredClone(read.value);
  }

  get size(): number {
    return this.#reads.size;
  }
}
