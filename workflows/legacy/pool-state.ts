/**
 * The previous release's entity state of one server pool: members, revision, subscribers and what each has converged,
 * and the deliveries still owed. Only its loop (workflows/legacy/pool.ts) runs it; its snapshot is what that loop (and
 * the pool loop of the build before thin pools) passes to today's loop, which keeps the members and revision of it and
 * drops the rest (workflows/pool-members.ts). Goes with workflows/legacy/pool.ts.
 */
import { addMembers, diffMembers, isNoChange, removeMembers, type MemberChange, type ServerSpec } from '../../domain';
import type { PoolChange, PoolDelta, PoolMembersMessage, PoolReport, PoolServiceStatus } from '../../contract';

/** What the previous release's member updates answered: the change and the subscribers it is sent to. */
export type PoolChangeResult = PoolChange & { services: string[] };

/** What the previous release's `status` query answered. */
export interface PoolStatus {
  name: string;
  revision: number;
  servers: ServerSpec[];
  services: PoolServiceStatus[];
  /** Subscribers that still have to be sent the current members. */
  pendingDeliveries: number;
  deleting: boolean;
}

/** One revision's changes, kept so that subscribers are sent what changed rather than every member. */
interface LoggedChange {
  revision: number;
  upsert: ServerSpec[];
  remove: string[];
}

/**
 * Revisions whose changes are kept: a subscriber that is further behind (or new, or re-subscribing) is sent every
 * member. Changes are small (a node joining or leaving), so the log stays a few KB.
 */
export const POOL_CHANGE_LOG = 16;

/**
 * A failed report's error text is kept up to this many characters (the service's own status has all of it), and only
 * the first MAX_ERRORS_CARRIED failed subscribers (in the order they subscribed) carry theirs into the next run. The
 * continue-as-new input must stay under Temporal's 2 MiB payload limit (Temporal fails the workflow task that would
 * continue as new with a larger one, on every attempt: the pool would stop), and an Engine outage makes every service
 * report a failure at once: 5,000 errors of a few hundred characters would add more than 1 MB. Without error texts a
 * subscriber costs about 100 bytes with 15-character uids and 145 with Kubernetes' 36-character ones
 * (test/unit/limits.test.ts measures both), so 2 MiB is reached near 14,000 Kubernetes services on one pool.
 */
export const MAX_REPORT_ERROR = 200;
export const MAX_ERRORS_CARRIED = 200;

export interface PoolSnapshot {
  servers: ServerSpec[];
  revision: number;
  subscribers: Record<string, Omit<PoolServiceStatus, 'serviceUid'>>;
  /** Subscribers still owed the current members. */
  owed: string[];
  /** The revision each subscriber was last sent (absent in snapshots of pools from before member deltas). */
  sent?: Record<string, number>;
  log?: LoggedChange[];
}

export class PoolState {
  servers: ServerSpec[] = [];
  revision = 0;
  deleting = false;
  readonly subscribers = new Map<string, Omit<PoolServiceStatus, 'serviceUid'>>();
  readonly owed = new Set<string>();
  /** The revision each subscriber was last sent: the base of the changes it is sent next. */
  readonly sent = new Map<string, number>();
  log: LoggedChange[] = [];

  constructor(
    readonly name: string,
    restored?: PoolSnapshot,
  ) {
    if (restored) {
      this.servers = restored.servers;
      this.revision = restored.revision;
      for (const [uid, s] of Object.entries(restored.subscribers)) this.subscribers.set(uid, s);
      for (const uid of restored.owed) this.owed.add(uid);
      for (const [uid, revision] of Object.entries(restored.sent ?? {})) this.sent.set(uid, revision);
      this.log = restored.log ?? [];
    }
  }

