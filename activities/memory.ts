/**
 * What one worker remembers between activities. Nothing here is needed for correctness across workers (Temporal's
 * heartbeat details and the workflows carry that); it makes one worker right where the Engine is slow to show
 * what it did:
 * - the kind of an identifier and the load balancer its parent chain leads to (saves reads on every observation);
 * - the identifiers it created for a service, so an observation finds them while the tag index still lags behind
 *   the tag (the real Engine lists a just-tagged object under its tag only seconds later);
 * - the identifiers it is deleting: the Engine keeps a deleted object readable and listed, in an unchanged state,
 *   until it is deprovisioned, and such an object must never be adopted or counted as present;
 * - one lock per resource for tag requests: the Engine fails a tag request that overlaps another on the same
 *   resource (the upstream controller serializes all its tagging for this reason).
 * Each map is bounded: cleared when full.
 */
import type { Kind } from '../domain';

export class IdentifierCache {
  readonly #kinds = new Map<string, Kind | null>();
  readonly #lbs = new Map<string, string>();
  readonly #created = new Map<string, Set<string>>();
  readonly #deleting = new Set<string>();
  readonly #tagQueue = new Map<string, Promise<void>>();
  constructor(readonly max = 100_000) {}

  get(id: string): Kind | null | undefined {
    return this.#kinds.get(id);
  }
  set(id: string, kind: Kind | null): void {
    if (this.#kinds.size >= this.max) this.#kinds.clear();
    this.#kinds.set(id, kind);
  }
  loadBalancerOf(id: string): string | undefined {
    return this.#lbs.get(id);
  }
  setLoadBalancer(id: string, lb: string): void {
    if (this.#lbs.size >= this.max) this.#lbs.clear();
    this.#lbs.set(id, lb);
  }

  /** Records an object this worker created (and tagged) for a service. */
  created(serviceUid: string, id: string): void {
    if (this.#created.size >= this.max) this.#created.clear();
    const ids = this.#created.get(serviceUid) ?? new Set<string>();
    ids.add(id);
    this.#created.set(serviceUid, ids);
  }
  /** Objects this worker created for the service and has not seen gone since. */
  createdFor(serviceUid: string): string[] {
    return [...(this.#created.get(serviceUid) ?? [])];
  }

  /** The object is being deleted (DELETE sent, 404 not yet seen). */
  deleting(id: string): void {
    if (this.#deleting.size >= this.max) this.#deleting.clear();
    this.#deleting.add(id);
  }
  /** The DELETE was refused (409): the object stays, and observations must see it again. */
  notDeleting(id: string): void {
    this.#deleting.delete(id);
  }
  isDeleting(id: string): boolean {
    return this.#deleting.has(id);
  }
  /** The Engine answered 404: forget the identifier everywhere. */
  gone(id: string): void {
    this.#deleting.delete(id);
    this.#kinds.delete(id);
    this.#lbs.delete(id);
    for (const [uid, ids] of this.#created) if (ids.delete(id) && ids.size === 0) this.#created.delete(uid);
  }

  /** Runs `fn` when no other tag request of this worker for the resource is in flight; one at a time per resource. */
  async serializeTagging<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const before = this.#tagQueue.get(id) ?? Promise.resolve();
    const run = before.then(fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.#tagQueue.set(id, tail);
    try {
      return await run;
    } finally {
      if (this.#tagQueue.get(id) === tail) this.#tagQueue.delete(id);
    }
  }
}
