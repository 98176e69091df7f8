import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ControllerState } from '../../workflows/controller-state';
import { PoolSubscription } from '../../workflows/pool-subscription';

const node = (i: number) => ({ name: `node-${i}`, address: `10.0.0.${i}` });

function poolSpec(serverPool = 'nodes') {
  return { serviceUid: 'svc', nameSuffix: 'web', loadBalancers: ['a'.repeat(32)], externalAddresses: ['203.0.113.10'], ports: { http: { external: 80, internal: 30080 } }, serverPool };
}

describe('PoolSubscription transitions', () => {
  test('inline servers: ready at once, no step, nothing in the snapshot', () => {
    const sub = new PoolSubscription();
    sub.want(null);
    assert.equal(sub.ready(), true);
    assert.equal(sub.needsStep(), false);
    assert.equal(sub.forPass(), null);
    assert.deepEqual(sub.snapshot(), {});
  });

  test('wanting a pool: one step joins it; members of the wanted pool make it ready, older or foreign ones are ignored', () => {
    const sub = new PoolSubscription();
    sub.want('nodes');
    assert.equal(sub.ready(), false);
    assert.equal(sub.needsStep(), true);
    assert.deepEqual(sub.step(), { leave: null, join: 'nodes' });
    sub.joined('nodes');
    assert.equal(sub.needsStep(), false);
    assert.equal(sub.receive({ pool: 'other', revision: 9, servers: [node(9)] }), 'ignored');
    assert.equal(sub.receive({ pool: 'nodes', revision: 2, servers: [node(1)] }), 'taken');
    assert.equal(sub.receive({ pool: 'nodes', revision: 2, servers: [node(2)] }), 'ignored');
    assert.equal(sub.receive({ pool: 'nodes', revision: 1, servers: [node(3)] }), 'ignored');
    assert.equal(sub.ready(), true);
    assert.deepEqual(sub.forPass(), { pool: 'nodes', revision: 2, servers: [node(1)] });
    assert.equal(sub.newerThan(1), true);
    assert.equal(sub.newerThan(2), false);
  });

  test('a delta from a base it does not hold asks to subscribe again, and the step re-joins the same pool', () => {
    const sub = new PoolSubscription();
    sub.want('nodes');
    sub.joined('nodes');
    assert.equal(sub.receive({ pool: 'nodes', revision: 4, delta: { base: 3, upsert: [node(4)], remove: [] } }), 'resubscribe');
    assert.equal(sub.members, null);
    assert.equal(sub.needsStep(), true);
    assert.deepEqual(sub.step(), { leave: null, join: 'nodes' });
    assert.equal(sub.needsStep(), false, 'the step consumed the request to subscribe again');
  });

  test('a new spec naming another pool drops the old members and leaves the old pool before joining the new one', () => {
    const sub = new PoolSubscription();
    sub.want('nodes');
    sub.joined('nodes');
    sub.receive({ pool: 'nodes', revision: 1, servers: [node(1)] });
    sub.want('edge');
    assert.equal(sub.members, null);
    assert.deepEqual(sub.step(), { leave: 'nodes', join: 'edge' });
    sub.left();
    assert.equal(sub.subscribed, null);
    sub.joined('edge');
    assert.equal(sub.subscribed, 'edge');
  });

  test('a missing pool is not tried again until a resync or a new spec', () => {
    const sub = new PoolSubscription();
    sub.want('nodes');
    sub.step();
    sub.failed('nodes');
    assert.equal(sub.missing, true);
    assert.equal(sub.needsStep(), false);
    sub.resync();
    assert.equal(sub.missing, false);
    assert.deepEqual(sub.step(), { leave: null, join: 'nodes' });
    sub.failed('nodes');
    sub.want('nodes');
    assert.equal(sub.needsStep(), true, 'an apply tries the pool again');
  });
});

describe('ControllerState with a pool: continue-as-new snapshots', () => {
  test('a snapshot as the previous build wrote it (flat pool fields) restores the subscription and is written back the same', () => {
    // The shape workflows/controller-state.ts wrote before the pool subscription had a module of its own.
    const previous = {
      spec: poolSpec(),
      revision: 3,
      passCount: 5,
      lastResult: null,
      failures: 0,
      dirty: true,
      deleting: false,
      retryAt: null,
      pool: { pool: 'nodes', revision: 7, servers: [node(1), node(2)] },
      subscribedPool: 'nodes',
      poolMissing: null,
      resubscribe: false,
    };
    const st = new ControllerState('svc', JSON.parse(JSON.stringify(previous)), () => 0);
    assert.equal(st.poolName, 'nodes');
    assert.equal(st.pool.subscribed, 'nodes');
    assert.equal(st.needsSubscription(), false);
    assert.equal(st.poolReady(), true);
    assert.equal(st.hasWork(), true);
    assert.deepEqual(st.beginPass().pool, previous.pool);
    assert.equal(Object.hasOwn(st, 'subscribedPool'), false, 'the flat fields do not land on the state object');
    // The pass in flight does not survive continue-as-new: its work is written as due, as the phase alone (the flat
    // work fields are read, no longer written); the pool fields are written back the same.
    const { failures: _f, dirty: _d, deleting: _del, retryAt: _r, ...rest } = previous;
    assert.deepEqual(st.snapshot(), { ...rest, passCount: 6, work: { tag: 'due', failures: 0 } });
  });

  test('a snapshot from before pools restores an inline-servers controller with nothing to subscribe to', () => {
    const before = { spec: { ...poolSpec(), serverPool: undefined, servers: [node(1)] }, revision: 1, passCount: 1, lastResult: null, failures: 0, dirty: false, deleting: false, retryAt: null };
    const st = new ControllerState('svc', JSON.parse(JSON.stringify(before)), () => 0);
    assert.equal(st.poolName, null);
    assert.equal(st.needsSubscription(), false);
    const { failures: _f, dirty: _d, deleting: _del, retryAt: _r, ...rest } = JSON.parse(JSON.stringify(before)) as typeof before;
    assert.deepEqual(st.snapshot(), { ...rest, work: { tag: 'idle' } });
  });

  test('a missing pool fails the revision once; a resync asks again', () => {
    const st = new ControllerState('svc', undefined, () => 42);
    st.apply(poolSpec());
    assert.deepEqual(st.pool.step(), { leave: null, join: 'nodes' });
    st.poolFailed('nodes', 'serverPool nodes: no such server pool');
    assert.equal(st.needsSubscription(), false);
    assert.equal(st.hasWork(), false);
    assert.equal(st.phase, 'Failed');
    assert.equal(st.snapshot().poolMissing, 'nodes');
    st.requestResync();
    assert.equal(st.needsSubscription(), true);
  });
});
