/**
 * A worker process SIGKILLed during a pool's fan-out loses nothing: a new worker finishes it, every service using
 * the pool converges the new revision with exactly its desired objects (no duplicate, nothing missing). And a pool
 * continuing as new between delivery rounds, with the services' reports arriving meanwhile, carries its members,
 * subscribers and what it still owes (the time-skipping server of test/fast loses a signal that races a
 * continue-as-new, so this stays on the dev server).
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
  assert.equal(change.services.length, uids.length);
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

test('a pool with a long history rotates between delivery rounds, carrying what it still owes; every service gets the change', async () => {
  const lbaas = new LbaasClient(crash.stack.client, crash.stack.taskQueue);
  const lb = seedLoadBalancer(crash.stack.sim, 'lb-pool-rounds');
  if (!crash.children.some((c) => c.process.exitCode === null && c.process.signalCode === null)) await childWorker('pool-rounds');
  // One subscriber per round and the shortest history allowed: a change owed to 8 services takes 8 rounds, and the
  // history is long after a few of them.
  await crash.stack.client.workflow.start(serverPool, { taskQueue: crash.stack.taskQueue, workflowId: 'lbaas-pool/rounds', args: [{ v: 2, name: 'rounds', historyLimit: 20, deliveryRound: 1 }] });
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
  // Polled through the status query: a waitConverged update running would (rightly) hold the rotation off.
  await until('every service converged on the change', async () => (await lbaas.pools.status('rounds')).services.every((s) => s.convergedRevision === change.revision), 60_000);
  for (const uid of uids) assert.deepEqual(taggedLines(crash.stack.sim, `anxccm-svc-uid=${uid}`).filter((l) => l.startsWith('server ')), [`server r0.http.${uid}`, `server r1.http.${uid}`], uid);

  // Some run of the pool began with deliveries still owed: it was continued as new in the middle of a fan-out.
  const owedAtStart: number[] = [];
  for await (const run of crash.stack.client.workflow.list({ query: `WorkflowId = 'lbaas-pool/rounds'` })) {
    const history = await crash.stack.client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
    const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data;
    const input = payload ? (JSON.parse(Buffer.from(payload).toString('utf8')) as { state?: { owed?: string[] } }) : {};
    owedAtStart.push(input.state?.owed?.length ?? 0);
  }
  assert.ok(owedAtStart.length > 1, `the pool continued as new (runs: ${owedAtStart.length})`);
  assert.ok(owedAtStart.some((n) => n > 0), `a run began with deliveries owed (owed at each run's start: ${owedAtStart.join(', ')})`);
});
