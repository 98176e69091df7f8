/**
 * Tagging as the real Engine does it (manners.ts): the tag index (`resource.json?tag_name=`) follows a tag or
 * untag after a drawn lag, and a tag request holds its resource while it is in flight, so another tag request
 * for the same resource meanwhile fails. With both off, tagging is the ideal Engine's: indexed at once, no
 * conflicts.
 */
import type { Draws } from './draws';
import type { FaultModel } from './faults';
import type { SimObject } from './model';
import { SimError } from './errors';
import type { Store } from './store';

export class Tagging {
  /** Resource identifier -> when its tag request in flight ends (performance.now()). */
  private readonly busyUntil = new Map<string, number>();
  /** Pending index updates and busy-window ends, cancelled on reset and close. */
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly store: Store,
    private readonly draws: Draws,
    private readonly changed: () => void,
  ) {}

  private later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    t.unref();
    this.timers.add(t);
  }

  /**
   * Starts a tag request on a resource: how long its answer is to be held (0 with `tagInFlightMs` off). Throws
   * `tagConflictStatus` when another tag request for the resource is still in flight; that one goes ahead.
   */
  begin(o: SimObject, model: FaultModel): number {
    const ms = model.tagInFlightMs;
    if (ms <= 0) return 0;
    const now = performance.now();
    const busy = this.busyUntil.get(o.identifier);
    if (busy !== undefined && busy > now) {
      throw new SimError(model.tagConflictStatus, `Another tag request for resource ${o.identifier} is in progress.`);
    }
    this.busyUntil.set(o.identifier, now + ms);
    this.later(ms, () => {
      if ((this.busyUntil.get(o.identifier) ?? 0) <= performance.now()) this.busyUntil.delete(o.identifier);
    });
    return ms;
  }

  /** The tag index follows a tag change at once, or after the drawn lag. */
  private index(o: SimObject, tag: string): void {
    const lag = this.draws.tagLag();
    if (lag <= 0) this.store.syncTag(o, tag);
    else this.later(lag, () => this.store.syncTag(o, tag));
  }

  tag(o: SimObject, tag: string): void {
    if (!this.store.addTag(o, tag, false)) {
      throw new SimError(422, `Resource ${o.identifier} is already tagged "${tag}".`, { tag: 'Already tagged.' });
    }
    this.index(o, tag);
    o.updatedAt = Date.now();
    this.changed();
  }

  untag(o: SimObject, tag: string): void {
    if (!this.store.removeTag(o, tag, false)) throw new SimError(404, `Resource ${o.identifier} is not tagged "${tag}".`);
    this.index(o, tag);
    o.updatedAt = Date.now();
    this.changed();
  }

  cancelAll(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.busyUntil.clear();
  }
}
