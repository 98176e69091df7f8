/**
 * The thin pool's state (workflows/pool-members.ts): what each delivery round sends. The change since the previous
 * round's revision, merged, when the log covers it and it is smaller than the members; every member for the first
 * round, a resync, or a gap the log does not cover. And the controller's side (workflows/pool-subscription.ts): a
 * merged change applies to any revision at or after its base, and one from a later base asks for every member.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ServerSpec } from '../../domain';
import { POOL_CHANGE_LOG, PoolMembersState } from '../../workflows/pool-members';
import { PoolSubscription } from '../../workflows/pool-subscription';

const node = (n: number, last = 10 + n): ServerSpec => ({ name: `node-${n}`, address: `10.0.0.${last}` });
const ids = (n: number) => `round-${n}`;

test('the first round sends every member; the next the change since it; two changes before a round go merged', () => {
  const st = new PoolMembersState('p');
  assert.equal(st.roundDue(), false, 'revision 0 (no members ever set) is not sent');
  st.set([node(1), node(2), node(3)]);
  assert.deepEqual(st.beginRound(ids).members, { servers: [node(1), node(2), node(3)] });
  assert.equal(st.roundDue(), false);
  st.add([node(4)]);
  assert.deepEqual(st.beginRound(ids).members, { delta: { base: 1, upsert: [node(4)], remove: [] } });
  st.remove(['node-1']);
  st.add([node(2, 99), node(5)]);
  const { members, round } = st.beginRound(ids);
  assert.deepEqual(members, { delta: { base: 2, upsert: [node(2, 99), node(5)], remove: ['node-1'] } });
  assert.deepEqual(round, { workflowId: 'round-3', revision: 4, number: 3 });
});

test('one round in flight: changes while a round runs wait for its end, then go out in one round of the newest revision; a snapshot carries the running round', () => {
  const st = new PoolMembersState('p');
  st.set([node(1), node(2), node(3)]);
  const first = st.beginRound(ids).round;
  assert.deepEqual({ due: st.roundDue(), startable: st.roundStartable() }, { due: false, startable: false });
  st.add([node(4)]);
  st.add([node(5)]);
  assert.deepEqual({ due: st.roundDue(), startable: st.roundStartable() }, { due: true, startable: false }, 'round 1 still runs');
  // Carried over by continue-as-new: the next run waits for the same round.
  const next = new PoolMembersState('p', st.snapshot());
  assert.equal(next.roundStartable(), false);
  next.roundEnded('round-9');
  assert.equal(next.roundStartable(), false, 'the end of a round that is not the newest changes nothing');
  next.roundEnded(first.workflowId);
  assert.equal(next.roundStartable(), true);
  assert.deepEqual(next.status().round, { ...first, running: false });
  const { round, members } = next.beginRound(ids);
  assert.deepEqual({ round, members }, { round: { workflowId: 'round-2', revision: 3, number: 2 }, members: { delta: { base: 1, upsert: [node(4), node(5)], remove: [] } } });
  assert.deepEqual({ running: next.status().round?.running, due: next.roundDue() }, { running: true, due: false });
});

test('a resync does not wait for the running round (one that never ends, terminated by hand, holds nothing): it starts a round of every member', () => {
  const st = new PoolMembersState('p');
  st.set([node(1), node(2)]);
  st.beginRound(ids);
  st.add([node(3)]);
  assert.equal(st.roundStartable(), false);
  st.resync();
  assert.equal(st.roundStartable(), true);
  assert.deepEqual(st.beginRound(ids).members, { servers: [node(1), node(2), node(3)] });
});

test('a resync sends every member; a change as large as the members, or older than the log, too', () => {
  const st = new PoolMembersState('p');
  st.set([node(1), node(2)]);
  st.beginRound(ids);
  st.roundEnded('round-1');
  st.resync();
  assert.deepEqual(st.beginRound(ids).members, { servers: [node(1), node(2)] });
  st.set([node(3), node(4)]);
  assert.deepEqual(st.beginRound(ids).members, { servers: [node(3), node(4)] }, 'every member changed');
  for (let i = 0; i <= POOL_CHANGE_LOG; i++) st.add([node(10, 50 + i)]);
  assert.deepEqual(st.beginRound(ids).members, { servers: st.servers }, 'more changes than the log keeps');
});

test("a merged change applies at its base and at any later revision; from a base after the controller's it asks for every member", () => {
  const at = (revision: number, servers: ServerSpec[]) => {
    const s = new PoolSubscription({ pool: { pool: 'p', revision, servers }, subscribedPool: 'p' });
    s.restoreWanted('p');
    return s;
  };
  const delta = { base: 1, upsert: [node(3), node(2, 99)], remove: ['node-1'] };
  // At revision 1 (the base) and at revision 2 (node-3 already joined): the same members at revision 3.
  for (const s of [at(1, [node(1), node(2)]), at(2, [node(1), node(2), node(3)])]) {
    assert.equal(s.receive({ pool: 'p', revision: 3, delta }), 'taken');
    assert.deepEqual(s.members?.servers.map((m) => `${m.name} ${m.address}`).sort(), ['node-2 10.0.0.99', 'node-3 10.0.0.13']);
  }
  const behind = at(0, []);
  assert.equal(behind.receive({ pool: 'p', revision: 3, delta }), 'resubscribe');
  assert.equal(behind.needsStep(), true, 'it reads the pool again');
});
