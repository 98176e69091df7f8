/**
 * The entity state of one server pool: members, revision, subscribers and what each has converged, and the
 * deliveries still owed. Pure and deterministic; serializable for continue-as-new (nothing owed is lost across it).
 */
import { addMembers, diffMembers, isNoChange, removeMembers, type MemberChange, type ServerSpec } from '../domain';
import type { PoolChangeResult, PoolReport, PoolServiceStatus, PoolStatus } from '../contract';

export interface PoolSnapshot {
  servers: ServerSpec[];
  revision: number;
  subscribers: Record<string, Omit<PoolServiceStatus, 'serviceUid'>>;
  /** Subscribers still owed the current members. */
  owed: string[];
}

export class PoolState {
  servers: ServerSpec[] = [];
  revision = 0;
  deleting = false;
  readonly subscribers = new Map<string, Omit<PoolServiceStatus, 'serviceUid'>>();
  readonly owed = new Set<string>();

  constructor(
    readonly name: string,
    restored?: PoolSnapshot,
  ) {
    if (restored) {
      this.servers = restored.servers;
      this.revision = restored.revision;
      for (const [uid, s] of Object.entries(restored.subscribers)) this.subscribers.set(uid, s);
      for (const uid of restored.owed) this.owed.add(uid);
    }
  }

  /** Applies a member change: a new revision, owed to every subscriber, only when something really changed. */
  change(c: MemberChange): PoolChangeResult {
    const changed = !isNoChange(c);
    if (changed) {
      this.servers = c.servers;
      this.revision++;
      for (const uid of this.subscribers.keys()) this.owed.add(uid);
    }
    return { name: this.name, revision: this.revision, changed, added: c.added, removed: c.removed, readdressed: c.changed, services: this.services() };
  }

  set(servers: ServerSpec[]): PoolChangeResult {
    return this.change(diffMembers(this.servers, servers));
  }

  add(servers: ServerSpec[]): PoolChangeResult {
    return this.change(addMembers(this.servers, servers));
  }

  remove(names: string[]): PoolChangeResult {
    return this.change(removeMembers(this.servers, names));
  }

  subscribe(uid: string): void {
    if (!this.subscribers.has(uid)) this.subscribers.set(uid, { convergedRevision: null, last: null });
    // Always answered, also for a known subscriber: a controller re-subscribes to catch up (resync, new run).
    this.owed.add(uid);
  }

  unsubscribe(uid: string): void {
    this.subscribers.delete(uid);
    this.owed.delete(uid);
  }

  /** A subscriber that cannot be signalled (its controller ended) is dropped: nobody is left to reference the pool. */
  drop(uid: string): void {
    this.unsubscribe(uid);
  }

  report(r: PoolReport): void {
    const s = this.subscribers.get(r.serviceUid);
    if (!s || (s.last && s.last.revision > r.revision)) return;
    s.last = { revision: r.revision, converged: r.converged, ...(r.error ? { error: r.error } : {}) };
    if (r.converged && (s.convergedRevision === null || r.revision > s.convergedRevision)) s.convergedRevision = r.revision;
  }

  resync(): void {
    for (const uid of this.subscribers.keys()) this.owed.add(uid);
  }

  /** Takes what is owed now; deliveries owed after this call are taken by the next. */
  takeOwed(): string[] {
    const uids = [...this.owed].sort();
    this.owed.clear();
    return uids;
  }

  services(): string[] {
    return [...this.subscribers.keys()].sort();
  }

  /** Every subscriber has finished a pass for `revision` or newer: converged, or failed (the first failure decides). */
  settled(revision: number): boolean {
    return [...this.subscribers.values()].every((s) => (s.convergedRevision ?? 0) >= revision || (s.last !== null && s.last.revision >= revision));
  }

  serviceStatus(): PoolServiceStatus[] {
    return this.services().map((uid) => ({ serviceUid: uid, ...(this.subscribers.get(uid) as Omit<PoolServiceStatus, 'serviceUid'>) }));
  }

  status(): PoolStatus {
    return { name: this.name, revision: this.revision, servers: this.servers, services: this.serviceStatus(), pendingDeliveries: this.owed.size, deleting: this.deleting };
  }

  details(): string {
    const converged = [...this.subscribers.values()].filter((s) => s.convergedRevision === this.revision).length;
    return [
      `**revision ${this.revision}** — ${this.servers.length} servers`,
      this.servers.map((s) => `- ${s.name} ${s.address}`).join('\n') || '(no servers: services using this pool have no Server objects)',
      `${this.subscribers.size} services, ${converged} converged on revision ${this.revision}`,
    ].join('\n\n');
  }

  snapshot(): PoolSnapshot {
    return { servers: this.servers, revision: this.revision, subscribers: Object.fromEntries(this.subscribers), owed: [...this.owed] };
  }
}
