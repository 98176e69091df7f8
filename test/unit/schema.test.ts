/**
 * What crosses builds (contract/schema.ts, docs/architecture.md "Versions and patches"): the previous release's
 * continue-as-new inputs and signals, as its own code wrote them (test/fixtures/previous-release/, recorded by
 * test/helpers/record-previous-release.ts from a build of that release), read by this build's readers and state
 * classes; this build's `v: 2` forms read the same; a version this build does not know is refused.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { knownSchema, readPoolMembers as membersRead, readPoolReport as reportRead, readRoundEnded, readServiceRef as refRead, readSupersededCreates as createsRead, readWake, SCHEMA_VERSION, type Read } from '../../contract';
import { ControllerState, type ControllerSnapshot } from '../../workflows/controller-state';
import { PoolState, type PoolSnapshot } from '../../workflows/legacy/pool-state';
import { PoolMembersState } from '../../workflows/pool-members';

const DIR = path.resolve(__dirname, '..', '..', '..', 'test', 'fixtures', 'previous-release');
const fixture = <T>(file: string) => {
  const f = JSON.parse(readFileSync(path.join(DIR, file), 'utf8')) as { recordedFrom: string; value: T };
  assert.match(f.recordedFrom, /^88e5a3a \(88e5a3a[0-9a-f]{33}\)$/, `${file} was recorded from the previous release`);
  return f.value;
};
/** A reader's value, or null where it refused the message (the reason is tested below). */
const valueOf = <T>(read: (raw: unknown) => Read<T>) => (raw: unknown): T | null => {
  const r = read(raw);
  return r.ok ? r.value : null;
};
const readServiceRef = valueOf(refRead);
const readPoolMembers = valueOf(membersRead);
const readPoolReport = valueOf(reportRead);
const readSupersededCreates = valueOf(createsRead);
const messages = fixture<Record<'subscribe' | 'unsubscribe' | 'report' | 'poolMembersServers' | 'poolMembersDelta', Record<string, unknown>>>('messages.json');

test('the previous release\'s signals (no v) are read as they were sent', () => {
  for (const m of Object.values(messages)) assert.equal(m.v, undefined);
  assert.deepEqual(readServiceRef(messages.subscribe), messages.subscribe);
  assert.deepEqual(readServiceRef(messages.unsubscribe), messages.unsubscribe);
  assert.deepEqual(readPoolReport(messages.report), messages.report);
  assert.deepEqual(readPoolMembers(messages.poolMembersServers), messages.poolMembersServers);
  assert.deepEqual(readPoolMembers(messages.poolMembersDelta), messages.poolMembersDelta);
});

test('this build\'s signals (v: 2) are read the same, and a version this build does not know is refused', () => {
  const cases: [(raw: unknown) => unknown, Record<string, unknown>][] = [
    [readServiceRef, messages.subscribe],
    [readPoolReport, messages.report],
    [readPoolMembers, messages.poolMembersServers],
    [readPoolMembers, messages.poolMembersDelta],
    [readSupersededCreates, { identifiers: ['a', 'b'] }],
  ];
  for (const [read, m] of cases) {
    assert.deepEqual(read({ ...m, v: SCHEMA_VERSION }), m);
    assert.equal(read({ ...m, v: 3 }), null, JSON.stringify(m));
    assert.equal(read({ ...m, v: '2' }), null, JSON.stringify(m));
  }
  assert.equal(knownSchema(null), false);
  assert.equal(readPoolMembers({ pool: 'p', revision: 1 }), null, 'a members message with neither servers nor delta');
  assert.equal(readPoolReport({ serviceUid: 'u', revision: -1, converged: true }), null);
  assert.equal(readServiceRef({ serviceUid: '' }), null);
});

test('the previous release\'s controller input (no v, flat fields beside work) restores the controller, whose snapshot is this build\'s: work alone, read back the same', () => {
  const input = fixture<{ serviceUid: string; v?: number; state: ControllerSnapshot; historyLimit: number }>('controller-input.json');
  assert.equal(input.v, undefined);
  assert.deepEqual(Object.keys(input.state).filter((k) => ['failures', 'dirty', 'deleting', 'retryAt', 'work'].includes(k)).sort(), ['deleting', 'dirty', 'failures', 'retryAt', 'work']);
  const st = new ControllerState(input.serviceUid, input.state, () => 0);
  assert.equal(st.revision, input.state.revision);
  assert.equal(st.passCount, input.state.passCount);
  assert.equal(st.poolName, 'previous-release-pool');
  assert.deepEqual(st.pool.members, input.state.pool);
  assert.equal(st.pool.subscribed, 'previous-release-pool');
  const snap = st.snapshot();
  for (const flat of ['failures', 'dirty', 'deleting', 'retryAt']) assert.equal(flat in snap, false, flat);
  assert.deepEqual(snap.work, input.state.work);
  const again = new ControllerState(input.serviceUid, snap, () => 0);
  assert.deepEqual(again.status(), st.status());
  assert.deepEqual(again.snapshot(), snap);
});

test('the previous release\'s pool input (no v) restores the pool unchanged', () => {
  const input = fixture<{ name: string; v?: number; state: PoolSnapshot }>('pool-input.json');
  assert.equal(input.v, undefined);
  const st = new PoolState(input.name, input.state);
  assert.equal(st.revision, input.state.revision);
  assert.deepEqual(st.services(), Object.keys(input.state.subscribers).sort());
  assert.deepEqual(st.snapshot(), input.state);
});

