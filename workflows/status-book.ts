/**
 * Per-object status of one load balancer's reconciliation, kept as data (docs/architecture.md#status-book) and
 * exposed by the `status` query: what exists, what is pending, what failed and why.
 */
import { KIND_TITLE } from '../domain';
import type { Kind, ObjectStatus, Plan, StateName } from '../domain/types';

export class StatusBook {
  readonly #objects = new Map<string, ObjectStatus>();

  constructor(
    readonly loadBalancer: string,
    private readonly now: () => number,
  ) {}

  /**
   * Resets the book to what a pass observed and planned: `observed` gives each identifier's state (a snapshot, or the
   * states a plan's outline carries, domain/plan-outline.ts).
   */
  observe(plan: Plan, observed: { objects: readonly { identifier: string; state: StateName }[] }): void {
    const byId = new Map(observed.objects.map((o) => [o.identifier, o]));
    this.#objects.clear();
    for (const { desired, action } of plan.objects) {
      const id = action.type === 'create' ? null : action.identifier;
      const state: ObjectStatus['state'] = id ? (byId.get(id)?.state ?? 'Unknown') : 'Pending';
      this.set(desired.key, desired.kind, desired.name, id, state);
    }
    for (const d of plan.destroy) this.set(`destroy:${d.identifier}`, d.kind, d.name, d.identifier, byId.get(d.identifier)?.state ?? 'Unknown', `to destroy: ${d.reason}`);
  }

  set(key: string, kind: Kind, name: string, identifier: string | null, state: StateName | 'Pending' | 'Destroyed', error?: string): void {
    const entry: ObjectStatus = { loadBalancer: this.loadBalancer, kind, key, name, identifier, state, updatedAt: this.now() };
    if (error !== undefined) entry.error = error;
    this.#objects.set(key, entry);
  }

  update(key: string, patch: { identifier?: string; state: ObjectStatus['state']; error?: string }): void {
    const current = this.#objects.get(key);
    if (!current) return;
    const next: ObjectStatus = { ...current, ...patch, updatedAt: this.now() };
    if (patch.error === undefined) delete next.error;
    this.#objects.set(key, next);
  }

  list(): ObjectStatus[] {
    return [...this.#objects.values()];
  }

  /** Objects not (yet) in an ok state, for progress lines and failure messages. */
  pending(): ObjectStatus[] {
    return this.list().filter((o) => o.state !== 'Deployed' && o.state !== 'Updated' && o.state !== 'Destroyed');
  }
}

/**
 * What the last plan still wanted, for the not-converged message: objects not ready and objects still to destroy
 * (an object the plan destroys can look ready, so `pending()` alone can be empty). Never an empty list.
 */
export function describeOutstanding(book: StatusBook, plan: Plan): string {
  const pending = book.pending().map((o) => `${KIND_TITLE[o.kind]} ${o.name} (${o.state}${o.error ? `: ${o.error}` : ''})`);
  const pendingIds = new Set(book.pending().map((o) => o.identifier));
  const destroy = plan.destroy.filter((d) => !pendingIds.has(d.identifier)).map((d) => `${KIND_TITLE[d.kind]} ${d.name} (to destroy: ${d.reason})`);
  const changes = plan.objects.filter((p) => p.action.type !== 'keep' && !book.pending().some((o) => o.key === p.desired.key));
  const others = changes.map((p) => `${KIND_TITLE[p.desired.kind]} ${p.desired.name} (to ${p.action.type})`);
  const all = [...pending, ...destroy, ...others];
  if (all.length === 0) return 'the last observation still differed from the spec';
  return `still pending: ${all.slice(0, 10).join(', ')}${all.length > 10 ? ', …' : ''}`;
}

/**
 * Objects a result lists, at most: about 300 KiB of per-object status. Results travel upward (a load balancer's to
 * its service pass, then into the controller's last result, its continue-as-new input and every waitConverged
 * answer), and Temporal refuses payloads over 2 MiB: 2 load balancers of 5,000 objects listed in full passed it.
 */
export const MAX_LISTED_OBJECTS = 1_000;

/**
 * What a result lists of `all`: every object while there are at most `max`; beyond, those not ready (failed, pending,
 * still to destroy) up to `max`, and how many were left out. The full list is the `status` query of the load
 * balancer's reconcileLoadBalancer workflow (docs/spec.md#temporal-surface), which `lbaas status` reads then.
 */
export function listedObjects(all: readonly ObjectStatus[], omittedBefore = 0, max = MAX_LISTED_OBJECTS): { objects: ObjectStatus[]; objectsOmitted: number } {
  if (all.length <= max) return { objects: [...all], objectsOmitted: omittedBefore };
  const notReady = all.filter((o) => o.state !== 'Deployed' && o.state !== 'Updated' && o.state !== 'Destroyed').slice(0, max);
  return { objects: notReady, objectsOmitted: omittedBefore + all.length - notReady.length };
}
