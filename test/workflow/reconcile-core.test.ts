/**
 * End-to-end reconciliation on a real Temporal dev server and the Engine simulator over HTTP: what the Engine holds
 * after a pass (docs/spec.md#engine-objects, docs/spec.md#reconciliation-semantics) and what a pass writes:
 * converging from empty, adoption, no-op re-applies, drift, duplicates, and creation along the dependency graph. What
 * a pass must never touch, and passes that shrink a service, are in reconcile-scope.test.ts.
 *
 * Every test gets load balancers and a service uid of its own, and resets the simulator's request counters before
 * the pass it measures; the file's tests run one after the other, so the counters are the measured pass's alone.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  admin,
  countByName,
  describeObjects,
  expectedLines,
  idOf,
  objectsOn,
  seedConverged,
  snapshotById,
  taggedOn,
  writeRequests,
} from '../helpers/engine-state';
import { converge, FAST_READINESS, freshOn, lbSummary, n, ORACLE, reconcile, runs, stack, STATUS, useReconcileStack } from '../helpers/reconcile-kit';
import { until } from '../helpers/workflows';

useReconcileStack(FAST_READINESS);

/** A service of the test's own on `count` fresh load balancers. */
const fresh = (count: number) => freshOn('core', count);

test('converge from empty: exactly the example objects on each load balancer, all tagged and ready, with counts and merged status', async () => {
  const { uid, tag, lbs, spec } = fresh(2);
  stack.sim.resetStats();
  const r = await reconcile(spec());

  for (const lb of lbs) {
    const on = objectsOn(stack.sim, lb);
    assert.deepEqual(describeObjects(on, stack.sim), [
      `Backend ${n('http')} mode=tcp health_check="adv_check": "tcp-check" load_balancer=LB`,
      `Backend ${n('https')} mode=tcp health_check="adv_check": "tcp-check" load_balancer=LB`,
      `Bind ${n('v4', 'http')} address=203.0.113.10 port=80 ssl=false frontend=${n('http')}`,
      `Bind ${n('v4', 'https')} address=203.0.113.10 port=443 ssl=false frontend=${n('https')}`,
      `Bind ${n('v6', 'http')} address=2001:db8::10 port=80 ssl=false frontend=${n('http')}`,
      `Bind ${n('v6', 'https')} address=2001:db8::10 port=443 ssl=false frontend=${n('https')}`,
      `Frontend ${n('http')} mode=tcp load_balancer=LB default_backend=${n('http')}`,
      `Frontend ${n('https')} mode=tcp load_balancer=LB default_backend=${n('https')}`,
      `Server ${n('node-1', 'http')} ip=10.0.0.11 port=30080 check=enabled backend=${n('http')}`,
      `Server ${n('node-1', 'https')} ip=10.0.0.11 port=30443 check=enabled backend=${n('https')}`,
      `Server ${n('node-2', 'http')} ip=10.0.0.12 port=30080 check=enabled backend=${n('http')}`,
      `Server ${n('node-2', 'https')} ip=10.0.0.12 port=30443 check=enabled backend=${n('https')}`,
    ]);
    for (const o of on) {
      assert.deepEqual(o.tags, [tag], `${o.kind} ${o.name} carries exactly the service tag`);
      assert.equal(o.state, 'Deployed', `${o.kind} ${o.name} is deployed`);
    }
  }
  assert.equal(r.serviceUid, uid);
  assert.equal(r.converged, true);
  assert.equal(r.revision, null);
  assert.deepEqual(r.status, STATUS);
  for (const lb of lbs) assert.deepEqual(r.loadBalancers[lb], lbSummary({ created: 12, passes: 2 }));
  assert.deepEqual(Object.keys(r.loadBalancers).sort(), [...lbs].sort());
  assert.equal(r.objects.length, 24);
  // One create and one tag per object, nothing else written.
  assert.deepEqual(writeRequests(stack.sim.stats()), {
    'POST /api/LBaaS/v1/backend.json': 4,
    'POST /api/LBaaS/v1/bind.json': 8,
    'POST /api/LBaaS/v1/frontend.json': 4,
    'POST /api/LBaaS/v1/server.json': 8,
    'POST /api/core/v1/resource.json/{id}/tags/{tag}': 24,
  });
  assert.equal(stack.sim.stats().mutations, 48);
});

test('adoption: objects the upstream controller left (same names, fields and tag) are kept with zero writes and zero creates', async () => {
  const { tag, lbs, spec } = fresh(1);
  const lb = lbs[0] as string;
  seedConverged(stack.sim, lb, ORACLE, { tags: [tag] });
  const before = snapshotById(objectsOn(stack.sim, lb));
  stack.sim.resetStats();

  const r = await reconcile(spec());

  const stats = await admin.stats(stack.sim);
  assert.equal(stats.mutations, 0);
  assert.deepEqual(writeRequests(stats), {});
  assert.deepEqual(r.loadBalancers[lb], lbSummary());
  assert.deepEqual(r.status, STATUS);
  assert.deepEqual(snapshotById(objectsOn(stack.sim, lb)), before);
});

