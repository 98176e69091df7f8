/**
 * Pool-delta planning (domain/pool-index.ts) and the controller's keeping of the index (workflows/controller-state.ts):
 * which changes a delta pass takes, which call for the full pass, and that the index survives continue-as-new and is
 * dropped by whatever calls for the full pass.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { advancePoolIndex, indexBytes, MAX_DELTA_SERVERS, MAX_INDEX_BYTES, planPoolDelta, poolIndexBytes, readPoolIndex, validateSpec, type PoolIndex, type ServiceSpec } from '../../domain';
import type { PassResult } from '../../contract';
import { ControllerState } from '../../workflows/controller-state';

const LB_A = 'a'.repeat(32);
const LB_B = 'b'.repeat(32);
const UID = 'svc-delta';

function rawSpec(): Record<string, unknown> {
  return {
    serviceUid: UID,
    nameSuffix: 'web',
    loadBalancers: [LB_B, LB_A],
    externalAddresses: ['203.0.113.10'],
    ports: { http: { external: 80, internal: 30080 }, https: { external: 443, internal: 30443 } },
    serverPool: 'nodes',
  };
}

function spec(): ServiceSpec {
  const r = validateSpec(rawSpec());
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.spec;
}

const id = (s: string) => s.padEnd(32, '0');

/** The index of a converged pass over node-1 and node-2, revision 1 of the spec, pool revision 1. */
function index(): PoolIndex {
  const lb = (p: string) => ({
    'backend:http': id(`${p}b1`),
    'backend:https': id(`${p}b2`),
    'server:http:node-1': id(`${p}11`),
    'server:https:node-1': id(`${p}12`),
    'server:http:node-2': id(`${p}21`),
    'server:https:node-2': id(`${p}22`),
  });
  return { revision: 1, pool: 'nodes', poolRevision: 1, members: { 'node-1': '10.0.0.11', 'node-2': '10.0.0.12' }, loadBalancers: { [LB_A]: lb('a'), [LB_B]: lb('b') } };
}

const NODE_1 = { name: 'node-1', address: '10.0.0.11' };
const NODE_2 = { name: 'node-2', address: '10.0.0.12' };
const NODE_3 = { name: 'node-3', address: '10.0.0.13' };

