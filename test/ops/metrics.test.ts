/**
 * The worker's Prometheus endpoint (docs/spec.md#metrics), on a worker PROCESS started the way an operator starts
 * it: `node bin/lbaas.js worker` with only environment variables.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { drawPort } from '../../common/ports';
import { startSimulator, type RunningSimulator } from '../../simulator';
import { seedLoadBalancer } from '../helpers/fixtures';
import { scrape, spawnWorker, sumOf, type Sample, type WorkerProcess } from '../helpers/ops-process';
import { serviceSpec, TrackedLbaas, uniqueUid } from '../helpers/ops-services';
import { stopTemporalServer, temporalServer, TEST_TOKEN } from '../helpers/stack';
import { until } from '../helpers/workflows';
import { workflowIds } from '../../contract';

let sim: RunningSimulator;
let connection: Connection;
let worker: WorkerProcess;
let lbaas: TrackedLbaas;
let metricsAddress: string;

before(async () => {
  const srv = await temporalServer();
  sim = await startSimulator({ port: 0, token: TEST_TOKEN, deployMs: { min: 20, max: 60 }, seed: 11 });
  metricsAddress = `127.0.0.1:${await drawPort(new Set())}`;
  const taskQueue = `ops-metrics-${randomUUID()}`;
  // It loads the run's prebuilt bundle like the suite's other worker processes: a worker that bundles the workflows
  // itself (no LBAAS_WORKFLOW_BUNDLE) is tracing.test.ts's and first-install.test.ts's (/readyz).
  worker = spawnWorker({ temporalAddress: srv.address, namespace: srv.namespace, taskQueue, engineUrl: sim.url, token: TEST_TOKEN, metricsAddress });
  connection = await Connection.connect({ address: srv.address });
  lbaas = new TrackedLbaas(new Client({ connection, namespace: srv.namespace }), taskQueue);
  await worker.ready;
});
after(async () => {
  await lbaas?.cleanup();
  await worker?.kill();
  await connection?.close();
  await sim?.close();
  await stopTemporalServer();
});

/** `<METHOD> <resource>` -> requests counted by the worker between two scrapes. */
function requestCounts(now: readonly Sample[], then: readonly Sample[]): Record<string, number> {
  const out: Record<string, number> = {};
  const add = (samples: readonly Sample[], sign: number) => {
    for (const s of samples.filter((x) => x.name === 'lbaas_http_client_requests_total')) {
      const k = `${s.labels.method} ${s.labels.resource}`;
      out[k] = (out[k] ?? 0) + sign * s.value;
    }
  };
  add(now, 1);
  add(then, -1);
  return Object.fromEntries(Object.entries(out).filter(([, n]) => n !== 0).sort());
}

/** The simulator's per-route counts in the same shape: `/api/LBaaS/v1/<kind>.json` is `<kind>`, Core tag routes `tag`. */
function engineRequestCounts(s: RunningSimulator): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [route, n] of Object.entries(s.stats().requests)) {
    const [method, path = ''] = route.split(' ');
    const resource = /\/tags(\/|$)/.test(path) ? 'tag' : path.startsWith('/api/core/v1/resource.json') ? 'resource' : (/^\/api\/LBaaS\/v1\/(\w+)\.json/.exec(path)?.[1] ?? path);
    out[`${method} ${resource}`] = (out[`${method} ${resource}`] ?? 0) + n;
  }
  return Object.fromEntries(Object.entries(out).sort());
}

/** Distinct metric names of a scrape. */
const names = (samples: readonly Sample[]) => [...new Set(samples.map((s) => s.name))].sort();

