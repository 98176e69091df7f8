/**
 * Per-object status of one load balancer's reconciliation, kept as data (docs/architecture.md#status-book) and
 * exposed by the `status` query: what exists, what is pending, what failed and why.
 */
import type { Kind, ObjectStatus, Plan, Snapshot, StateName } from '../domain/types';

export class StatusBook {
  readonly #objects = new Map<string, ObjectStatus>();

  constructor(
    readonly loadBalancer: string,
    private readonly now: () => number,
  ) {}

  /** Resets the book to what a pass observed and planned. */
  observe(plan: Plan, snapshot: Snapshot): void {
    const byId = new Map(snapshot.objects.map((o) => [o.identifier, o]));
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
