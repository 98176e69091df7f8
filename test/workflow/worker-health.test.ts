/**
 * worker/health.ts against the real dev server and a real Worker: not ready before it starts, while the server lists
 * no poller of its identity, while the server does not know its Version, and once it shuts down; ready while it
 * polls; live throughout. (The process's endpoints: test/ops/first-install.test.ts.)
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { startWorker, type RunningWorker } from '../../worker/start';
import { WorkerHealth } from '../../worker/health';
import { stopTemporalServer, temporalServer, TEST_TOKEN, workflowBundle } from '../helpers/stack';
import { until } from '../helpers/workflows';

let address: string;
let namespace: string;
let running: RunningWorker;
const taskQueue = `health-${randomUUID().slice(0, 8)}`;
const identity = `health-test-${randomUUID().slice(0, 8)}`;
const deployment = { deploymentName: `health-${randomUUID().slice(0, 8)}`, buildId: 'b1' };

before(async () => {
  const srv = await temporalServer();
  address = srv.address;
  namespace = srv.namespace;
});
after(async () => {
  await running?.stop();
  await stopTemporalServer();
});

test('a worker is ready only while it runs, the server lists its poller and knows its Version; live throughout', async () => {
  const health = new WorkerHealth({ namespace, taskQueue, identity, checkMs: 200 });
  assert.equal(health.ready(), 'starting: connecting to Temporal and starting the worker');
  assert.equal(health.live(), null);
  running = await startWorker({
    temporal: { connection: { address }, namespace, taskQueue },
    engine: { baseUrl: 'http://127.0.0.1:9', token: TEST_TOKEN },
    workflowBundle: await workflowBundle(),
    shutdownGraceTime: '1s',
    identity,
    deployment,
  });
  health.started(running);
  await until('ready', () => health.ready() === null, 20_000, 50);

  // The same worker as seen through an identity the server lists no poller for: what it says before the first poll.
  const other = new WorkerHealth({ namespace, taskQueue, identity: 'nobody@nowhere' });
  other.started(running);
  assert.equal(await other.check(), `not polling task queue ${taskQueue} yet (the server lists no poller with identity nobody@nowhere for workflow or activity tasks)`);
  other.stop();
  // A Version the server has never heard of.
  const unknown = new WorkerHealth({ namespace, taskQueue, identity });
  unknown.started({ ...running, deployment: { deploymentName: deployment.deploymentName, buildId: 'never-polled' } });
  assert.equal(await unknown.check(), `the server does not know Version ${deployment.deploymentName}.never-polled yet`);
  unknown.stop();

  running.worker.shutdown();
  assert.match(health.ready() ?? '', /^worker is (stopping|draining|drained|stopped), not running$/);
  await running.running;
  assert.equal(health.ready(), 'worker is stopped, not running');
  assert.equal(health.live(), null, 'a worker that stopped when asked has not failed');
  health.stop();
});
