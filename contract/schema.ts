/**
 * The schema version of what crosses builds (docs/architecture.md, "Versions and patches"): the continue-as-new
 * input of the long-lived entities and the signals they exchange. A run of one build continues as new into, and
 * signals, runs of another build; the only code two builds share is this format. Every such input and message of
 * this build carries `v: 2`; the previous release (the one before entities were PINNED) wrote the same shapes without
 * `v`, which these readers accept for as long as workflows/legacy/ exists. A version this build does not know is
 * refused by the readers (a signal is then ignored: a handler that threw would fail the workflow task).
 */
import type { PoolMembersMessage, PoolReport } from './payloads';

export const SCHEMA_VERSION = 2;
export type SchemaVersion = typeof SCHEMA_VERSION;

/** `v` of an input or message: 2, or absent (the previous release). Anything else is a build this one does not know. */
export function knownSchema(raw: unknown): boolean {
  if (typeof raw !== 'object' || raw === null) return false;
  const v = (raw as { v?: unknown }).v;
  return v === undefined || v === SCHEMA_VERSION;
}

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const isNonNegativeInteger = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 0;

/** `{v, serviceUid}` of subscribe and unsubscribe; null for anything else. */
export function readServiceRef(raw: unknown): { serviceUid: string } | null {
  if (!knownSchema(raw) || !isRecord(raw) || typeof raw.serviceUid !== 'string' || raw.serviceUid === '') return null;
  return { serviceUid: raw.serviceUid };
}

/** A pool's members message (every member or a delta); null for anything else. */
export function readPoolMembers(raw: unknown): PoolMembersMessage | null {
  if (!knownSchema(raw) || !isRecord(raw) || typeof raw.pool !== 'string' || !isNonNegativeInteger(raw.revision)) return null;
  const servers = Array.isArray(raw.servers) ? (raw.servers as PoolMembersMessage['servers']) : undefined;
  const d = raw.delta;
  const delta = isRecord(d) && isNonNegativeInteger(d.base) && Array.isArray(d.upsert) && Array.isArray(d.remove) ? (d as unknown as PoolMembersMessage['delta']) : undefined;
  if (servers === undefined && delta === undefined) return null;
  return { pool: raw.pool, revision: raw.revision, ...(servers ? { servers } : {}), ...(delta ? { delta } : {}) };
}

/** A controller's report to its pool; null for anything else. */
export function readPoolReport(raw: unknown): PoolReport | null {
  if (!knownSchema(raw) || !isRecord(raw) || typeof raw.serviceUid !== 'string' || !isNonNegativeInteger(raw.revision) || typeof raw.converged !== 'boolean') return null;
  return { serviceUid: raw.serviceUid, revision: raw.revision, converged: raw.converged, ...(typeof raw.error === 'string' ? { error: raw.error } : {}) };
}

/** The identifiers a superseded load balancer pass created; null for anything else. */
export function readSupersededCreates(raw: unknown): { identifiers: string[] } | null {
  if (!knownSchema(raw) || !isRecord(raw) || !Array.isArray(raw.identifiers)) return null;
  return { identifiers: raw.identifiers.filter((id): id is string => typeof id === 'string' && id !== '') };
}
