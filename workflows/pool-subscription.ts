/**
 * A controller's subscription to the server pool its spec names: which pool is wanted, which one it is subscribed
 * to, a pool found missing, the members received, and whether to subscribe again. Its own transitions, so that the
 * controller's state (workflows/controller-state.ts) asks it questions instead of reading its fields in combination.
 * Pure and deterministic; its fields go into the controller's continue-as-new snapshot unchanged in shape.
 */
import { applyPoolDelta } from '../domain';
import type { PoolMembers, PoolMembersMessage } from '../contract';

/** What the snapshot stores of a subscription (the field names of snapshots written before this module). */
export interface PoolSubscriptionSnapshot {
  pool?: PoolMembers | null;
  subscribedPool?: string | null;
  poolMissing?: string | null;
  resubscribe?: boolean;
}

/** What receiving a members message did: took them (the controller has work), ignored them, or asks to subscribe again. */
export type MembersOutcome = 'taken' | 'ignored' | 'resubscribe';

/** The signals one subscription step sends: unsubscribe from `leave`, subscribe to `join`. */
export interface SubscriptionStep {
  leave: string | null;
  join: string | null;
}

export class PoolSubscription {
  /** The pool the spec names (null: inline servers). */
  #wanted: string | null = null;
  /** The pool this controller is subscribed to. */
  #subscribed: string | null;
  /** A pool whose subscription failed (it does not exist): not retried until an apply or a resync. */
  #missing: string | null;
  /** The newest members received from the wanted pool; null until it has answered the subscription. */
  #members: PoolMembers | null;
  /** Subscribe again even when subscribed (a resync: the pool answers with its current members). */
  #resubscribe: boolean;

  constructor(restored: PoolSubscriptionSnapshot = {}) {
    this.#members = restored.pool ?? null;
    this.#subscribed = restored.subscribedPool ?? null;
    this.#missing = restored.poolMissing ?? null;
    this.#resubscribe = restored.resubscribe ?? false;
  }

  get wanted(): string | null {
    return this.#wanted;
  }

  get subscribed(): string | null {
    return this.#subscribed;
  }

  get members(): PoolMembers | null {
    return this.#members;
  }

  /** The wanted pool was found missing and nothing asked to try again. */
  get missing(): boolean {
    return this.#wanted !== null && this.#missing === this.#wanted;
  }

  /** The spec's pool as read from a restored spec (keeps what was received). */
  restoreWanted(pool: string | null): void {
    this.#wanted = pool;
  }

  /** A new spec names `pool`: members of another pool are dropped, a missing pool is tried again. */
  want(pool: string | null): void {
    this.#wanted = pool;
    if (this.#members && this.#members.pool !== pool) this.#members = null;
    this.#missing = null;
  }

  /** A resync: subscribe again so that the pool answers with its current members. */
  resync(): void {
    if (this.#wanted === null) return;
    this.#resubscribe = true;
    this.#missing = null;
  }

  /** Members of the wanted pool are known (always true for inline servers). */
  ready(): boolean {
    return this.#wanted === null || this.#members?.pool === this.#wanted;
  }

  /** The subscription differs from what the spec wants, or a resync asked to subscribe again. */
  needsStep(): boolean {
    if (this.#wanted !== null && this.#missing === this.#wanted && !this.#resubscribe) return false;
    return this.#subscribed !== this.#wanted || (this.#resubscribe && this.#wanted !== null);
  }

  /**
   * Starts a subscription step: what to unsubscribe from and what to subscribe to. The controller sends the signals
   * in that order and reports with `left()` and `joined()` / `failed()`.
   */
  step(): SubscriptionStep {
    const want = this.#wanted;
    const had = this.#subscribed;
    const again = this.#resubscribe;
    this.#resubscribe = false;
    return { leave: had !== null && had !== want ? had : null, join: want !== null && (had !== want || again) ? want : null };
  }

  left(): void {
    this.#subscribed = null;
  }

  joined(pool: string): void {
    this.#subscribed = pool;
  }

  /** The pool does not exist: not tried again until an apply or a resync. */
  failed(pool: string): void {
    this.#missing = pool;
    this.#subscribed = null;
    this.#resubscribe = false;
  }

  /** Members from a pool: taken when they are from the wanted pool and newer than what is known. Latest wins. */
  receive(m: PoolMembersMessage): MembersOutcome {
    if (m.pool !== this.#wanted) return 'ignored';
    const known = this.#members;
    if (known?.pool === m.pool && known.revision >= m.revision) return 'ignored';
    let servers = m.servers;
    if (servers === undefined) {
      // Changes since a revision this controller is past or at apply to what it holds: they carry the final value of
      // every member changed since, and name every member removed since (a delivery round merges the changes since
      // its previous round, workflows/pool-members.ts). Changes since a revision it does not hold yet (a round
      // superseded before reaching it, a message lost with a run): read every member again instead of guessing.
      if (!m.delta || known?.pool !== m.pool || known.revision < m.delta.base) {
        this.#resubscribe = true;
        return 'resubscribe';
      }
      servers = applyPoolDelta(known.servers, m.delta);
    }
    this.#members = { pool: m.pool, revision: m.revision, servers };
    return 'taken';
  }

  /** The members a pass reconciles: null for inline servers. */
  forPass(): PoolMembers | null {
    return this.#wanted === null ? null : this.#members;
  }

  /** Members newer than the last pass reconciled (`passRevision`, -1 when it reconciled none) wait for a pass. */
  newerThan(passRevision: number): boolean {
    return this.#wanted !== null && this.#members !== null && passRevision < this.#members.revision && this.#missing === null;
  }

  /** The snapshot's fields, or none for a controller that never had a pool (as snapshots before pools). */
  snapshot(): PoolSubscriptionSnapshot {
    if (this.#wanted === null && this.#subscribed === null) return {};
    return { pool: this.#members, subscribedPool: this.#subscribed, poolMissing: this.#missing, resubscribe: this.#resubscribe };
  }
}