  /** Applies a member change: a new revision, owed to every subscriber, only when something really changed. */
  change(c: MemberChange): PoolChangeResult {
    const changed = !isNoChange(c);
    if (changed) {
      const now = new Map(c.servers.map((m) => [m.name, m]));
      const upsert = [...c.added, ...c.changed].sort().map((n) => now.get(n)).filter((m): m is ServerSpec => m !== undefined);
      this.servers = c.servers;
      this.revision++;
      this.log = [...this.log, { revision: this.revision, upsert, remove: c.removed }].slice(-POOL_CHANGE_LOG);
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
    // Always answered, also for a known subscriber: a controller re-subscribes to catch up (resync, new run), and is
    // sent every member.
    this.owed.add(uid);
    this.sent.delete(uid);
  }

  unsubscribe(uid: string): void {
    this.subscribers.delete(uid);
    this.owed.delete(uid);
    this.sent.delete(uid);
  }

  /**
   * The message for `uid` now: the changes since the revision it was last sent, when the log covers them, else every
   * member. Recorded as sent: a subscriber that lost it asks again (it re-subscribes when a delta does not fit).
   */
  messageFor(uid: string): PoolMembersMessage {
    const base = this.sent.get(uid);
    this.sent.set(uid, this.revision);
    const since = base === undefined ? [] : this.log.filter((c) => c.revision > base);
    const covered = base !== undefined && base < this.revision && since.length === this.revision - base;
    if (!covered) return { pool: this.name, revision: this.revision, servers: this.servers };
    const upsert = new Map<string, ServerSpec>();
    const remove = new Set<string>();
    for (const c of since) {
      for (const m of c.upsert) {
        upsert.set(m.name, m);
        remove.delete(m.name);
      }
      for (const n of c.remove) {
        upsert.delete(n);
        remove.add(n);
      }
    }
    const delta: PoolDelta = { base: base as number, upsert: [...upsert.values()], remove: [...remove].sort() };
    return { pool: this.name, revision: this.revision, delta };
  }

  /** A subscriber that cannot be signalled (its controller ended) is dropped: nobody is left to reference the pool. */
  drop(uid: string): void {
    this.unsubscribe(uid);
  }

  report(r: PoolReport): void {
    const s = this.subscribers.get(r.serviceUid);
    if (!s || (s.last && s.last.revision > r.revision)) return;
    const error = r.error && r.error.length > MAX_REPORT_ERROR ? `${r.error.slice(0, MAX_REPORT_ERROR)}…` : r.error;
    s.last = { revision: r.revision, converged: r.converged, ...(error ? { error } : {}) };
    if (r.converged && (s.convergedRevision === null || r.revision > s.convergedRevision)) s.convergedRevision = r.revision;
  }

  resync(): void {
    for (const uid of this.subscribers.keys()) this.owed.add(uid);
  }

  /**
   * Takes what is owed now, at most `limit` subscribers, the rest staying owed; deliveries owed after this call are
   * taken by a later one. In arrival order: a subscriber owed since before is taken before one owed since (owing it
   * again keeps its place), so under changes that come faster than a fan-out ends, everyone is still reached; a
   * subscriber just sent the members and owed again waits behind those not reached yet. `order: 'uid'` is the order
   * of runs that predate the patch pool-owed-in-arrival-order (workflows/pool.ts), in which the subscribers whose
   * uids sort last could wait for as long as changes kept coming.
   */
  takeOwed(limit = Infinity, order: 'arrival' | 'uid' = 'arrival'): string[] {
    const owed = [...this.owed];
    const uids = (order === 'uid' ? owed.sort() : owed).slice(0, limit);
    for (const uid of uids) this.owed.delete(uid);
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

  /**
   * The state for continue-as-new, in the order the subscribers subscribed. Error texts of the first
   * MAX_ERRORS_CARRIED failed subscribers are carried; the others keep their outcome (revision, converged: false)
   * without the text.
   */
  snapshot(): PoolSnapshot {
    let errors = 0;
    const subscribers = Object.fromEntries(
      [...this.subscribers].map(([uid, s]) => {
        if (s.last?.error === undefined || ++errors <= MAX_ERRORS_CARRIED) return [uid, s];
        return [uid, { ...s, last: { revision: s.last.revision, converged: s.last.converged } }];
      }),
    );
    return {
      servers: this.servers,
      revision: this.revision,
      subscribers,
      owed: [...this.owed],
      sent: Object.fromEntries(this.sent),
      log: this.log,
    };
  }
}
