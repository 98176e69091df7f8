/**
 * End-to-end reconciliation on a real Temporal dev server and the Engine simulator over HTTP: what a pass must
 * never touch (foreign objects, untagged look-alikes, other services' objects), what it removes when a service
 * shrinks (a load balancer dropped, an empty ports map, a renamed port), and planService's dry run of a pass.
 *
 * Every test gets load balancers and a service uid of its own, and resets the simulator's request counters before
 * the pass it measures; the file's tests run one after the other, so the counters are the measured pass's alone.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import {
  admin,
  describeObjects,
  expectedLines,
  idOf,
  objectsOn,
  seedConverged,
  snapshotById,
  tagOf,
  taggedOn,
  writeRequests,
} from '../helpers/engine-state';
import { converge, FAST_READINESS, freshOn, lbSummary, n, ORACLE, reconcile, runs, stack, STATUS, useReconcileStack } from '../helpers/reconcile-kit';

useReconcileStack(FAST_READINESS);

/** A service of the test's own on `count` fresh load balancers. */
const fresh = (count: number) => freshOn('core', count);

/** Objects that are not the service's on its load balancer: untagged look-alikes with our exact names and fields, and another service's. */
function seedForeign(lb: string) {
  const lookalike = stack.sim.seedObject({
    kind: 'backend',
    fields: { name: n('http'), mode: 'tcp', health_check: '"adv_check": "tcp-check"', load_balancer: lb },
    state: 'Deployed',
  });
  stack.sim.seedObject({ kind: 'server', fields: { name: n('node-1', 'http'), ip: '10.0.0.11', port: 30080, check: 'enabled', backend: lookalike }, state: 'Deployed' });
  stack.sim.seedObject({ kind: 'server', fields: { name: n('node-9', 'http'), ip: '10.0.0.99', port: 30080, check: 'enabled', backend: lookalike }, state: 'Deployed' });
  const feLookalike = stack.sim.seedObject({
    kind: 'frontend',
    fields: { name: n('http'), mode: 'tcp', load_balancer: lb, default_backend: lookalike },
    state: 'DeploymentError',
  });
  stack.sim.seedObject({ kind: 'bind', fields: { name: n('v4', 'http'), address: '203.0.113.10', port: 80, ssl: false, frontend: feLookalike }, state: 'Deployed' });
  const other = tagOf(`other-${randomUUID()}`);
  const otherBackend = stack.sim.seedObject({
    kind: 'backend',
    fields: { name: n('https'), mode: 'tcp', health_check: '"adv_check": "tcp-check"', load_balancer: lb },
    state: 'Deployed',
    tags: [other],
  });
  stack.sim.seedObject({ kind: 'server', fields: { name: n('stale', 'https'), ip: '10.9.9.9', port: 1, check: 'disabled', backend: otherBackend }, state: 'DeploymentError', tags: [other] });
}