test('a no-op re-apply of a converged service makes zero writes and keeps every identifier', async () => {
  const { lbs, spec } = fresh(1);
  const lb = lbs[0] as string;
  await converge(spec(), lbs);
  const before = snapshotById(objectsOn(stack.sim, lb));
  stack.sim.resetStats();

  const r = await reconcile(spec());

  assert.equal(stack.sim.stats().mutations, 0);
  assert.deepEqual(writeRequests(stack.sim.stats()), {});
  assert.deepEqual(r.loadBalancers[lb], lbSummary());
  assert.deepEqual(snapshotById(objectsOn(stack.sim, lb)), before);
});

for (const c of [
  { what: 'a Server', kind: 'server', name: n('node-1', 'http'), recreated: [`server ${n('node-1', 'http')}`] },
  {
    what: 'a Frontend (the Engine drops its Binds with it)',
    kind: 'frontend',
    name: n('https'),
    recreated: [`bind ${n('v4', 'https')}`, `bind ${n('v6', 'https')}`, `frontend ${n('https')}`],
  },
]) {
  test(`drift: ${c.what} deleted out of band is recreated, and nothing else is touched`, async () => {
    const { lbs, spec } = fresh(1);
    const lb = lbs[0] as string;
    await converge(spec(), lbs);
    await admin.delete(stack.sim, idOf(objectsOn(stack.sim, lb), c.kind, c.name));
    const survivors = snapshotById(objectsOn(stack.sim, lb));
    stack.sim.resetStats();

    const r = await reconcile(spec());

    const on = objectsOn(stack.sim, lb);
    assert.deepEqual(describeObjects(on, stack.sim), expectedLines(ORACLE));
    assert.deepEqual(r.loadBalancers[lb], lbSummary({ created: c.recreated.length, passes: 2 }));
    const created = on.filter((o) => !(o.identifier in survivors));
    assert.deepEqual(created.map((o) => `${o.kind} ${o.name}`).sort(), c.recreated);
    for (const [id, o] of Object.entries(survivors)) {
      assert.deepEqual(on.find((x) => x.identifier === id), o, `${o.kind} ${o.name} untouched`);
    }
    const posts: Record<string, number> = {};
    for (const line of c.recreated) {
      const route = `POST /api/LBaaS/v1/${line.split(' ')[0]}.json`;
      posts[route] = (posts[route] ?? 0) + 1;
    }
    assert.deepEqual(writeRequests(stack.sim.stats()), { ...posts, 'POST /api/core/v1/resource.json/{id}/tags/{tag}': c.recreated.length });
  });
}

for (const c of [
  { what: "a Server's port", kind: 'server', name: n('node-2', 'https'), fields: { port: 31443 }, replaced: [`server ${n('node-2', 'https')}`] },
  {
    what: "a Backend's mode (its Frontend, Binds and Servers are replaced with it)",
    kind: 'backend',
    name: n('http'),
    fields: { mode: 'http' },
    replaced: [
      `backend ${n('http')}`,
      `bind ${n('v4', 'http')}`,
      `bind ${n('v6', 'http')}`,
      `frontend ${n('http')}`,
      `server ${n('node-1', 'http')}`,
      `server ${n('node-2', 'http')}`,
    ],
  },
]) {
  test(`drift: ${c.what} changed out of band is replaced by a correct object`, async () => {
    const { lbs, spec } = fresh(1);
    const lb = lbs[0] as string;
    await converge(spec(), lbs);
    const changed = idOf(objectsOn(stack.sim, lb), c.kind, c.name);
    await admin.patch(stack.sim, changed, { fields: c.fields });
    const before = snapshotById(objectsOn(stack.sim, lb));
    stack.sim.resetStats();

    const r = await reconcile(spec());

    const on = objectsOn(stack.sim, lb);
    assert.deepEqual(describeObjects(on, stack.sim), expectedLines(ORACLE));
    assert.equal(on.some((o) => o.identifier === changed), false, 'the drifted object is gone');
    const k = c.replaced.length;
    assert.deepEqual(r.loadBalancers[lb], lbSummary({ created: k, destroyed: k, passes: 2 }));
    const kept = on.filter((o) => o.identifier in before);
    assert.equal(kept.length, 12 - k);
    for (const o of kept) assert.deepEqual(o, before[o.identifier], `${o.kind} ${o.name} untouched`);
    const gone = Object.values(before).filter((o) => !on.some((x) => x.identifier === o.identifier));
    assert.deepEqual(gone.map((o) => `${o.kind} ${o.name}`).sort(), c.replaced);
  });
}

test('an object whose tag was removed out of band is no longer ours: it is left exactly as it is and a tagged one is created', async () => {
  const { uid, lbs, spec } = fresh(1);
  const lb = lbs[0] as string;
  await converge(spec(), lbs);
  const untagged = idOf(objectsOn(stack.sim, lb), 'server', n('node-2', 'http'));
  await admin.patch(stack.sim, untagged, { tags: [] });
  const before = stack.sim.objects().find((o) => o.identifier === untagged);
  stack.sim.resetStats();

  const r = await reconcile(spec());

  assert.deepEqual(r.loadBalancers[lb], lbSummary({ created: 1, passes: 2 }));
  assert.deepEqual(stack.sim.objects().find((o) => o.identifier === untagged), before);
  assert.deepEqual(describeObjects(taggedOn(stack.sim, lb, uid), stack.sim), expectedLines(ORACLE));
  assert.deepEqual(writeRequests(stack.sim.stats()), { 'POST /api/LBaaS/v1/server.json': 1, 'POST /api/core/v1/resource.json/{id}/tags/{tag}': 1 });
});