describe('planPoolDelta', () => {
  test('a join creates the joining member\'s Server under each known Backend (ports x load balancers) and destroys nothing', () => {
    const plan = planPoolDelta(index(), spec(), [NODE_1, NODE_2, NODE_3]);
    assert.ok(!('full' in plan));
    assert.deepEqual(plan.joins, [NODE_3]);
    assert.deepEqual(
      plan.creates.map((c) => [c.loadBalancer, c.backend, c.desired.key, c.desired.name, c.desired.fields.ip, c.desired.fields.port]),
      [
        [LB_A, id('ab1'), 'server:http:node-3', 'node-3.http.web', '10.0.0.13', 30080],
        [LB_A, id('ab2'), 'server:https:node-3', 'node-3.https.web', '10.0.0.13', 30443],
        [LB_B, id('bb1'), 'server:http:node-3', 'node-3.http.web', '10.0.0.13', 30080],
        [LB_B, id('bb2'), 'server:https:node-3', 'node-3.https.web', '10.0.0.13', 30443],
      ],
    );
    assert.deepEqual(plan.destroys, []);
  });

  test('a leave destroys exactly the leaving member\'s Servers by the identifiers the index holds', () => {
    const plan = planPoolDelta(index(), spec(), [NODE_2]);
    assert.ok(!('full' in plan));
    assert.deepEqual(plan.leaves, ['node-1']);
    assert.deepEqual(plan.creates, []);
    assert.deepEqual(
      plan.destroys.map((d) => [d.loadBalancer, d.key, d.identifier, d.name]),
      [
        [LB_A, 'server:http:node-1', id('a11'), 'node-1.http.web'],
        [LB_A, 'server:https:node-1', id('a12'), 'node-1.https.web'],
        [LB_B, 'server:http:node-1', id('b11'), 'node-1.http.web'],
        [LB_B, 'server:https:node-1', id('b12'), 'node-1.https.web'],
      ],
    );
  });

  test('the full pass is asked for when a member changed its address, a Backend or Server is missing from the index, the load balancers differ, or the delta is too large', () => {
    assert.deepEqual(planPoolDelta(index(), spec(), [{ name: 'node-1', address: '10.0.0.99' }, NODE_2]), { full: 'member node-1 changed its address' });
    const noBackend = index();
    delete noBackend.loadBalancers[LB_B]?.['backend:https'];
    assert.deepEqual(planPoolDelta(noBackend, spec(), [NODE_1, NODE_2, NODE_3]), { full: `no Backend of port https on ${LB_B} in the index` });
    const noServer = index();
    delete noServer.loadBalancers[LB_A]?.['server:http:node-1'];
    assert.deepEqual(planPoolDelta(noServer, spec(), [NODE_2]), { full: `no Server server:http:node-1 on ${LB_A} in the index` });
    const oneLb = index();
    delete oneLb.loadBalancers[LB_B];
    assert.deepEqual(planPoolDelta(oneLb, spec(), [NODE_1, NODE_2, NODE_3]), { full: "the index is not of the spec's load balancers" });
    const many = Array.from({ length: MAX_DELTA_SERVERS / 4 + 1 }, (_, i) => ({ name: `n-${i}`, address: `10.1.${Math.floor(i / 250)}.${(i % 250) + 1}` }));
    const big = planPoolDelta(index(), spec(), [NODE_1, NODE_2, ...many]);
    assert.ok('full' in big && /more than a delta pass writes/.test(big.full), JSON.stringify(big));
  });

  test('advancePoolIndex adds what was created, removes what was destroyed, and takes the new members and pool revision', () => {
    const next = advancePoolIndex(index(), {
      poolRevision: 3,
      members: [NODE_2, NODE_3],
      created: [{ loadBalancer: LB_A, key: 'server:http:node-3', identifier: id('a31') }],
      destroyed: [{ loadBalancer: LB_A, key: 'server:http:node-1' }],
    });
    assert.equal(next.poolRevision, 3);
    assert.deepEqual(next.members, { 'node-2': '10.0.0.12', 'node-3': '10.0.0.13' });
    assert.equal(next.loadBalancers[LB_A]?.['server:http:node-3'], id('a31'));
    assert.equal(next.loadBalancers[LB_A]?.['server:http:node-1'], undefined);
    assert.equal(index().loadBalancers[LB_A]?.['server:http:node-1'], id('a11'), 'the old index is left as it was');
  });

  test('readPoolIndex takes a well-formed index and refuses anything else', () => {
    assert.deepEqual(readPoolIndex(JSON.parse(JSON.stringify(index()))), index());
    assert.equal(readPoolIndex(undefined), null);
    assert.equal(readPoolIndex({ ...index(), revision: -1 }), null);
    assert.equal(readPoolIndex({ ...index(), loadBalancers: { [LB_A]: { 'frontend:http': id('x') } } }), null);
    assert.equal(readPoolIndex({ ...index(), members: { 'node-1': 7 } }), null);
  });
});