test('foreign objects are untouched: untagged look-alikes with our exact names, another service\'s objects, and ours on a load balancer outside the spec (by reconcileLoadBalancer)', async () => {
  const { uid, tag, lbs, spec } = fresh(2);
  const [lb, outside] = lbs as [string, string];
  seedForeign(lb);
  seedConverged(stack.sim, outside, ORACLE, { tags: [tag] });
  const foreign = snapshotById(objectsOn(stack.sim, lb));
  const onOutside = snapshotById(objectsOn(stack.sim, outside));
  assert.equal(Object.keys(foreign).length, 7);

  const r = await (await runs.loadBalancer({ spec: spec({ loadBalancers: [lb] }), loadBalancer: lb })).result();

  assert.equal(r.converged, true);
  assert.equal(r.created, 12);
  assert.equal(r.destroyed, 0);
  const after = objectsOn(stack.sim, lb);
  assert.deepEqual(describeObjects(taggedOn(stack.sim, lb, uid), stack.sim), expectedLines(ORACLE));
  // Our new objects link only to our own: no Server was hung under the look-alike Backend, no Bind under its Frontend.
  for (const o of taggedOn(stack.sim, lb, uid)) {
    for (const link of ['default_backend', 'frontend', 'backend'] as const) {
      if (o.fields[link] !== undefined) assert.ok(!(String(o.fields[link]) in foreign), `${o.kind} ${o.name} links to a foreign object`);
    }
  }
  for (const [id, o] of Object.entries(foreign)) assert.deepEqual(after.find((x) => x.identifier === id), o, `foreign ${o.kind} ${o.name} untouched`);
  assert.deepEqual(snapshotById(objectsOn(stack.sim, outside)), onOutside, 'reconcileLoadBalancer never leaves its load balancer');

  // reconcileService leaves the foreign objects alone as well (and removes ours from the outside load balancer).
  const s = await reconcile(spec({ loadBalancers: [lb] }));
  assert.equal(s.converged, true);
  assert.deepEqual(s.loadBalancers[lb], lbSummary());
  assert.deepEqual(s.loadBalancers[outside], { converged: true, status: {}, created: 0, destroyed: 12, recovered: 0, passes: 2, cleanup: true });
  const again = objectsOn(stack.sim, lb);
  for (const [id, o] of Object.entries(foreign)) assert.deepEqual(again.find((x) => x.identifier === id), o, `foreign ${o.kind} ${o.name} untouched`);
});

test('a load balancer dropped from the spec is cleaned up by reconcileService; the remaining one is untouched and untagged objects survive', async () => {
  const { tag, lbs, spec } = fresh(2);
  const [kept, dropped] = lbs as [string, string];
  await converge(spec(), lbs);
  const untagged = stack.sim.seedObject({
    kind: 'backend',
    fields: { name: n('http'), mode: 'tcp', health_check: '"adv_check": "tcp-check"', load_balancer: dropped },
    state: 'Deployed',
  });
  const keptBefore = snapshotById(objectsOn(stack.sim, kept));
  const untaggedBefore = stack.sim.objects().find((o) => o.identifier === untagged);
  stack.sim.resetStats();

  const r = await reconcile(spec({ loadBalancers: [kept] }));

  assert.equal(r.converged, true);
  assert.deepEqual(r.status, STATUS);
  assert.deepEqual(r.loadBalancers[kept], lbSummary());
  assert.deepEqual(r.loadBalancers[dropped], { converged: true, status: {}, created: 0, destroyed: 12, recovered: 0, passes: 2, cleanup: true });
  assert.deepEqual(objectsOn(stack.sim, dropped).filter((o) => o.tags.includes(tag)), []);
  assert.deepEqual(objectsOn(stack.sim, dropped), [untaggedBefore]);
  assert.deepEqual(snapshotById(objectsOn(stack.sim, kept)), keptBefore);
  assert.deepEqual(writeRequests(stack.sim.stats()), {
    'DELETE /api/LBaaS/v1/backend.json/{id}': 2,
    'DELETE /api/LBaaS/v1/bind.json/{id}': 4,
    'DELETE /api/LBaaS/v1/frontend.json/{id}': 2,
    'DELETE /api/LBaaS/v1/server.json/{id}': 4,
  });
});

test('an empty ports map destroys everything the service owns on the load balancer, and nothing else', async () => {
  const { uid, tag, lbs, spec } = fresh(1);
  const lb = lbs[0] as string;
  await converge(spec(), lbs);
  seedForeign(lb);
  const foreign = snapshotById(objectsOn(stack.sim, lb).filter((o) => !o.tags.includes(tag)));

  const r = await reconcile(spec({ ports: {} }));

  assert.equal(r.converged, true);
  assert.deepEqual(r.status, {});
  assert.deepEqual(r.loadBalancers[lb], lbSummary({ status: {}, destroyed: 12, passes: 2 }));
  assert.deepEqual(taggedOn(stack.sim, lb, uid), []);
  assert.deepEqual(snapshotById(objectsOn(stack.sim, lb)), foreign);
});

