/**
 * The schema version of what crosses builds (docs/architecture.md, "Versions and patches"): the continue-as-new
 * input of the long-lived entities and the signals they exchange. A run of one build continues as new into, and
 * signals, runs of another build; the only code two builds share is this format. Every such input and message of
 * this build carries `v: 2`; the previous release (the one before entities were PINNED) wrote the same shapes without
 * `v`, which these readers accept for as long as workflows/legacy/ exists. A version this build does not know is
 * refused by the readers (a signal is then ignored: a handler that threw would fail the workflow task).
 *
 * The readers refuse a field they do not know, as the workflows' inputs do (workflows/input.ts): a misspelt field
 * would otherwise be dropped without a word. So a field added to a message is refused by the builds before it: a
 * build that sends a new field must be preceded by a release whose readers accept it (or bump `v`).
 */
import { formatIssues, validateMembers } from '../domain';
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

/** A message read: its value, or why it was refused, naming the message and the field. */
export type Read<T> = { ok: true; value: T } | { ok: false; error: string };

const refused = (message: string, field: string, why: string): { ok: false; error: string } => ({ ok: false, error: `${message}: ${field}: ${why}` });

/**
 * The fields of a message that is an object of this schema, or why not: not an object, a version this build does
 * not know, or a field outside `known` (`v` is always known).
 */
function fieldsOf(raw: unknown, message: string, known: readonly string[]): Read<Record<string, unknown>> {
  if (!isRecord(raw)) return { ok: false, error: `${message}: must be an object with ${['v', ...known].join(', ')}` };
  if (!knownSchema(raw)) return refused(message, 'v', `this build reads schema version ${SCHEMA_VERSION} (or none: the previous release), got ${JSON.stringify(raw.v)}`);
  for (const name of Object.keys(raw)) {
    if (name !== 'v' && !known.includes(name)) return refused(message, name, `not a field of this message (it takes ${['v', ...known].join(', ')})`);
  }
  return { ok: true, value: raw };
}

/** The members list at `field`, checked as a pool update's (every member a {name, address}); the issues, or null. */
function membersIssue(value: unknown, field: string): string | null {
  const r = validateMembers(value, field);
  return r.ok ? null : formatIssues(r.issues).replace(/\n/g, '; ');
}

/** `{v, serviceUid}` of subscribe and unsubscribe. */
export function readServiceRef(raw: unknown, message = 'subscribe'): Read<{ serviceUid: string }> {
  const f = fieldsOf(raw, message, ['serviceUid']);
  if (!f.ok) return f;
  const { serviceUid } = f.value;
  if (typeof serviceUid !== 'string' || serviceUid === '') return refused(message, 'serviceUid', 'must be a service uid');
  return { ok: true, value: { serviceUid } };
}

/** A pool's members message (every member or a delta). */
export function readPoolMembers(raw: unknown): Read<PoolMembersMessage> {
  const m = 'poolMembers';
  const f = fieldsOf(raw, m, ['pool', 'revision', 'servers', 'delta']);
  if (!f.ok) return f;
  const { pool, revision, servers, delta: d } = f.value;
  if (typeof pool !== 'string' || pool === '') return refused(m, 'pool', 'must be a pool name');
  if (!isNonNegativeInteger(revision)) return refused(m, 'revision', 'must be a pool revision (an integer from 0)');
  if (servers === undefined && d === undefined) return refused(m, 'servers', 'required (or delta)');
  if (servers !== undefined) {
    const issue = membersIssue(servers, 'servers');
    if (issue) return { ok: false, error: `${m}: ${issue}` };
  }
  if (d !== undefined) {
    if (!isRecord(d)) return refused(m, 'delta', 'must be an object {base, upsert, remove}');
    for (const name of Object.keys(d)) if (!['base', 'upsert', 'remove'].includes(name)) return refused(m, `delta.${name}`, 'not a field of a delta (it takes base, upsert, remove)');
    if (!isNonNegativeInteger(d.base)) return refused(m, 'delta.base', 'must be a pool revision (an integer from 0)');
    const issue = membersIssue(d.upsert, 'delta.upsert');
    if (issue) return { ok: false, error: `${m}: ${issue}` };
    if (!Array.isArray(d.remove) || !d.remove.every((n) => typeof n === 'string' && n !== '')) return refused(m, 'delta.remove', 'must be a list of server names');
  }
  const delta = d as PoolMembersMessage['delta'] | undefined;
  return { ok: true, value: { pool, revision, ...(servers !== undefined ? { servers: servers as PoolMembersMessage['servers'] } : {}), ...(delta ? { delta } : {}) } };
}

/** A controller's report to its pool. */
export function readPoolReport(raw: unknown): Read<PoolReport> {
  const m = 'report';
  const f = fieldsOf(raw, m, ['serviceUid', 'revision', 'converged', 'error']);
  if (!f.ok) return f;
  const { serviceUid, revision, converged, error } = f.value;
  if (typeof serviceUid !== 'string' || serviceUid === '') return refused(m, 'serviceUid', 'must be a service uid');
  if (!isNonNegativeInteger(revision)) return refused(m, 'revision', 'must be a pool revision (an integer from 0)');
  if (typeof converged !== 'boolean') return refused(m, 'converged', 'must be true or false');
  if (error !== undefined && typeof error !== 'string') return refused(m, 'error', 'must be a message');
  return { ok: true, value: { serviceUid, revision, converged, ...(typeof error === 'string' ? { error } : {}) } };
}

/** The identifiers a superseded load balancer pass created. */
export function readSupersededCreates(raw: unknown): Read<{ identifiers: string[] }> {
  const m = 'supersededCreates';
  const f = fieldsOf(raw, m, ['identifiers']);
  if (!f.ok) return f;
  const { identifiers } = f.value;
  if (!Array.isArray(identifiers)) return refused(m, 'identifiers', 'must be a list of Engine identifiers');
  const bad = identifiers.findIndex((id) => typeof id !== 'string' || id === '');
  if (bad >= 0) return refused(m, `identifiers[${bad}]`, 'must be an Engine identifier');
  return { ok: true, value: { identifiers: identifiers as string[] } };
}

/** A delivery round's end, from the round to its pool (`round`: the round's workflow id). */
export function readRoundEnded(raw: unknown): Read<{ round: string; revision: number }> {
  const m = 'roundEnded';
  const f = fieldsOf(raw, m, ['round', 'revision']);
  if (!f.ok) return f;
  const { round, revision } = f.value;
  if (typeof round !== 'string' || round === '') return refused(m, 'round', "must be the round's workflow id");
  if (!isNonNegativeInteger(revision)) return refused(m, 'revision', 'must be a pool revision (an integer from 0)');
  return { ok: true, value: { round, revision } };
}

/** `wake`: nothing but `v` (worker/wake.ts). */
export function readWake(raw: unknown): Read<Record<string, never>> {
  const f = fieldsOf(raw, 'wake', []);
  return f.ok ? { ok: true, value: {} } : f;
}
