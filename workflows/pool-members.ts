/**
 * The entity state of one server pool: its members and revision, whether it is being deleted, which delivery round
 * it started last and whether that round still runs (at most one does). Nothing per service: who uses the pool is
 * read from visibility by each delivery round (workflows/pool-round.ts), and how far each service got from the
 * services' own search attributes (client/pool-client.ts), so the pool's snapshot is the same few KB with 5 services
 * or 50,000. Pure and deterministic; serializable for continue-as-new.
 */
import { addMembers, diffMembers, isNoChange, removeMembers, type MemberChange, type ServerSpec } from '../domain';
import type { PoolChange, PoolDelta, PoolMembersStatus, PoolRoundRef } from '../contract';
import type { PoolSnapshot as LegacyPoolSnapshot } from './legacy/pool-state';

export interface PoolMembersSnapshot {
  servers: ServerSpec[];
  revision: number;
  /** Rounds started in this pool's life (numbers the next round's workflow id). */
  rounds: number;
  /** The newest round started, or null before the first. */
  round: PoolRoundRef | null;
  /** The revision the newest round sends; a revision beyond it is still to be sent. */
  delivered: number;
  /** The newest round has not said it ended (absent: it has); the next round waits for it. */
  roundRunning?: boolean;
  /** A resync asked for a round of the current revision that has not started yet. */
  resend?: boolean;
  /** The last changes, so that a round sends what changed since the previous round rather than every member. */
  log?: LoggedChange[];
}

/** One revision's change. */
export interface LoggedChange {
  revision: number;
  upsert: ServerSpec[];
  remove: string[];
}

/**
 * Revisions whose changes are kept. Changes are small (a node joining or leaving): a few KB. A round whose previous
 * round is further back than this sends every member.
 */
export const POOL_CHANGE_LOG = 16;

/** What a round sends: every member, or the changes since the revision the previous round sent (`delta`). */
export type RoundMembers = { servers: ServerSpec[] } | { delta: PoolDelta };

/** A snapshot of this loop, or of the pool loops before it (they kept subscribers, which are dropped). */
export type ServerPoolSnapshot = PoolMembersSnapshot | LegacyPoolSnapshot;

const isLegacy = (s: ServerPoolSnapshot): s is LegacyPoolSnapshot => 'subscribers' in s || !('rounds' in s);

export class PoolMembersState {
  servers: ServerSpec[] = [];
  revision = 0;
  deleting = false;
  rounds = 0;
  round: PoolRoundRef | null = null;
  delivered = 0;
  roundRunning = false;
  resend = false;
  log: LoggedChange[] = [];

  constructor(
    readonly name: string,
    restored?: ServerPoolSnapshot,
  ) {
    if (!restored) return;
    this.servers = restored.servers;
    this.revision = restored.revision;
    if (isLegacy(restored)) {
      // The loop before this one signalled its subscribers itself and may have owed some the current members: a
      // round of the current revision reaches every service using the pool, so nobody is left behind.
      this.resend = this.revision > 0;
      return;
    }
    this.rounds = restored.rounds;
    this.round = restored.round;
    this.delivered = restored.delivered;
    this.roundRunning = restored.roundRunning ?? false;
    this.resend = restored.resend ?? false;
    this.log = restored.log ?? [];
  }

  /** Applies a member change: a new revision, to be delivered, only when something really changed. */
  change(c: MemberChange): PoolChange {
    const changed = !isNoChange(c);
    if (changed) {
      const now = new Map(c.servers.map((m) => [m.name, m]));
      const upsert = [...c.added, ...c.changed].sort().map((n) => now.get(n)).filter((m): m is ServerSpec => m !== undefined);
      this.servers = c.servers;
      this.revision++;
      this.log = [...this.log, { revision: this.revision, upsert, remove: c.removed }].slice(-POOL_CHANGE_LOG);
    }
    return { name: this.name, revision: this.revision, changed, added: c.added, removed: c.removed, readdressed: c.changed };
  }