test('worker metrics: lbaas_reconcile_created_total moves by exactly the 12 objects created, Engine requests are counted per resource/method/status exactly as the Engine saw them, reconcile histograms and gauge are recorded, Temporal worker metrics share the endpoint, deletes are counted', async () => {
  const before = await scrape(metricsAddress);
  const createdBefore = sumOf(before.samples, 'lbaas_reconcile_created_total');
  sim.resetStats();

  const uid = uniqueUid('ops-metrics');
  const lb = seedLoadBalancer(sim, `lb-${uid}`);
  await lbaas.applyRaw(serviceSpec(uid, [lb]));
  const r = await lbaas.waitConverged(uid, 1);
  assert.equal(r.converged, true);
  assert.equal(r.loadBalancers[lb]?.created, 12);

  const enginePosts = Object.entries(sim.stats().requests)
    .filter(([route]) => route.startsWith('POST '))
    .reduce((a, [, n]) => a + n, 0);
  // Metric values reach the exporter asynchronously: scrape (bounded) until the request counts have caught up.
  const engineCounts = engineRequestCounts(sim);
  let after = await scrape(metricsAddress);
  await until(
    'the request counters to catch up with the Engine',
    async () => {
      after = await scrape(metricsAddress);
      return JSON.stringify(requestCounts(after.samples, before.samples)) === JSON.stringify(engineCounts);
    },
    10_000,
    200,
  ).catch(() => {});
  const present = names(after.samples);
  console.log(`# metric names on ${metricsAddress}: ${present.join(' ')}`);

  assert.equal(sumOf(after.samples, 'lbaas_reconcile_created_total') - createdBefore, 12);
  assert.deepEqual(
    after.samples.filter((s) => s.name === 'lbaas_reconcile_created_total').map((s) => `${s.labels.kind}=${s.value}`).sort(),
    ['backend=2', 'bind=4', 'frontend=2', 'server=4'],
  );

  const requests = after.samples.filter((s) => s.name === 'lbaas_http_client_requests_total');
  assert.ok(requests.length > 0, `lbaas_http_client_requests_total present (names: ${present.join(' ')})`);
  for (const s of requests) assert.deepEqual(Object.keys(s.labels).sort(), ['method', 'resource', 'status'], `labels of ${JSON.stringify(s.labels)}`);
  assert.equal(sumOf(after.samples, 'lbaas_http_client_requests_total', { method: 'POST' }), enginePosts);
  assert.equal(enginePosts, 24, '12 creates and 12 tag requests');
  // Every request the Engine saw was counted once, under the resource the client names it by.
  assert.deepEqual(requestCounts(after.samples, before.samples), engineCounts);

  // Workflow-side metrics (recorded by reconcileLoadBalancer, once per run, not on replay).
  assert.equal(sumOf(after.samples, 'lbaas_reconcile_total_duration_seconds_count'), 1);
  assert.equal(sumOf(after.samples, 'lbaas_reconcile_create_resources_duration_seconds_count'), 1);
  assert.deepEqual(
    after.samples.filter((s) => s.name === 'lbaas_reconcile_resources_pending').map((s) => [s.labels.load_balancer, s.value]),
    [[lb, 0]],
  );

  // Temporal's own worker metrics come out of the same endpoint under their documented names.
  assert.ok(present.includes('temporal_worker_task_slots_available'), `temporal_worker_task_slots_available among ${present.join(' ')}`);
  // One latency sample per activity the pass and its load balancer run completed (realizeObjects groups included).
  const completed = (
    await Promise.all([`lbaas/${uid}/pass/1`, workflowIds.loadBalancer(uid, lb)].map(async (id) => (await lbaas.client.workflow.getHandle(id).fetchHistory()).events ?? []))
  )
    .flat()
    .filter((e) => e.activityTaskCompletedEventAttributes).length;
  assert.equal(
    sumOf(after.samples, 'temporal_activity_execution_latency_count') - sumOf(before.samples, 'temporal_activity_execution_latency_count'),
    completed,
    'temporal_activity_execution_latency counts the activities',
  );
  assert.ok(sumOf(after.samples, 'temporal_workflow_completed') >= 2, 'temporal_workflow_completed counts the pass and the load balancer run');

  // Dropping a port destroys its Backend, Frontend, 2 Binds and 2 Servers: lbaas_reconcile_deleted_total moves by 6.
  const deletedBefore = sumOf(after.samples, 'lbaas_reconcile_deleted_total');
  await lbaas.applyRaw(serviceSpec(uid, [lb], { ports: { http: { external: 80, internal: 30080 } } }));
  const r2 = await lbaas.waitConverged(uid, 2);
  assert.equal(r2.loadBalancers[lb]?.destroyed, 6);
  const deleted = await until(
    'lbaas_reconcile_deleted_total to move',
    async () => {
      const n = sumOf((await scrape(metricsAddress)).samples, 'lbaas_reconcile_deleted_total') - deletedBefore;
      return n >= 6 ? n : false;
    },
    10_000,
    200,
  );
  assert.equal(deleted, 6);
});

test('Engine 429s: lbaas_engine_rate_limited_total counts every 429 the Engine sent, lbaas_engine_backoff_milliseconds_total the time held back, and the request rate in force drops below the budget', async () => {
  const lb = seedLoadBalancer(sim, `lb-throttled-${randomUUID().slice(0, 8)}`);
  const uid = uniqueUid('metrics-429');
  const before = await scrape(metricsAddress);
  // Two requests per second per token, no Retry-After: the worker's default budget of 10/s is far over it.
  sim.setFaults({ rateLimit: { rps: 2, burst: 2, retryAfter: false } });
  sim.resetStats();
  try {
    await lbaas.applyRaw(serviceSpec(uid, [lb], { ports: { http: { external: 80, internal: 30080 } }, servers: [] }));
    assert.equal((await lbaas.waitConverged(uid, 1)).converged, true);
  } finally {
    sim.setFaults({ rateLimit: null });
  }
  const throttled = sim.stats().throttled;
  assert.ok(throttled > 0, 'the Engine answered 429');
  const after = await scrape(metricsAddress);
  assert.equal(sumOf(after.samples, 'lbaas_engine_rate_limited_total') - sumOf(before.samples, 'lbaas_engine_rate_limited_total'), throttled);
  assert.ok(sumOf(after.samples, 'lbaas_engine_backoff_milliseconds_total') > sumOf(before.samples, 'lbaas_engine_backoff_milliseconds_total'));
  const rate = after.samples.find((s) => s.name === 'lbaas_engine_requests_per_second');
  assert.ok(rate && rate.value < 10, `the rate in force dropped below the budget of 10 (${rate?.value})`);
});

