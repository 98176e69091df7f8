/**
 * The service controller as an operator meets it, on the real Engine simulator: Engine 5xx during a pass, its status
 * query, its search attributes, and the full-resync workflow with its orphan report. In-process worker on the test
 * stack (real dev server, simulator over HTTP). The controller loop's own behaviour (retry delays, supersede, delete
 * and its retries, resync, continue-as-new) is tested on the time-skipping server in test/fast/controller.test.ts; a
 * superseded pass's effect on the Engine in test/workflow/superseded-creates.test.ts and test/chaos/chaos-found.test.ts;
 * a delete's and a resync's in test/workflow/realistic-engine.test.ts, test/cli/service.test.ts and
 * test/cli/scripting.test.ts.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { searchAttributes as searchAttributeKeys } from '../../contract';
import { fullResync } from '../../workflows';
import { describeObjects, expectedLines, objectsOn, seedConverged, snapshotById, tagOf, taggedOn, type OracleSpec } from '../helpers/engine-state';
import { seedLoadBalancer } from '../helpers/fixtures';
import { serviceSpec, TrackedLbaas, uniqueUid, untilVisible } from '../helpers/ops-services';
import { startStack, stopTemporalServer, type Stack } from '../helpers/stack';
import { until } from '../helpers/workflows';

let stack: Stack;
let lbaas: TrackedLbaas;
before(async () => {
  stack = await startStack();
  lbaas = new TrackedLbaas(stack.client, stack.taskQueue);
});
after(async () => {
  await lbaas?.cleanup();
  await stack?.stop();
  await stopTemporalServer();
});

const oracle = (raw: Record<string, unknown>) => raw as unknown as OracleSpec;

test('Engine 5xx do not fail a pass: it stays running without counting a failure and converges once the Engine answers', async () => {
  const uid = uniqueUid('ops-5xx');
  const lb = seedLoadBalancer(stack.sim, `lb-${uid}`);
  stack.sim.setFaults({ rates: { serverError: 1 } });
  try {
    await lbaas.applyRaw(serviceSpec(uid, [lb]));
    const base = stack.sim.stats().total;
    await until('several Engine requests to have been answered 5xx', () => stack.sim.stats().total >= base + 3, 10_000, 50);
    assert.equal(taggedOn(stack.sim, lb, uid).length, 0);
    const during = await lbaas.status(uid);
    assert.deepEqual({ phase: during.phase, running: during.running?.pass, failures: during.consecutiveFailures, lastPass: during.lastPass }, { phase: 'Converging', running: 1, failures: 0, lastPass: null });
  } finally {
    stack.sim.setFaults({});
  }
  const r = await lbaas.waitConverged(uid, 1);
  assert.deepEqual({ converged: r.converged, pass: r.pass }, { converged: true, pass: 1 });
  assert.equal(taggedOn(stack.sim, lb, uid).length, 12);
});

test('status query: phase, revision, merged status, per load balancer summary and per object status after a converged pass', async () => {
  const uid = uniqueUid('ops-status');
  const lb = seedLoadBalancer(stack.sim, `lb-${uid}`);
  await lbaas.applyRaw(serviceSpec(uid, [lb]));
  const r = await lbaas.waitConverged(uid, 1);
  const st = await lbaas.status(uid);

  assert.deepEqual(Object.keys(st).sort(), ['consecutiveFailures', 'engineRateLimitedUntil', 'lastPass', 'loadBalancers', 'nextRetryAt', 'objects', 'phase', 'revision', 'running', 'serviceUid', 'status']);
  assert.equal(st.serviceUid, uid);
  assert.equal(st.phase, 'Converged');
  assert.equal(st.revision, 1);
  assert.deepEqual(st.status, { '2001:db8::10': [80, 443], '203.0.113.10': [80, 443] });
  assert.deepEqual(st.loadBalancers, { [lb]: { converged: true, status: st.status, created: 12, destroyed: 0, recovered: 0, passes: 2, cleanup: false } });
  assert.deepEqual(st.lastPass, { pass: 1, revision: 1, converged: true, finishedAt: r.finishedAt });
  assert.equal(st.running, null);
  assert.equal(st.nextRetryAt, null);
  assert.equal(st.consecutiveFailures, 0);

  const onEngine = new Map(taggedOn(stack.sim, lb, uid).map((o) => [o.identifier, o]));
  assert.equal(st.objects.length, 12);
  for (const o of st.objects) {
    assert.deepEqual(Object.keys(o).sort(), ['identifier', 'key', 'kind', 'loadBalancer', 'name', 'state', 'updatedAt']);
    const e = onEngine.get(o.identifier ?? '');
    assert.ok(e, `status object ${o.kind} ${o.name} (${o.identifier}) is on the Engine`);
    assert.deepEqual({ loadBalancer: o.loadBalancer, kind: o.kind, name: o.name, state: o.state }, { loadBalancer: lb, kind: e.kind, name: e.name, state: 'Deployed' });
  }
  assert.equal(new Set(st.objects.map((o) => o.identifier)).size, 12);
});

test('search attributes: LbaasServiceUid finds the controller, its pass and its load balancer reconciliation; LbaasPhase becomes Converged; LbaasLoadBalancers names the load balancer', async () => {
  const uid = uniqueUid('ops-sa');
  const lb = seedLoadBalancer(stack.sim, `lb-${uid}`);
  await lbaas.applyRaw(serviceSpec(uid, [lb]));
  assert.equal((await lbaas.waitConverged(uid, 1)).converged, true);

  const all = [`lbaas/${uid}`, `lbaas/${uid}/lb/${lb}`, `lbaas/${uid}/pass/1`];
  await untilVisible(stack.client, `LbaasServiceUid = "${uid}"`, all);
  await untilVisible(stack.client, `LbaasServiceUid = "${uid}" AND LbaasPhase = "Converged"`, [`lbaas/${uid}`]);
  await untilVisible(stack.client, `LbaasLoadBalancers = "${lb}"`, all);
  const d = await lbaas.controller(uid).describe();
  assert.deepEqual(
    { uid: d.typedSearchAttributes.get(searchAttributeKeys.serviceUid), lbs: d.typedSearchAttributes.get(searchAttributeKeys.loadBalancers), phase: d.typedSearchAttributes.get(searchAttributeKeys.phase) },
    { uid, lbs: [lb], phase: 'Converged' },
  );
});

test('fullResync signals running controllers and reports tagged objects without a controller, destroying them only with destroyOrphans', async () => {
  // A stack of its own: the orphan report covers everything tagged on its Engine.
  const own = await startStack();
  const ownLbaas = new TrackedLbaas(own.client, own.taskQueue);
  try {
    const liveUid = uniqueUid('ops-live');
    const liveLb = seedLoadBalancer(own.sim, `lb-${liveUid}`);
    const liveRaw = serviceSpec(liveUid, [liveLb]);
    await ownLbaas.applyRaw(liveRaw);
    assert.equal((await ownLbaas.waitConverged(liveUid, 1)).converged, true);
    // fullResync finds controllers through visibility; wait until it can see this one.
    await untilVisible(own.client, `WorkflowType = 'serviceController' AND ExecutionStatus = 'Running' AND LbaasServiceUid = "${liveUid}"`, [`lbaas/${liveUid}`]);

    const orphanUid = uniqueUid('ops-orphan');
    const orphanLb = seedLoadBalancer(own.sim, `lb-${orphanUid}`);
    const orphanSpec = serviceSpec(orphanUid, [orphanLb]);
    seedConverged(own.sim, orphanLb, oracle(orphanSpec), { tags: [tagOf(orphanUid)] });
    const before = snapshotById(objectsOn(own.sim, orphanLb));
    assert.equal(Object.keys(before).length, 12);

    // The report counts Backends and Frontends (activities/scan.ts): 2 of each for the example's two ports.
    const report = await own.client.workflow.execute(fullResync, { taskQueue: own.taskQueue, workflowId: `ops-full-resync-${randomUUID()}`, args: [{}] });
    assert.deepEqual(report.orphans, [{ serviceUid: orphanUid, loadBalancers: [orphanLb], objects: 4, destroyed: false }]);
    assert.ok(report.signalled.includes(liveUid), `signalled ${JSON.stringify(report.signalled)} includes ${liveUid}`);
    assert.ok(!report.missed.includes(liveUid));
    assert.deepEqual(snapshotById(objectsOn(own.sim, orphanLb)), before, 'nothing was destroyed');
    // The signal reached the controller: it runs a resync pass.
    await until('the live controller to finish its resync pass', async () => {
      const s = await ownLbaas.status(liveUid);
      return s.lastPass?.pass === 2 && s.phase === 'Converged';
    });

    const destroying = await own.client.workflow.execute(fullResync, { taskQueue: own.taskQueue, workflowId: `ops-full-resync-${randomUUID()}`, args: [{ destroyOrphans: true }] });
    assert.deepEqual(destroying.orphans, [{ serviceUid: orphanUid, loadBalancers: [orphanLb], objects: 4, destroyed: true }]);
    assert.deepEqual(objectsOn(own.sim, orphanLb), []);
    assert.deepEqual(describeObjects(objectsOn(own.sim, liveLb), own.sim), expectedLines(oracle(liveRaw)), 'the live service is untouched');
  } finally {
    await ownLbaas.cleanup();
    await own.stop();
  }
});
