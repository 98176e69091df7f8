/**
 * The worker's JSON log lines (LBAAS_LOG_FORMAT=json), on a worker process started the way an operator starts it,
 * its output parsed line by line.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { startSimulator, type RunningSimulator } from '../../simulator';
import { seedLoadBalancer } from '../helpers/fixtures';
import { exitWithin, spawnWorker, type WorkerProcess } from '../helpers/ops-process';
import { serviceSpec, TrackedLbaas, uniqueUid } from '../helpers/ops-services';
import { stopTemporalServer, temporalServer, TEST_TOKEN } from '../helpers/stack';
import { workflowIds } from '../../contract';

let sim: RunningSimulator;
let connection: Connection;
let worker: WorkerProcess;
let lbaas: TrackedLbaas;

before(async () => {
  const srv = await temporalServer();
  sim = await startSimulator({ port: 0, token: TEST_TOKEN, deployMs: { min: 20, max: 60 }, seed: 7 });
  const taskQueue = `ops-logs-${randomUUID()}`;
  worker = spawnWorker({
    temporalAddress: srv.address,
    namespace: srv.namespace,
    taskQueue,
    engineUrl: sim.url,
    token: TEST_TOKEN,
    extraEnv: { LBAAS_LOG_FORMAT: 'json', LBAAS_LOG_LEVEL: 'DEBUG' },
  });
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

type Line = Record<string, unknown> & { time: string; level: string; message: string };

test('LBAAS_LOG_FORMAT=json: every line the worker writes is one JSON object with time, level and message; lines about a workflow or its activities carry workflow_id, run_id, service_uid and, in a load balancer run, load_balancer; the token is in none', async () => {
  const uid = uniqueUid('ops-logs');
  const lb = seedLoadBalancer(sim, `lb-${uid}`);
  await lbaas.applyRaw(serviceSpec(uid, [lb]));
  assert.equal((await lbaas.waitConverged(uid, 1)).converged, true);
  const lbRunId = (await lbaas.client.workflow.getHandle(workflowIds.loadBalancer(uid, lb)).describe()).runId;
  // A graceful stop flushes what the SDK still buffers and logs the shutdown.
  worker.proc.kill('SIGTERM');
  await exitWithin(worker, 60_000);

  const raw = worker.output().split('\n').filter((l) => l.trim() !== '');
  const lines = raw.map((l, i) => {
    try {
      return JSON.parse(l) as Line;
    } catch {
      throw new Error(`line ${i + 1} is not JSON: ${l}`);
    }
  });
  for (const l of lines) {
    assert.equal(typeof l.message, 'string');
    assert.match(l.level, /^(TRACE|DEBUG|INFO|WARN|ERROR)$/);
    assert.ok(!Number.isNaN(Date.parse(l.time)), `time of ${JSON.stringify(l)}`);
  }
  assert.ok(lines.some((l) => l.level === 'INFO' && l.message.startsWith('lbaas worker: task queue ')), 'the start-up line');
  assert.ok(lines.some((l) => l.message === 'Worker state changed' && l.state === 'STOPPED'), 'the SDK lines are JSON too');

  // The load balancer run's activities: their lines name the service, the load balancer, the workflow and its run.
  const lbLines = lines.filter((l) => l.workflow_id === workflowIds.loadBalancer(uid, lb));
  const completed = lbLines.filter((l) => l.message === 'Activity completed');
  assert.ok(completed.length >= 3, `activity lines of the load balancer run: ${JSON.stringify(lbLines.slice(0, 3))}`);
  for (const l of lbLines) {
    assert.equal(l.service_uid, uid);
    assert.equal(l.load_balancer, lb);
    assert.equal(l.run_id, lbRunId, JSON.stringify(l));
  }
  assert.deepEqual([...new Set(completed.map((l) => l.activityType))].sort(), ['realizeObjects', 'retrieveState']);

  // The pass's lines name the service and no load balancer.
  const passLines = lines.filter((l) => l.workflow_id === `lbaas/${uid}/pass/1`);
  assert.ok(passLines.length > 0, 'lines about the pass');
  for (const l of passLines) {
    assert.equal(l.service_uid, uid);
    assert.equal(l.load_balancer, undefined);
    assert.equal(typeof l.run_id, 'string');
  }
  assert.ok(!worker.output().includes(TEST_TOKEN), 'the token in a log line');
});