test('pass and resync metrics for the alert rules: a converged pass counts lbaas_service_passes_total{result="converged"} and stamps its end; a pass on a load balancer the Engine does not have counts result="failed"; a full resync stamps lbaas_resync_last_completed_timestamp_seconds', async () => {
  const startedS = Date.now() / 1000;
  const uid = uniqueUid('metrics-pass');
  const lb = seedLoadBalancer(sim, `lb-pass-${randomUUID().slice(0, 8)}`);
  await lbaas.applyRaw(serviceSpec(uid, [lb], { ports: { http: { external: 80, internal: 30080 } }, servers: [] }));
  assert.equal((await lbaas.waitConverged(uid, 1)).converged, true);
  const converged = await until(
    'the converged pass to be counted',
    async () => {
      const s = (await scrape(metricsAddress)).samples;
      return sumOf(s, 'lbaas_service_passes_total', { service_uid: uid, result: 'converged' }) === 1 ? s : false;
    },
    10_000,
    200,
  );
  assert.equal(sumOf(converged, 'lbaas_service_passes_total', { service_uid: uid, result: 'failed' }), 0);
  const stamp = converged.find((s) => s.name === 'lbaas_service_last_pass_timestamp_seconds' && s.labels.service_uid === uid && s.labels.result === 'converged');
  assert.ok(stamp && stamp.value >= startedS - 1 && stamp.value <= Date.now() / 1000 + 1, `the pass end time ${stamp?.value} within the test (${startedS})`);

  const broken = uniqueUid('metrics-fail');
  await lbaas.applyRaw(serviceSpec(broken, ['0'.repeat(31) + 'f'], { ports: { http: { external: 80, internal: 30080 } }, servers: [] }));
  const failed = await until(
    'the failed pass to be counted',
    async () => {
      const s = (await scrape(metricsAddress)).samples;
      return sumOf(s, 'lbaas_service_passes_total', { service_uid: broken, result: 'failed' }) >= 1 ? s : false;
    },
    30_000,
    200,
  );
  assert.equal(sumOf(failed, 'lbaas_service_passes_total', { service_uid: broken, result: 'converged' }), 0);
  assert.ok(failed.some((s) => s.name === 'lbaas_service_last_pass_timestamp_seconds' && s.labels.service_uid === broken && s.labels.result === 'failed'));
  await lbaas.controller(broken).terminate('test: the load balancer does not exist');

  const resyncStarted = Date.now() / 1000;
  await lbaas.client.workflow.execute('fullResync', { taskQueue: lbaas.taskQueue, workflowId: `lbaas-full-resync-manual-test-${randomUUID()}`, args: [{}] });
  const resynced = await until(
    'the resync to be stamped',
    async () => {
      const s = (await scrape(metricsAddress)).samples;
      const v = s.find((x) => x.name === 'lbaas_resync_last_completed_timestamp_seconds')?.value;
      return v !== undefined && v >= resyncStarted - 1 ? s : false;
    },
    10_000,
    200,
  );
  assert.ok(resynced.some((s) => s.name === 'lbaas_resync_orphaned_services'), 'lbaas_resync_orphaned_services exported');
});

test('a pass that fails before any load balancer runs (the Engine refuses the worker\'s token: its observation fails for good) counts lbaas_service_passes_total{result="failed"} beside the 401 it got', async () => {
  const srv = await temporalServer();
  const taskQueue = `ops-metrics-refused-${randomUUID()}`;
  const refusedMetrics = `127.0.0.1:${await drawPort(new Set())}`;
  const refused = spawnWorker({ temporalAddress: srv.address, namespace: srv.namespace, taskQueue, engineUrl: sim.url, token: 'not-the-engine-token', metricsAddress: refusedMetrics });
  const client = new TrackedLbaas(new Client({ connection, namespace: srv.namespace }), taskQueue);
  try {
    await refused.ready;
    const uid = uniqueUid('metrics-refused');
    const lb = seedLoadBalancer(sim, `lb-refused-${randomUUID().slice(0, 8)}`);
    await client.applyRaw(serviceSpec(uid, [lb], { ports: { http: { external: 80, internal: 30080 } }, servers: [] }));
    const failed = await until(
      'the pass refused by the Engine to be counted',
      async () => {
        const s = (await scrape(refusedMetrics)).samples;
        return sumOf(s, 'lbaas_service_passes_total', { service_uid: uid, result: 'failed' }) >= 1 ? s : false;
      },
      30_000,
      200,
    );
    assert.equal(sumOf(failed, 'lbaas_service_passes_total', { service_uid: uid, result: 'converged' }), 0);
    assert.ok(sumOf(failed, 'lbaas_http_client_requests_total', { status: '401' }) >= 1, 'the Engine answered 401');
  } finally {
    await client.cleanup();
    await refused.kill();
  }
});
