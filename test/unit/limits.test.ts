/**
 * The pure parts of designing for Temporal's limits: pools sending subscribers what changed instead of every member,
 * results listing a bounded number of objects, and the concurrency limit that bounds pending activities and signals.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { concurrencyLimit, type ObjectStatus } from '../../domain';
import { withinPayloadLimit } from '../../activities/failures';
import { ControllerState } from '../../workflows/controller-state';
import { applyPoolDelta } from '../../domain';
import { MAX_ERRORS_CARRIED, MAX_REPORT_ERROR, POOL_CHANGE_LOG, PoolState } from '../../workflows/legacy/pool-state';
import { listedObjects } from '../../workflows/status-book';

const node = (i: number, address = `10.0.0.${i}`) => ({ name: `node-${String(i).padStart(4, '0')}`, address });

describe('PoolState.messageFor: deltas', () => {
  test('a new subscriber gets every member; after a join it gets only the joining member, based on what it was sent', () => {
    const st = new PoolState('nodes');
    st.set([node(1), node(2)]);
    st.subscribe('svc');
    assert.deepEqual(st.messageFor('svc'), { pool: 'nodes', revision: 1, servers: [node(1), node(2)] });
    st.add([node(3)]);
    assert.deepEqual(st.messageFor('svc'), { pool: 'nodes', revision: 2, delta: { base: 1, upsert: [node(3)], remove: [] } });
  });

  test('changes over several revisions merge: a member added then removed is only removed, a readdress is an upsert', () => {
    const st = new PoolState('nodes');
    st.set([node(1), node(2)]);
    st.subscribe('svc');
    st.messageFor('svc');
    st.add([node(3)]);
    st.remove(['node-0003', 'node-0001']);
    st.add([node(2, '10.9.9.9')]);
    const m = st.messageFor('svc');
    assert.deepEqual(m, { pool: 'nodes', revision: 4, delta: { base: 1, upsert: [node(2, '10.9.9.9')], remove: ['node-0001', 'node-0003'] } });
    assert.deepEqual(applyPoolDelta([node(1), node(2)], m.delta as NonNullable<typeof m.delta>), st.servers);
  });

  test('a subscriber further behind than the log, one re-subscribing, and a resync are sent every member', () => {
    const st = new PoolState('nodes');
    st.set([node(1)]);
    st.subscribe('svc');
    st.messageFor('svc');
    for (let i = 2; i <= POOL_CHANGE_LOG + 2; i++) st.add([node(i)]);
    assert.equal(st.messageFor('svc').servers?.length, POOL_CHANGE_LOG + 2);
    st.add([node(100)]);
    st.subscribe('svc');
    assert.equal(st.messageFor('svc').delta, undefined);
    st.resync();
    assert.deepEqual(Object.keys(st.messageFor('svc')).sort(), ['pool', 'revision', 'servers']);
  });

  test('what was sent and the log survive continue-as-new', () => {
    const st = new PoolState('nodes');
    st.set([node(1)]);
    st.subscribe('svc');
    st.messageFor('svc');
    st.add([node(2)]);
    const again = new PoolState('nodes', JSON.parse(JSON.stringify(st.snapshot())));
    assert.deepEqual(again.messageFor('svc'), { pool: 'nodes', revision: 2, delta: { base: 1, upsert: [node(2)], remove: [] } });
  });
});

describe('ControllerState.receiveMembers with deltas', () => {
  const spec = { serviceUid: 'svc', nameSuffix: 'web', loadBalancers: ['a'.repeat(32)], externalAddresses: ['203.0.113.10'], ports: { http: { external: 80, internal: 30080 } }, serverPool: 'nodes' };

  test('a delta on the revision it holds is applied; one on another revision makes it ask for every member again', () => {
    const st = new ControllerState('svc', undefined, () => 0);
    st.apply(spec);
    assert.deepEqual(st.pool.step(), { leave: null, join: 'nodes' });
    st.pool.joined('nodes');
    st.receiveMembers({ pool: 'nodes', revision: 1, servers: [node(1)] });
    st.receiveMembers({ pool: 'nodes', revision: 2, delta: { base: 1, upsert: [node(2)], remove: [] } });
    assert.deepEqual(st.pool.members, { pool: 'nodes', revision: 2, servers: [node(1), node(2)] });
    assert.equal(st.needsSubscription(), false);
    st.receiveMembers({ pool: 'nodes', revision: 4, delta: { base: 3, upsert: [node(4)], remove: [] } });
    assert.equal(st.pool.members?.revision, 2, 'a delta from an unknown base is not applied');
    assert.equal(st.needsSubscription(), true, 'it subscribes again, and the pool answers with every member');
  });
});

describe('listedObjects', () => {
  const obj = (i: number, state: ObjectStatus['state']): ObjectStatus => ({ loadBalancer: 'lb', kind: 'server', key: `k${i}`, name: `n${i}`, identifier: `id${i}`, state, updatedAt: 0 });

  test('lists everything up to the limit, past it only what is not ready, and counts the rest', () => {
    const few = [obj(1, 'Deployed'), obj(2, 'Pending')];
    assert.deepEqual(listedObjects(few, 0, 2), { objects: few, objectsOmitted: 0 });
    const many = [obj(1, 'Deployed'), obj(2, 'Pending'), obj(3, 'Updated'), obj(4, 'DeploymentError')];
    assert.deepEqual(listedObjects(many, 5, 2), { objects: [obj(2, 'Pending'), obj(4, 'DeploymentError')], objectsOmitted: 7 });
    assert.deepEqual(listedObjects(many, 0, 1), { objects: [obj(2, 'Pending')], objectsOmitted: 3 });
  });
});

describe('concurrencyLimit', () => {
  test('never runs more than max at once, runs all in arrival order, and hands a freed place to the next waiter', async () => {
    const limit = concurrencyLimit(2);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const release: (() => void)[] = [];
    const runs = [0, 1, 2, 3, 4].map((i) =>
      limit(async () => {
        started.push(i);
        running++;
        most = Math.max(most, running);
        await new Promise<void>((r) => release.push(r));
        running--;
        return i;
      }),
    );
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setImmediate(r));
      release.shift()?.();
    }
    assert.deepEqual(await Promise.all(runs), [0, 1, 2, 3, 4]);
    assert.deepEqual(started, [0, 1, 2, 3, 4]);
    assert.equal(most, 2);
    assert.throws(() => concurrencyLimit(0), /positive integer/);
  });
});

describe('withinPayloadLimit', () => {
  test('passes a result that fits; fails one that does not non-retryably, naming it and its size', () => {
    const small = { objects: ['a'] };
    assert.equal(withinPayloadLimit('x', small, 100), small);
    assert.throws(
      () => withinPayloadLimit('the observation of svc on lb (3 objects)', { objects: ['a'.repeat(200)] }, 100),
      (err: unknown) =>
        err instanceof ApplicationFailure &&
        err.type === 'PayloadTooLarge' &&
        err.nonRetryable === true &&
        /^the observation of svc on lb \(3 objects\) is 0\.00 MiB, more than Temporal's 2 MiB payload limit allows \(at most 100 bytes per activity result\)$/.test(err.message),
    );
  });
});

describe('PoolState.takeOwed: delivery rounds', () => {
  test('takes at most `limit` subscribers in the order they became owed; the rest stay owed, in order, across a snapshot', () => {
    const st = new PoolState('nodes');
    st.set([node(1)]);
    for (const uid of ['svc-c', 'svc-a', 'svc-d', 'svc-b']) st.subscribe(uid);
    assert.deepEqual(st.takeOwed(2), ['svc-c', 'svc-a']);
    assert.equal(st.status().pendingDeliveries, 2);
    // Owed again: svc-c goes behind those still owed; svc-d, owed again while owed, keeps its place.
    st.subscribe('svc-c');
    st.subscribe('svc-d');
    const again = new PoolState('nodes', JSON.parse(JSON.stringify(st.snapshot())));
    assert.deepEqual(again.takeOwed(2), ['svc-d', 'svc-b']);
    assert.deepEqual(again.takeOwed(), ['svc-c']);
    assert.deepEqual(again.takeOwed(), []);
  });

  test("order 'uid' (runs from before the patch pool-owed-in-arrival-order) takes them in uid order", () => {
    const st = new PoolState('nodes');
    st.set([node(1)]);
    for (const uid of ['svc-c', 'svc-a', 'svc-d', 'svc-b']) st.subscribe(uid);
    assert.deepEqual(st.takeOwed(3, 'uid'), ['svc-a', 'svc-b', 'svc-c']);
    assert.deepEqual(st.takeOwed(3, 'uid'), ['svc-d']);
  });

  test('a change after every round (members changing faster than a fan-out ends): in arrival order every subscriber is reached within one pass over them; in uid order the last uids never are', () => {
    const reached = (order: 'arrival' | 'uid') => {
      const st = new PoolState('nodes');
      st.set([node(1)]);
      const uids = ['svc-1', 'svc-2', 'svc-3', 'svc-4', 'svc-5', 'svc-6'];
      for (const uid of uids) st.subscribe(uid);
      st.takeOwed();
      const seen = new Set<string>();
      let afterThree = 0;
      for (let round = 1; round <= 12; round++) {
        st.set(round % 2 === 0 ? [node(1)] : [node(1), node(2)]);
        for (const uid of st.takeOwed(2, order)) seen.add(uid);
        if (round === 3) afterThree = seen.size;
      }
      return { afterThree, all: [...seen].sort() };
    };
    assert.deepEqual(reached('arrival'), { afterThree: 6, all: ['svc-1', 'svc-2', 'svc-3', 'svc-4', 'svc-5', 'svc-6'] });
    assert.deepEqual(reached('uid'), { afterThree: 2, all: ['svc-1', 'svc-2'] });
  });
});

describe('PoolState.snapshot: the continue-as-new input within 2 MiB', () => {
  /** A pool of 3 nodes whose subscribers were each sent the members and reported on them. */
  const pool = (uids: string[], report: (uid: string) => { converged: boolean; error?: string }) => {
    const st = new PoolState('nodes');
    st.set([node(1), node(2), node(3)]);
    for (const uid of uids) {
      st.subscribe(uid);
      st.messageFor(uid);
      st.report({ serviceUid: uid, revision: 1, ...report(uid) });
    }
    st.takeOwed();
    return st;
  };
  const bytes = (st: PoolState) => Buffer.byteLength(JSON.stringify(st.snapshot()));
  // Kubernetes' service uids: 36 characters.
  const k8sUids = (n: number) => Array.from({ length: n }, (_, i) => `${i.toString(16).padStart(8, '0')}-4b2a-4c1e-9f3d-6a7b8c9d0e1f`);

  test('per subscriber: about 100 bytes with the bench\'s 15-character uids, about 145 with Kubernetes\' 36-character ones; 10,000 Kubernetes services fit', (t) => {
    const bench = bytes(pool(Array.from({ length: 5000 }, (_, i) => `bench-life-${i}`), () => ({ converged: true }))) / 5000;
    const k8s = bytes(pool(k8sUids(10_000), () => ({ converged: true })));
    t.diagnostic(`${bench.toFixed(1)} bytes per subscriber with bench uids; ${(k8s / 10_000).toFixed(1)} with Kubernetes uids (${(k8s / 2 ** 20).toFixed(2)} MiB at 10,000)`);
    assert.ok(bench > 80 && bench < 120, `${bench} bytes per subscriber`);
    assert.ok(k8s / 10_000 > 140 && k8s / 10_000 < 180, `${k8s / 10_000} bytes per subscriber`);
    assert.ok(k8s < 2 * 2 ** 20 * 0.85, `${k8s} bytes at 10,000 subscribers`);
  });

  test(`every subscriber failing with a long error (an Engine outage): texts are cut to ${MAX_REPORT_ERROR} characters and the first ${MAX_ERRORS_CARRIED} carried; every outcome survives`, () => {
    const uids = k8sUids(10_000);
    const long = `Engine 503 on lb-1: ${'x'.repeat(2_000)}`;
    const failing = pool(uids, () => ({ converged: false, error: long }));
    const textless = pool(uids, () => ({ converged: false }));
    // In this run: every error kept, cut.
    const status = failing.status().services;
    assert.ok(status.every((s) => s.last?.error === `${long.slice(0, MAX_REPORT_ERROR)}…`));
    // Across continue-as-new: the texts add at most MAX_ERRORS_CARRIED of them.
    assert.ok(bytes(failing) - bytes(textless) <= MAX_ERRORS_CARRIED * (MAX_REPORT_ERROR + 20), `${bytes(failing) - bytes(textless)} bytes of errors`);
    const again = new PoolState('nodes', JSON.parse(JSON.stringify(failing.snapshot())));
    const restored = again.status().services;
    assert.equal(restored.length, uids.length);
    assert.ok(restored.every((s) => s.convergedRevision === null && s.last?.revision === 1 && s.last.converged === false));
    assert.equal(restored.filter((s) => s.last?.error !== undefined).length, MAX_ERRORS_CARRIED);
    assert.deepEqual(
      uids.filter((uid) => restored.find((s) => s.serviceUid === uid)?.last?.error !== undefined),
      uids.slice(0, MAX_ERRORS_CARRIED),
    );
  });
});
