/**
 * The service controller as an operator meets it: applying over a running pass, deleting, resyncing drift away,
 * retrying failed passes, its status query, its search attributes, and the full-resync workflow with its orphan
 * report. In-process worker on the test stack (real dev server, simulator over HTTP).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { searchAttributes as searchAttributeKeys } from '../../contract';
import { fullResync } from '../../workflows';
import { admin, describeObjects, expectedLines, idOf, objectsOn, seedConverged, snapshotById, tagOf, taggedOn, type OracleSpec } from '../helpers/engine-state';
import { seedLoadBalancer } from '../helpers/fixtures';
import { freshIdentifier, serviceSpec, TrackedLbaas, uniqueUid, untilVisible } from '../helpers/ops-services';
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
const engineLines = (lb: string) => describeObjects(objectsOn(stack.sim, lb), stack.sim);

test('apply while a pass is running: the latest revision wins, waitConverged(1) answers with revision 2, the superseded pass is cancelled, the Engine holds exactly revision 2', async () => {
  const uid = uniqueUid('ops-latest');
  const lb = seedLoadBalancer(stack.sim, `lb-${uid}`);
  // Slow deploys keep pass 1 busy waiting for readiness when revision 2 arrives.
  stack.sim.setFaults({ deployMs: { min: 1000, max: 2000 } });
  try {
    const raw1 = serviceSpec(uid, [lb]);
    assert.deepEqual(await lbaas.applyRaw(raw1), { revision: 1, workflowId: `lbaas/${uid}` });
    await until('pass 1 to have created something', () => taggedOn(stack.sim, lb, uid).length > 0, 15_000);
    const running = await lbaas.status(uid);
    assert.deepEqual(running.running && { pass: running.running.pass, revision: running.running.revision, teardown: running.running.teardown }, { pass: 1, revision: 1, teardown: false });

    const raw2 = serviceSpec(uid, [lb], { ports: { http: { external: 8080, internal: 30080 }, smtp: { external: 25, internal: 30025 } } });
    assert.equal((await lbaas.applyRaw(raw2)).revision, 2);

    const r = await lbaas.waitConverged(uid, 1);
    assert.equal(r.revision, 2, 'waitConverged(1) must not answer with a result of the superseded revision');
    assert.equal(r.pass, 2);
    assert.equal(r.converged, true);
    assert.deepEqual(r.status, { '2001:db8::10': [25, 8080], '203.0.113.10': [25, 8080] });
    assert.deepEqual(await lbaas.waitConverged(uid, 2), r);

    assert.deepEqual(engineLines(lb), expectedLines(oracle(raw2)));
    assert.equal(taggedOn(stack.sim, lb, uid).length, 12);

    const st = await lbaas.status(uid);
    assert.equal(st.phase, 'Converged');
    assert.equal(st.revision, 2);
    assert.deepEqual(st.lastPass && { pass: st.lastPass.pass, revision: st.lastPass.revision, converged: st.lastPass.converged }, { pass: 2, revision: 2, converged: true });
    const pass1 = await stack.client.workflow.getHandle(`lbaas/${uid}/pass/1`).describe();
    assert.equal(pass1.status.name, 'CANCELLED');
  } finally {
    stack.sim.setFaults({});
  }
});

test('a pass superseded while it observes the service ends cancelled, not failed: the observation stops at the cancellation instead of reading on, and no failed pass is recorded', async () => {
  const uid = uniqueUid('ops-cancel-observe');
  const lb = seedLoadBalancer(stack.sim, `lb-${uid}`);
  await lbaas.applyRaw(serviceSpec(uid, [lb]));
  assert.equal((await lbaas.waitConverged(uid, 1)).converged, true);
  // Every Engine answer takes 5 s: pass 2's observation (a list, then the service's 12 objects, 8 at a time) would
  // read for 15 s and more; the cancellation reaches it with its next heartbeat, within seconds.
  stack.sim.setFaults({ latencyMs: 5000 });
  const passRun = `lbaas/${uid}/pass/2`;
  try {
    await lbaas.resync(uid);
    await until(
      'pass 2 to be observing',
      async () => (await stack.client.workflow.getHandle(passRun).describe().catch(() => null))?.raw.pendingActivities?.some((a) => a.activityType?.name === 'planObservedService') === true,
      30_000,
    );
    assert.equal((await lbaas.applyRaw(serviceSpec(uid, [lb], { ports: { http: { external: 8080, internal: 30080 } } }))).revision, 2);
    await until('pass 2 to end', async () => (await stack.client.workflow.getHandle(passRun).describe()).status.name !== 'RUNNING', 60_000);
  } finally {
    stack.sim.setFaults({});
  }
  const r = await lbaas.waitConverged(uid, 2);
  assert.equal(r.converged, true);
  assert.equal(r.pass, 3);

  const pass2 = stack.client.workflow.getHandle(passRun);
  assert.equal((await pass2.describe()).status.name, 'CANCELLED');
  const events = (await pass2.fetchHistory()).events ?? [];
  assert.equal(events.filter((e) => e.activityTaskCancelRequestedEventAttributes).length, 1);
  assert.equal(events.filter((e) => e.activityTaskCanceledEventAttributes).length, 1, 'the observation ended cancelled');
  assert.equal(events.filter((e) => e.activityTaskCompletedEventAttributes).length, 0, 'it did not read on to the end');
  assert.equal(events.filter((e) => e.activityTaskFailedEventAttributes).length, 0, 'and did not end as a failed attempt');
  const st = await lbaas.status(uid);
  assert.deepEqual(st.lastPass && { pass: st.lastPass.pass, revision: st.lastPass.revision, converged: st.lastPass.converged }, { pass: 3, revision: 2, converged: true });
  assert.equal(st.consecutiveFailures, 0);
});

test('delete removes everything the service owns and completes the controller; a later apply starts a fresh controller at revision 1', async () => {
  const uid = uniqueUid('ops-delete');
  const lb = seedLoadBalancer(stack.sim, `lb-${uid}`);
  const raw = serviceSpec(uid, [lb]);
  await lbaas.applyRaw(raw);
  assert.equal((await lbaas.waitConverged(uid, 1)).converged, true);
  assert.equal(taggedOn(stack.sim, lb, uid).length, 12);
  const firstRun = (await lbaas.controller(uid).describe()).runId;

  const del = await lbaas.delete(uid);
  assert.equal(del.converged, true);
  assert.deepEqual(del.status, {});
  assert.deepEqual(objectsOn(stack.sim, lb), []);
  assert.deepEqual(stack.sim.objects().filter((o) => o.tags.includes(tagOf(uid))), []);
  const ended = await lbaas.controller(uid).describe();
  assert.equal(ended.status.name, 'COMPLETED');
  assert.equal(ended.runId, firstRun);
  assert.equal((await stack.client.workflow.getHandle(`lbaas/${uid}`, firstRun).result()).converged, true);

  assert.equal((await lbaas.applyRaw(raw)).revision, 1);
  const fresh = await lbaas.controller(uid).describe();
  assert.notEqual(fresh.runId, firstRun);
  assert.equal(fresh.status.name, 'RUNNING');
  const again = await lbaas.waitConverged(uid, 1);
  assert.deepEqual({ converged: again.converged, revision: again.revision, pass: again.pass }, { converged: true, revision: 1, pass: 1 });
  assert.deepEqual(engineLines(lb), expectedLines(oracle(raw)));
  assert.equal((await lbaas.delete(uid)).converged, true);
});

test('resync repairs drift: a Server deleted out of band is recreated after the resync signal, and only it', async () => {
  const uid = uniqueUid('ops-resync');
  const lb = seedLoadBalancer(stack.sim, `lb-${uid}`);
  const raw = serviceSpec(uid, [lb]);
  await lbaas.applyRaw(raw);
  assert.equal((await lbaas.waitConverged(uid, 1)).converged, true);

  const name = `node-1.http.${uid}`;
  const gone = idOf(objectsOn(stack.sim, lb), 'server', name);
  await admin.delete(stack.sim, gone);
  assert.equal(objectsOn(stack.sim, lb).filter((o) => o.name === name).length, 0);
  assert.equal((await lbaas.status(uid)).lastPass?.pass, 1, 'nothing reconciles before the signal');

  await lbaas.resync(uid);
  const back = await until(
    `${name} to be back on the load balancer`,
    () => taggedOn(stack.sim, lb, uid).find((o) => o.kind === 'server' && o.name === name),
    20_000,
    50,
  );
  assert.notEqual(back.identifier, gone);
  const st = await until('the resync pass to finish', async () => {
    const s = await lbaas.status(uid);
    return s.lastPass?.pass === 2 && s.phase === 'Converged' ? s : false;
  });
  assert.deepEqual(st.loadBalancers[lb] && { created: st.loadBalancers[lb].created, destroyed: st.loadBalancers[lb].destroyed, recovered: st.loadBalancers[lb].recovered }, {
    created: 1,
    destroyed: 0,
    recovered: 0,
  });
  assert.deepEqual(engineLines(lb), expectedLines(oracle(raw)));
});

test('a failed pass (the Engine rejects the create) is retried after 5 s, then after 10 s, and the retry converges once the Engine accepts', async () => {
  const uid = uniqueUid('ops-retry');
  // The spec names a load balancer the Engine does not have: every create is rejected with 422 until it exists.
  const lb = freshIdentifier();
  const raw = serviceSpec(uid, [lb]);
  await lbaas.applyRaw(raw);

  const s1 = await until('the first failed pass', async () => {
    const s = await lbaas.status(uid);
    return s.consecutiveFailures === 1 ? s : false;
  });
  assert.equal(s1.phase, 'Failed');
  assert.equal(s1.lastPass?.converged, false);
  assert.equal(s1.lastPass?.pass, 1);
  assert.match(s1.lastPass?.error ?? '', /does not exist/);
  assert.equal((s1.nextRetryAt ?? 0) - (s1.lastPass?.finishedAt ?? 0), 5_000);

  const s2 = await until(
    'the retry to fail too',
    async () => {
      const s = await lbaas.status(uid);
      return s.consecutiveFailures === 2 ? s : false;
    },
    15_000,
    100,
  );
  assert.equal(s2.lastPass?.pass, 2);
  assert.ok((s2.lastPass?.finishedAt ?? 0) - (s1.lastPass?.finishedAt ?? 0) >= 5_000, 'the retry waited its delay');
  assert.equal((s2.nextRetryAt ?? 0) - (s2.lastPass?.finishedAt ?? 0), 10_000);

  // The Engine accepts from now on; the scheduled retry (no signal) converges.
  stack.sim.seedObject({ kind: 'loadbalancer', identifier: lb, fields: { name: `lb-${uid}`, ip_address: '198.51.100.9' }, state: 'Deployed' } as never);
  const s3 = await until(
    'the second retry to converge',
    async () => {
      const s = await lbaas.status(uid);
      return s.phase === 'Converged' ? s : false;
    },
    20_000,
    100,
  );
  assert.deepEqual({ pass: s3.lastPass?.pass, failures: s3.consecutiveFailures, nextRetryAt: s3.nextRetryAt }, { pass: 3, failures: 0, nextRetryAt: null });
  assert.ok((s3.lastPass?.finishedAt ?? 0) - (s2.lastPass?.finishedAt ?? 0) >= 10_000, 'the second retry waited 10 s');
  assert.deepEqual(engineLines(lb), expectedLines(oracle(raw)));
});

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