test('a renamed port replaces that port\'s objects under the new name and keeps the other port\'s objects', async () => {
  const { lbs, spec } = fresh(1);
  const lb = lbs[0] as string;
  await converge(spec(), lbs);
  const httpsBefore = snapshotById(objectsOn(stack.sim, lb).filter((o) => o.name.includes('https.')));
  const ports = { web: { external: 80, internal: 30080 }, https: { external: 443, internal: 30443 } };

  const r = await reconcile(spec({ ports }));

  const on = objectsOn(stack.sim, lb);
  assert.deepEqual(describeObjects(on, stack.sim), expectedLines({ ...ORACLE, ports }));
  assert.deepEqual(r.loadBalancers[lb], lbSummary({ created: 6, destroyed: 6, passes: 2 }));
  assert.deepEqual(r.status, STATUS);
  assert.deepEqual(snapshotById(on.filter((o) => o.name.includes('https.'))), httpsBefore);
  assert.equal(on.filter((o) => o.name.includes('http.')).length, 0);
});

test('planService reports exactly what the next pass then does (create, destroy, recover, cleanup) and writes nothing', async () => {
  const { tag, lbs, spec } = fresh(2);
  const [lb, dropped] = lbs as [string, string];
  await converge(spec(), lbs);
  const on = objectsOn(stack.sim, lb);
  await admin.delete(stack.sim, idOf(on, 'server', n('node-1', 'http')));
  const failed = idOf(on, 'server', n('node-2', 'https'));
  await admin.patch(stack.sim, failed, { state: 'DeploymentError' });
  const stray = stack.sim.seedObject({
    kind: 'bind',
    fields: { name: n('v4', 'old'), address: '203.0.113.10', port: 8080, ssl: false, frontend: idOf(on, 'frontend', n('http')) },
    state: 'Deployed',
    tags: [tag],
  });
  const droppedObjects = objectsOn(stack.sim, dropped);
  const everything = snapshotById(stack.sim.objects());
  const newSpec = spec({ loadBalancers: [lb] });
  stack.sim.resetStats();

  const plan = await (await runs.plan({ spec: newSpec })).result();

  assert.equal(stack.sim.stats().mutations, 0);
  assert.deepEqual(writeRequests(stack.sim.stats()), {});
  assert.deepEqual(snapshotById(stack.sim.objects()), everything);
  assert.deepEqual(Object.keys(plan.loadBalancers), [lb, dropped]);
  const mine = plan.loadBalancers[lb];
  assert.equal(mine?.cleanup, false);
  assert.deepEqual(mine?.summary, { create: 1, destroy: 1, recover: 1, wait: 0, keep: 10 });
  assert.deepEqual(mine?.lines, [
    `destroy Bind ${n('v4', 'old')} (not desired) ${stray}`,
    `create Server ${n('node-1', 'http')}`,
    `recover Server ${n('node-2', 'https')} ${failed}`,
  ]);
  const cleanup = plan.loadBalancers[dropped];
  assert.equal(cleanup?.cleanup, true);
  assert.deepEqual(cleanup?.summary, { create: 0, destroy: 12, recover: 0, wait: 0, keep: 0 });
  const order = { bind: 0, server: 1, frontend: 2, backend: 3 } as Record<string, number>;
  assert.deepEqual(
    cleanup?.lines,
    [...droppedObjects]
      .sort((a, b) => (order[a.kind] as number) - (order[b.kind] as number) || (a.name < b.name ? -1 : a.name > b.name ? 1 : a.identifier < b.identifier ? -1 : 1))
      .map((o) => `destroy ${o.kind[0]?.toUpperCase()}${o.kind.slice(1)} ${o.name} (not desired) ${o.identifier}`),
  );

  const r = await reconcile(newSpec);
  assert.deepEqual(r.loadBalancers[lb], lbSummary({ created: 1, destroyed: 1, recovered: 1, passes: 2 }));
  assert.deepEqual(r.loadBalancers[dropped], { converged: true, status: {}, created: 0, destroyed: 12, recovered: 0, passes: 2, cleanup: true });
  assert.deepEqual(describeObjects(objectsOn(stack.sim, lb), stack.sim), expectedLines(ORACLE));
  assert.equal(objectsOn(stack.sim, lb).find((o) => o.identifier === failed)?.state, 'Updated');
});