describe('ControllerState and the index', () => {
  const members = (revision: number, servers = [NODE_1, NODE_2]) => ({ v: 2, pool: 'nodes', revision, servers });

  /** A controller whose first (full) pass converged over pool revision 1 with index(). */
  function converged(): ControllerState {
    const st = new ControllerState(UID, undefined, () => 1000);
    st.apply(rawSpec());
    st.pool.joined('nodes');
    st.receiveMembers(members(1));
    const pass = st.beginPass();
    const r: PassResult = { serviceUid: UID, revision: 1, converged: true, status: {}, loadBalancers: {}, objects: [], pass: pass.number, finishedAt: 1000, pool: { name: 'nodes', revision: 1 } };
    st.endPass(pass, r, { index: index() });
    return st;
  }

  test('new members after a converged full pass make a delta pass due; the index survives continue-as-new', () => {
    const st = converged();
    st.receiveMembers(members(2, [NODE_1, NODE_2, NODE_3]));
    assert.deepEqual((st.poolDelta() as { joins: unknown[] }).joins, [NODE_3]);
    const again = new ControllerState(UID, JSON.parse(JSON.stringify(st.snapshot())), () => 1000);
    assert.deepEqual(again.poolIndex, index());
    assert.deepEqual((again.poolDelta() as { joins: unknown[] }).joins, [NODE_3]);
  });

  test('an apply, a resync, a full pass starting and a failed pass each drop the index: the full pass runs', () => {
    const applied = converged();
    applied.apply(rawSpec());
    assert.equal(applied.poolIndex, null);
    const resynced = converged();
    resynced.requestResync();
    assert.equal(resynced.poolIndex, null);
    const full = converged();
    full.receiveMembers(members(2, [NODE_1, NODE_2, NODE_3]));
    full.beginPass();
    assert.equal(full.poolIndex, null);
    const failed = converged();
    failed.receiveMembers(members(2, [NODE_1, NODE_2, NODE_3]));
    const pass = failed.beginPass({ delta: true });
    failed.endPass(pass, { serviceUid: UID, revision: 1, converged: false, status: {}, loadBalancers: {}, objects: [], pass: pass.number, finishedAt: 1000, error: 'x' });
    assert.equal(failed.poolIndex, null);
    assert.equal(failed.poolDelta(), null);
  });

  test('a delta pass is not cancelled by newer members (they follow it), but is by a new spec', () => {
    const st = converged();
    st.receiveMembers(members(2, [NODE_1, NODE_2, NODE_3]));
    const pass = st.beginPass({ delta: true });
    st.receiveMembers(members(3, [NODE_2, NODE_3]));
    assert.equal(st.isSuperseded(pass), false);
    st.apply(rawSpec());
    assert.equal(st.isSuperseded(pass), true);
  });
});

test('the identifiers of Servers a delta created wait for the next full pass; those a delta destroyed are forgotten', () => {
  const st = new ControllerState(UID, undefined, () => 1000);
  st.noteSupersededCreates(['a1', 'a2', 'a3']);
  st.forgetCreates(['a2']);
  assert.deepEqual(st.supersededCreates, ['a1', 'a3']);
  assert.deepEqual(new ControllerState(UID, JSON.parse(JSON.stringify({ ...st.snapshot(), spec: null })), () => 1000).supersededCreates, ['a1', 'a3']);
});

test('the index is measured as the JSON it travels as, and one past MAX_INDEX_BYTES (5,000 members of the validator\'s longest names) is not kept: the full pass runs', () => {
  const ids = index().loadBalancers[LB_A] as Record<string, string>;
  assert.ok(indexBytes(ids) >= JSON.stringify(ids).length && indexBytes(ids) <= JSON.stringify(ids).length + 1);
  const json = JSON.stringify({ members: index().members, loadBalancers: index().loadBalancers }).length;
  assert.ok(poolIndexBytes(index()) >= json && poolIndexBytes(index()) < json + 300, `${poolIndexBytes(index())} vs ${json}`);
  const long = (i: number) => `n${String(i).padStart(5, '0')}`.padEnd(253, 'x');
  const huge: PoolIndex = { ...index(), members: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [long(i), `10.2.${Math.floor(i / 250)}.${(i % 250) + 1}`])) };
  assert.ok(poolIndexBytes(huge) > MAX_INDEX_BYTES);
  const st = new ControllerState(UID, undefined, () => 1000);
  st.apply(rawSpec());
  st.pool.joined('nodes');
  st.receiveMembers({ pool: 'nodes', revision: 1, servers: [NODE_1, NODE_2] });
  const pass = st.beginPass();
  st.endPass(pass, { serviceUid: UID, revision: 1, converged: true, status: {}, loadBalancers: {}, objects: [], pass: pass.number, finishedAt: 1000, pool: { name: 'nodes', revision: 1 } }, { index: huge });
  assert.equal(st.poolIndex, null);
});