  set(servers: ServerSpec[]): PoolChange {
    return this.change(diffMembers(this.servers, servers));
  }

  add(servers: ServerSpec[]): PoolChange {
    return this.change(addMembers(this.servers, servers));
  }

  remove(names: string[]): PoolChange {
    return this.change(removeMembers(this.servers, names));
  }

  /**
   * Send the current revision again, to every service using the pool, in a round that starts now: it does not wait
   * for a round that has not said it ended (one terminated by hand never will; a live one ends as it would).
   */
  resync(): void {
    if (this.revision === 0) return;
    this.resend = true;
    this.roundRunning = false;
  }

  /** A revision (or a resync) waits for its delivery round. Revision 0 (no members ever set) is never sent. */
  roundDue(): boolean {
    return this.revision > 0 && (this.revision > this.delivered || this.resend);
  }

  /**
   * A round is due and none is running. One round in flight: changes made while a round runs only raise the revision
   * the next round sends, so a stream of changes costs one round per round's length, not one per change, and every
   * round reaches every service it lists (none is cut short by a newer one).
   */
  roundStartable(): boolean {
    return this.roundDue() && !this.roundRunning;
  }

  /** The round `workflowId` ended (its own signal, or its end seen by the run that started it). */
  roundEnded(workflowId: string): void {
    if (this.round?.workflowId === workflowId) this.roundRunning = false;
  }

  /**
   * Records the start of the next round, for the current revision; returns it and what it sends: the changes since
   * the revision the previous round sent, merged (right for a service at that revision or any later one:
   * workflows/pool-subscription.ts), when the log covers them and they are smaller than the members; every member
   * otherwise (the first round, a resync, a long gap). The previous round has ended, having signalled every service
   * it listed; a service it did not list (visibility did not show it yet) read the members itself.
   */
  beginRound(workflowId: (number: number) => string): { round: PoolRoundRef; members: RoundMembers } {
    const members = this.#membersSince(this.resend ? 0 : this.delivered);
    this.rounds++;
    this.round = { workflowId: workflowId(this.rounds), revision: this.revision, number: this.rounds };
    this.delivered = this.revision;
    this.resend = false;
    this.roundRunning = true;
    return { round: this.round, members };
  }

  #membersSince(base: number): RoundMembers {
    const since = this.log.filter((c) => c.revision > base);
    if (base <= 0 || base >= this.revision || since.length !== this.revision - base) return { servers: this.servers };
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
    if (upsert.size + remove.size >= this.servers.length) return { servers: this.servers };
    return { delta: { base, upsert: [...upsert.values()], remove: [...remove].sort() } };
  }

  status(): PoolMembersStatus {
    return { name: this.name, revision: this.revision, servers: this.servers, deleting: this.deleting, round: this.round ? { ...this.round, running: this.roundRunning } : null };
  }

  details(): string {
    const round = this.round
      ? `delivery round ${this.round.number} ${this.roundRunning ? 'sends' : 'sent'} revision ${this.round.revision} (${this.round.workflowId})${this.roundDue() && this.roundRunning ? `; revision ${this.revision} goes out in the next round, when it ends` : ''}`
      : 'no delivery round yet';
    return [
      `**revision ${this.revision}** — ${this.servers.length} servers`,
      this.servers.map((s) => `- ${s.name} ${s.address}`).join('\n') || '(no servers: services using this pool have no Server objects)',
      `${round}; the services using the pool: lbaas pool status ${this.name}`,
    ].join('\n\n');
  }

  snapshot(): PoolMembersSnapshot {
    return { servers: this.servers, revision: this.revision, rounds: this.rounds, round: this.round, delivered: this.delivered, ...(this.roundRunning ? { roundRunning: true } : {}), ...(this.resend ? { resend: true } : {}), log: this.log };
  }
}
