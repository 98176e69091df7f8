/**
 * The messages between a server pool workflow (pool.ts) and the service controllers that use it (controller.ts).
 * Workflows cannot send each other updates, only signals, so the protocol is signals both ways
 * (docs/architecture.md, "Server pools"):
 *
 *   controller ──subscribe──▶ pool ──poolMembers (current members)──▶ controller
 *   pool change ──poolMembers (new revision)──▶ every subscriber; each reconciles and ──report──▶ pool
 *   controller delete or pool switch ──unsubscribe──▶ pool
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { addMembers, removeMembers, type ServerSpec } from '../domain';

export interface PoolMembers {
  pool: string;
  revision: number;
  servers: ServerSpec[];
}

/**
 * What changed between revision `base` and the message's revision: members added or readdressed (`upsert`) and
 * members removed. A pool sends it to a subscriber it sent `base` to, instead of every member again: 5,000 members
 * are about 225 KB per signal, and a pool's history holds one signal per subscriber per change.
 */
export interface PoolDelta {
  base: number;
  upsert: ServerSpec[];
  remove: string[];
}

/** What a pool sends a subscriber: every member (`servers`), or the changes since a revision it sent it (`delta`). */
export interface PoolMembersMessage {
  pool: string;
  revision: number;
  servers?: ServerSpec[];
  delta?: PoolDelta;
}

/** The members after `delta`, from the members of its base revision (sorted by name, as the pool keeps them). */
export function applyPoolDelta(base: readonly ServerSpec[], delta: PoolDelta): ServerSpec[] {
  return removeMembers(addMembers(base, delta.upsert).servers, delta.remove).servers;
}

/** A controller's outcome for a pool revision: the pool's status shows it, and `waitConverged` waits on it. */
export interface PoolReport {
  serviceUid: string;
  /** The pool revision the pass reconciled. */
  revision: number;
  converged: boolean;
  error?: string;
}

export interface PoolServiceStatus {
  serviceUid: string;
  /** The newest pool revision this service has converged (null: none yet). */
  convergedRevision: number | null;
  /** Its last report: the revision of its last finished pass, and how it ended. */
  last: { revision: number; converged: boolean; error?: string } | null;
}

export interface PoolStatus {
  name: string;
  revision: number;
  servers: ServerSpec[];
  services: PoolServiceStatus[];
  /** Subscribers that still have to be sent the current members. */
  pendingDeliveries: number;
  deleting: boolean;
}

/** What a member update did; `revision` grew only when `changed`. */
export interface PoolChangeResult {
  name: string;
  revision: number;
  changed: boolean;
  added: string[];
  removed: string[];
  /** Members whose address changed (their Server objects are replaced). */
  readdressed: string[];
  /** Services the change is sent to. */
  services: string[];
}

export interface PoolWaitResult {
  name: string;
  revision: number;
  converged: boolean;
  services: PoolServiceStatus[];
}

// Pool side.
export const poolSetUpdate = defineUpdate<PoolChangeResult, [servers: unknown]>('set');
export const poolAddUpdate = defineUpdate<PoolChangeResult, [servers: unknown]>('add');
export const poolRemoveUpdate = defineUpdate<PoolChangeResult, [names: unknown]>('remove');
export const poolDeleteUpdate = defineUpdate<{ name: string; revision: number }, []>('delete');
export const poolWaitUpdate = defineUpdate<PoolWaitResult, [revision: number]>('waitConverged');
export const poolStatusQuery = defineQuery<PoolStatus>('status');
export const poolSubscribeSignal = defineSignal<[{ serviceUid: string }]>('subscribe');
export const poolUnsubscribeSignal = defineSignal<[{ serviceUid: string }]>('unsubscribe');
export const poolReportSignal = defineSignal<[PoolReport]>('report');
/** Send the current members to every subscriber again (full resync). */
export const poolResyncSignal = defineSignal<[]>('resync');

// Controller side.
export const poolMembersSignal = defineSignal<[PoolMembersMessage]>('poolMembers');