test('creation follows the dependency graph, not waves: Servers do not wait for their port\'s Frontend, and one port does not wait for another', async () => {
  const { uid, tag, lbs, spec } = fresh(1);
  const lb = lbs[0] as string;
  // The http Backend is ready, the http Frontend and the https Backend are still deploying (no timer: they settle when
  // the test says so).
  const httpBackend = stack.sim.seedObject({ kind: 'backend', fields: { name: n('http'), mode: 'tcp', health_check: '"adv_check": "tcp-check"', load_balancer: lb }, state: 'Deployed', tags: [tag] });
  const httpFrontend = stack.sim.seedObject({ kind: 'frontend', fields: { name: n('http'), mode: 'tcp', load_balancer: lb, default_backend: httpBackend }, state: 'Deployed', tags: [tag] });
  const httpsBackend = stack.sim.seedObject({ kind: 'backend', fields: { name: n('https'), mode: 'tcp', health_check: '"adv_check": "tcp-check"', load_balancer: lb }, state: 'Deployed', tags: [tag] });
  await admin.patch(stack.sim, httpFrontend, { state: 'NewlyCreated', force: true });
  await admin.patch(stack.sim, httpsBackend, { state: 'NewlyCreated', force: true });

  const handle = await runs.loadBalancer({ spec: spec(), loadBalancer: lb });
  const lines = () => objectsOn(stack.sim, lb).map((o) => `${o.kind} ${o.name} ${o.state}`).sort();
  await until('the http Servers deployed', () => objectsOn(stack.sim, lb).filter((o) => o.kind === 'server' && o.state === 'Deployed').length === 2);
  // Nothing else moved: no Bind under the deploying Frontend, nothing under the deploying https Backend.
  assert.deepEqual(lines(), [
    `backend ${n('http')} Deployed`,
    `backend ${n('https')} NewlyCreated`,
    `frontend ${n('http')} NewlyCreated`,
    `server ${n('node-1', 'http')} Deployed`,
    `server ${n('node-2', 'http')} Deployed`,
  ]);
  await admin.patch(stack.sim, httpFrontend, { state: 'Deployed' });
  await until('the http Binds deployed', () => objectsOn(stack.sim, lb).filter((o) => o.kind === 'bind' && o.state === 'Deployed').length === 2);
  assert.equal(objectsOn(stack.sim, lb).filter((o) => o.name.startsWith('https.') || o.name.includes('.https.')).length, 1, 'https still waits for its Backend only');
  await admin.patch(stack.sim, httpsBackend, { state: 'Deployed' });

  const r = await handle.result();
  assert.equal(r.serviceUid, uid);
  assert.deepEqual([r.converged, r.created, r.destroyed], [true, 9, 0]);
  assert.deepEqual(describeObjects(objectsOn(stack.sim, lb), stack.sim), expectedLines(ORACLE));
});

test('duplicates: of two tagged Backends (and two Servers) matching one desired object exactly one is kept, the one in use', async () => {
  const { tag, lbs, spec } = fresh(1);
  const lb = lbs[0] as string;
  const seeded = seedConverged(stack.sim, lb, ORACLE, { tags: [tag] });
  const backend = seeded[`backend ${n('http')}`] as string;
  const dupBackend = stack.sim.seedObject({
    kind: 'backend',
    fields: { name: n('http'), mode: 'tcp', health_check: '"adv_check": "tcp-check"', load_balancer: lb },
    state: 'Deployed',
    tags: [tag],
  });
  const dupServer = stack.sim.seedObject({
    kind: 'server',
    fields: { name: n('node-1', 'http'), ip: '10.0.0.11', port: 30080, check: 'enabled', backend },
    state: 'Deployed',
    tags: [tag],
  });
  const originals = snapshotById(objectsOn(stack.sim, lb).filter((o) => o.identifier !== dupBackend && o.identifier !== dupServer));
  stack.sim.resetStats();

  const r = await reconcile(spec());

  const on = objectsOn(stack.sim, lb);
  assert.deepEqual(describeObjects(on, stack.sim), expectedLines(ORACLE));
  assert.ok(Object.values(countByName(on)).every((c) => c === 1));
  assert.deepEqual(snapshotById(on), originals, 'the originals are kept as they were; both duplicates are gone');
  assert.deepEqual(r.loadBalancers[lb], lbSummary({ destroyed: 2, passes: 2 }));
  assert.deepEqual(writeRequests(stack.sim.stats()), { 'DELETE /api/LBaaS/v1/backend.json/{id}': 1, 'DELETE /api/LBaaS/v1/server.json/{id}': 1 });
});
