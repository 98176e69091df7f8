/**
 * `lbaas worker` on SIGTERM (worker/drain.ts), as processes started the way an operator starts them: two builds of
 * this checkout (LBAAS_BUILD_ID) in a Worker Deployment of their own. A worker whose build is no longer current keeps
 * serving the pass pinned to its build, says what it waits for, and stops once the pass has finished there; a
 * worker whose build is current stops at once.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { workflowIds } from '../../contract';
import { startSimulator, type RunningSimulator } from '../../simulator';
import { seedLoadBalancer } from '../helpers/fixtures';
import { exitWithin, spawnWorker, type WorkerProcess } from '../helpers/ops-process';
import { serviceSpec, TrackedLbaas, uniqueUid } from '../helpers/ops-services';
import { stopTemporalServer, temporalServer, TEST_TOKEN, type TemporalTestServer } from '../helpers/stack';
import { until } from '../helpers/workflows';
import { setCurrentVersion } from '../../worker/versioning';

let srv: TemporalTestServer;
let sim: RunningSimulator;
let connection: Connection;
let client: Client;
let lbaas: TrackedLbaas;
const workers: WorkerProcess[] = [];
const taskQueue = `ops-drain-${randomUUID()}`;
// A Deployment of this file's own: its Current Version is what this test changes.
const deploymentName = `drain-${randomUUID().slice(0, 8)}`;

before(async () => {
  srv = await temporalServer();
  // Deploys of 1.5-2.5 s: a pass takes long enough to send SIGTERM in the middle of it.
  sim = await startSimulator({ port: 0, token: TEST_TOKEN, deployMs: { min: 1500, max: 2500 }, seed: 11 });
  connection = await Connection.connect({ address: srv.address });
  client = new Client({ connection, namespace: srv.namespace });
  lbaas = new TrackedLbaas(client, taskQueue);
});
after(async () => {
  await lbaas?.cleanup();
  for (const w of workers) await w.kill();
  await connection?.close();
  await sim?.close();
  await stopTemporalServer();
});

function worker(buildId: string, setCurrent: boolean): WorkerProcess {
  const w = spawnWorker({
    temporalAddress: srv.address,
    namespace: srv.namespace,
    taskQueue,
    engineUrl: sim.url,
    token: TEST_TOKEN,
    setCurrent,
    extraEnv: { LBAAS_DEPLOYMENT_NAME: deploymentName, LBAAS_BUILD_ID: buildId },
  });
  workers.push(w);
  return w;
}

const currentBuild = async () => (await client.workflowService.describeWorkerDeployment({ namespace: srv.namespace, deploymentName })).workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId;

test('SIGTERM to a worker of a build that is no longer current: it serves the pass pinned to its build until the pass has finished there, saying what it waits for, then exits 0; SIGTERM to a worker of the current build: it stops at once', { timeout: 300_000 }, async () => {
  const uid = uniqueUid('ops-drain');
  const lb = seedLoadBalancer(sim, `lb-${uid}`);
  const old = worker('drain-old', true);
  // The new build polls beside it from the start (not current, it gets nothing), so that the switch below is quick.
  const fresh = worker('drain-new', false);
  await Promise.all([old.ready, fresh.ready]);
  await until('the old build current', async () => (await currentBuild().catch(() => undefined)) === 'drain-old', 30_000, 100);
  await lbaas.applyRaw(serviceSpec(uid, [lb]));
  const tagged = () => sim.objects().filter((o) => o.tags.includes(`anxccm-svc-uid=${uid}`)).length;
  await until('the first pass half done', () => tagged() >= 2, 60_000, 20);

  // A rollout: the new build becomes current, then the old worker gets SIGTERM with the pass in flight.
  assert.equal(await setCurrentVersion(client, srv.namespace, { deploymentName, buildId: 'drain-new' }), 'set');
  const pass = client.workflow.getHandle(workflowIds.pass(uid, 1));
  assert.equal((await pass.describe()).status.name, 'RUNNING', 'the pass must still run when SIGTERM comes');
  old.proc.kill('SIGTERM');
  const exit = await exitWithin(old, 240_000);
  const exitedAt = Date.now();
  assert.deepEqual(exit, { code: 0, signal: null }, old.output().slice(-3000));

  // The pass finished on the old build, before the old worker stopped, and converged; nothing was terminated.
  const d = await pass.describe();
  assert.equal(d.status.name, 'COMPLETED');
  const ranOn = d.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion;
  assert.deepEqual({ deploymentName: ranOn?.deploymentName, buildId: ranOn?.buildId }, { deploymentName, buildId: 'drain-old' });
  assert.ok((d.closeTime?.getTime() ?? Infinity) <= exitedAt, 'the old worker stopped before the pass had finished');
  assert.equal((await lbaas.waitConverged(uid, 1)).converged, true);
  const lines = old.output().split('\n');
  const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
  const steps = [
    at(/lbaas worker: SIGTERM: draining drain-[0-9a-f]+\.drain-old first \(at most 300 s, LBAAS_DRAIN_TIMEOUT_SECONDS\)/),
    at(new RegExp(`lbaas worker: draining ${deploymentName}\\.drain-old \\(the Current Version is ${deploymentName}\\.drain-new\\): waiting for \\d+ workflows? pinned to it \\(.*${workflowIds.pass(uid, 1)}.*\\) to finish; stopping anyway in \\d+ s`)),
    at(new RegExp(`lbaas worker: ${deploymentName}\\.drain-old is drained: no workflow pinned to it runs; stopping after \\d+ s of drain`)),
  ];
  assert.ok(steps.every((i) => i >= 0) && steps[0]! < steps[1]! && steps[1]! < steps[2]!, `drain lines in order: ${JSON.stringify(steps)}\n${old.output().slice(-3000)}`);

  // The current build's worker: nothing to drain for, it stops at once.
  const sent = Date.now();
  fresh.proc.kill('SIGTERM');
  assert.deepEqual(await exitWithin(fresh, 60_000), { code: 0, signal: null });
  assert.ok(Date.now() - sent < 40_000, `the current build's worker took ${Date.now() - sent} ms to stop`);
  assert.match(fresh.output(), new RegExp(`lbaas worker: stopping now: ${deploymentName}\\.drain-new is the Current Version, so its other workers take its work`));
});
