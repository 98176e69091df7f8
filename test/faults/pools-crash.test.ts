/**
 * A worker process SIGKILLed during a pool's fan-out loses nothing: a new worker finishes it, every service using
 * the pool converges the new revision with exactly its desired objects (no duplicate, nothing missing). And a
 * delivery round continuing as new between pages carries its place, and every service still gets the change (on the
 * dev server: the round lists the services through visibility, which the time-skipping server of test/fast lacks).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LbaasClient } from '../../client/service-client';
import { validateSpec } from '../../domain';
import { serverPool } from '../../workflows/pool';
import { crashStack } from '../helpers/child-worker';
import { exampleSpec, seedLoadBalancer, taggedLines } from '../helpers/fixtures';
import { until } from '../helpers/workflows';

// Deploys of 300-400 ms keep the fan-out's reconciliations visibly in progress when the worker is killed.
const crash = crashStack({ deployMs: { min: 300, max: 400 } });
const childWorker = (identity: string) => crash.childWorker(identity);

test('a worker SIGKILLed during the fan-out of a pool change: a new worker finishes it; every service has exactly its objects', async () => {
  const lbaas = new LbaasClient(crash.stack.client, crash.stack.taskQueue);
  const lb = seedLoadBalancer(crash.stack.sim, 'lb-pool-crash');
  const uids = Array.from({ length: 10 }, (_, i) => `pool-crash-${i}`);
  const first = await childWorker('pool-crash-1');
  await lbaas.pools.set({ name: 'crash', servers: [{ name: 'node-1', address: '10.0.0.11' }] });
  for (const uid of uids) {
    const raw = exampleSpec([lb], { serviceUid: uid, nameSuffix: uid, externalAddresses: ['203.0.113.10'], serverPool: 'crash' });
    delete raw.servers;
    const r = validateSpec(raw);
    assert.ok(r.ok);
    await lbaas.apply(raw, r.spec);
  }
  for (const uid of uids) assert.equal((await lbaas.waitConverged(uid, 1)).converged, true);

  crash.stack.sim.resetStats();
  const change = await lbaas.pools.add('crash', [{ name: 'node-2', address: '10.0.0.12' }]);
  assert.equal(change.services, uids.length);
  // Kill once the fan-out has reached the Engine, while Servers of the new node are still being created.
  await until('the fan-out creating Servers', () => (crash.stack.sim.stats().requests['POST /api/LBaaS/v1/server.json'] ?? 0) > 0, 30_000);
  const created = crash.stack.sim.stats().requests['POST /api/LBaaS/v1/server.json'] ?? 0;
  first.process.kill('SIGKILL');
  await first.exited;
  assert.ok(created < uids.length * 2, `killed before the fan-out finished (${created} of ${uids.length * 2} Servers created)`);

  await childWorker('pool-crash-2');
  const done = await lbaas.pools.waitConverged('crash', change.revision);
  assert.equal(done.converged, true, JSON.stringify(done.services));
  for (const uid of uids) {
    assert.deepEqual(
      taggedLines(crash.stack.sim, `anxccm-svc-uid=${uid}`),
      [
        `backend http.${uid}`,
        `backend https.${uid}`,
        `bind v4.http.${uid}`,
        `bind v4.https.${uid}`,
        `frontend http.${uid}`,
        `frontend https.${uid}`,
        `server node-1.http.${uid}`,
        `server node-1.https.${uid}`,
        `server node-2.http.${uid}`,
        `server node-2.https.${uid}`,
      ],
      uid,
    );
  }
});

test('a delivery round of one service per page and a short history continues as new mid-round; every service gets the change', async () => {
  const lbaas = new LbaasClient(crash.stack.client, crash.stack.taskQueue);
  const lb = seedLoadBalancer(crash.stack.sim, 'lb-pool-rounds');
  if (!crash.children.some((c) => c.process.exitCode === null && c.process.signalCode === null)) await childWorker('pool-rounds');
  // One service per page and the shortest history allowed: a round to 8 services takes 8 pages, and its history is
  // long after a few of them.
  await crash.stack.client.workflow.start(serverPool, { taskQueue: crash.stack.taskQueue, workflowId: 'lbaas-pool/rounds', args: [{ v: 2, name: 'rounds', historyLimit: 20, roundPageSize: 1 }] });
  await lbaas.pools.set({ name: 'rounds', servers: [{ name: 'r0', address: '10.0.2.0' }] });
  const uids = Array.from({ length: 8 }, (_, i) => `pool-rounds-${i}`);
  for (const uid of uids) {
    const raw = exampleSpec([lb], { serviceUid: uid, nameSuffix: uid, externalAddresses: ['203.0.113.10'], ports: { http: { external: 80, internal: 30080 } }, serverPool: 'rounds' });
    delete raw.servers;
    const r = validateSpec(raw);
    assert.ok(r.ok);
    await lbaas.apply(raw, r.spec);
  }
  for (const uid of uids) assert.equal((await lbaas.waitConverged(uid, 1)).converged, true);

  const change = await lbaas.pools.add('rounds', [{ name: 'r1', address: '10.0.2.1' }]);
  const done = await lbaas.pools.waitConverged('rounds', change.revision);
  assert.equal(done.converged, true, JSON.stringify(done.services));
  assert.deepEqual(done.services.map((s) => s.convergedRevision), uids.map(() => change.revision));
  for (const uid of uids) assert.deepEqual(taggedLines(crash.stack.sim, `anxccm-svc-uid=${uid}`).filter((l) => l.startsWith('server ')), [`server r0.http.${uid}`, `server r1.http.${uid}`], uid);

  // The change's round continued as new with its place (a page token) in its input: several runs, one round.
  const round = (await lbaas.pools.members('rounds')).round;
  assert.equal(round?.revision, change.revision);
  const runs: { pages: number }[] = [];
  for await (const run of crash.stack.client.workflow.list({ query: `WorkflowId = '${round?.workflowId}'` })) {
    const history = await crash.stack.client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
    const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data;
    const input = payload ? (JSON.parse(Buffer.from(payload).toString('utf8')) as { progress?: { pages: number } }) : {};
    runs.push({ pages: input.progress?.pages ?? 0 });
  }
  assert.ok(runs.length > 1, `the round continued as new (runs: ${runs.length})`);
  assert.ok(runs.some((r) => r.pages > 0), `a run began mid-round (pages done at each run's start: ${runs.map((r) => r.pages).join(', ')})`);
});