test("the previous release's pool snapshot continues into today's thin pool: members and revision kept, subscribers dropped, a round of the current revision due to every member", () => {
  const input = fixture<{ name: string; v?: number; state: PoolSnapshot }>('pool-input.json');
  const st = new PoolMembersState(input.name, input.state);
  assert.deepEqual({ servers: st.servers, revision: st.revision }, { servers: input.state.servers, revision: input.state.revision });
  assert.equal(st.roundDue(), input.state.revision > 0);
  const { round, members } = st.beginRound((n) => `round-${n}`);
  assert.deepEqual(round, { workflowId: 'round-1', revision: input.state.revision, number: 1 });
  assert.deepEqual(members, { servers: input.state.servers });
  const snapshot = st.snapshot();
  assert.equal('subscribers' in snapshot, false);
  assert.deepEqual(new PoolMembersState(input.name, snapshot).snapshot(), snapshot);
});

/** The error of a refused message, or the value as a failure message when it was read. */
const errorOf = <T>(r: Read<T>) => (r.ok ? `read: ${JSON.stringify(r.value)}` : r.error);

test('a message with a field its reader does not know is refused, naming the message and the field', () => {
  assert.equal(errorOf(membersRead({ ...messages.poolMembersServers, severs: [] })), 'poolMembers: severs: not a field of this message (it takes v, pool, revision, servers, delta)');
  assert.equal(errorOf(membersRead({ ...messages.poolMembersDelta, delta: { base: 1, upsert: [], remove: [], extra: 1 } })), 'poolMembers: delta.extra: not a field of a delta (it takes base, upsert, remove)');
  assert.equal(errorOf(refRead({ serviceUid: 'u', uid: 'u' }, 'unsubscribe')), 'unsubscribe: uid: not a field of this message (it takes v, serviceUid)');
  assert.equal(errorOf(reportRead({ ...messages.report, convergd: true })), 'report: convergd: not a field of this message (it takes v, serviceUid, revision, converged, error)');
  assert.equal(errorOf(createsRead({ v: 2, identifiers: [], ids: [] })), 'supersededCreates: ids: not a field of this message (it takes v, identifiers)');
  assert.equal(errorOf(readRoundEnded({ v: 2, round: 'r', revision: 1, pool: 'p' })), 'roundEnded: pool: not a field of this message (it takes v, round, revision)');
  assert.equal(errorOf(readWake({ v: 2, now: true })), 'wake: now: not a field of this message (it takes v)');
});

test('a message with a field of the wrong type, or without a required one, is refused naming the field', () => {
  const cases: [Read<unknown>, string][] = [
    [membersRead({ pool: 'p', revision: 1 }), 'poolMembers: servers: required (or delta)'],
    [membersRead({ pool: 'p', revision: '1', servers: [] }), 'poolMembers: revision: must be a pool revision (an integer from 0)'],
    [membersRead({ revision: 1, servers: [] }), 'poolMembers: pool: must be a pool name'],
    [membersRead({ pool: 'p', revision: 1, delta: { base: 0, upsert: [], remove: [3] } }), 'poolMembers: delta.remove: must be a list of server names'],
    [membersRead({ pool: 'p', revision: 1, delta: { upsert: [], remove: [] } }), 'poolMembers: delta.base: must be a pool revision (an integer from 0)'],
    [refRead({ serviceUid: '' }), 'subscribe: serviceUid: must be a service uid'],
    [reportRead({ serviceUid: 'u', revision: 1, converged: 'yes' }), 'report: converged: must be true or false'],
    [createsRead({ identifiers: ['a', 7] }), 'supersededCreates: identifiers[1]: must be an Engine identifier'],
    [createsRead({ v: 2 }), 'supersededCreates: identifiers: must be a list of Engine identifiers'],
    [readRoundEnded({ v: 2, revision: 1 }), "roundEnded: round: must be the round's workflow id"],
    [readRoundEnded({ v: 3, round: 'r', revision: 1 }), 'roundEnded: v: this build reads schema version 2 (or none: the previous release), got 3'],
    [readWake('now'), 'wake: must be an object with v'],
  ];
  for (const [r, error] of cases) assert.equal(errorOf(r), error);
  const badMember = errorOf(membersRead({ pool: 'p', revision: 1, servers: [{ name: 'n1', adress: '10.0.0.1' }] }));
  assert.match(badMember, /^poolMembers: .*servers\[0\]\.adress/);
  assert.match(errorOf(membersRead({ pool: 'p', revision: 1, delta: { base: 0, upsert: [{ name: 'n1' }], remove: [] } })), /^poolMembers: .*delta\.upsert\[0\]\.address/);
});

test("this build's messages read: roundEnded, wake, a members message listing no member (every member removed)", () => {
  assert.deepEqual(readRoundEnded({ v: SCHEMA_VERSION, round: 'lbaas-pool/p/round/3', revision: 4 }), { ok: true, value: { round: 'lbaas-pool/p/round/3', revision: 4 } });
  assert.deepEqual(readWake({ v: SCHEMA_VERSION }), { ok: true, value: {} });
  assert.deepEqual(membersRead({ v: SCHEMA_VERSION, pool: 'p', revision: 2, servers: [] }), { ok: true, value: { pool: 'p', revision: 2, servers: [] } });
});
