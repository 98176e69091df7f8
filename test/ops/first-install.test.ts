/**
 * `lbaas worker` PROCESSES started as the README starts them (no LBAAS_SET_CURRENT_VERSION): the first worker of a
 * Worker Deployment without a Current Version makes its build current, a later build does not switch one that is
 * current unless LBAAS_SET_CURRENT_VERSION=true, two builds starting at once on a fresh Deployment agree on one, and
 * the worker's /healthz and /readyz (LBAAS_HEALTH_ADDRESS) say what it is doing. Each test uses a Deployment name and
 * task queue of its own, which is a fresh install as far as Worker Versioning goes.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { NativeConnection, Worker } from '@temporalio/worker';
import { drawPort } from '../../common/ports';
import { currentVersion } from '../../client/pickup';
import { fileTemporal } from '../helpers/file-temporal';
import { exitWithin, type WorkerProcess } from '../helpers/ops-process';
import { workflowBundle } from '../helpers/stack';
import { until } from '../helpers/workflows';

const t = fileTemporal();

/** A fresh Deployment and task queue. */
function install() {
  const id = randomUUID().slice(0, 8);
  return { deploymentName: `fi-${id}`, taskQueue: `fi-${id}` };
}

function worker(o: { deploymentName: string; taskQueue: string; buildId: string; setCurrent?: boolean | 'unset'; healthAddress?: string; bundleAtStart?: boolean }): WorkerProcess {
  // No Engine is needed: nothing is applied.
  return t.workerProcess({
    taskQueue: o.taskQueue,
    setCurrent: o.setCurrent ?? 'unset',
    ...(o.healthAddress ? { healthAddress: o.healthAddress } : {}),
    ...(o.bundleAtStart ? { bundleAtStart: true } : {}),
    extraEnv: { LBAAS_DEPLOYMENT_NAME: o.deploymentName, LBAAS_BUILD_ID: o.buildId },
  });
}

/** The start-up line's word on the Current Version: what is in the parentheses after the build. */
function currentNote(w: WorkerProcess, deploymentName: string, buildId: string): string {
  const m = new RegExp(`build ${deploymentName}\\.${buildId} \\(([^)]*)\\)`).exec(w.output());
  assert.ok(m, `start-up line of build ${buildId}:\n${w.output().slice(-2000)}`);
  return m[1] as string;
}

test('a fresh install: the first worker at defaults makes its own build current and says why', async () => {
  const i = install();
  const w = worker({ ...i, buildId: 'b1' });
  await w.ready;
  assert.equal(currentNote(w, i.deploymentName, 'b1'), 'made current: no Version was current');
  assert.deepEqual(await currentVersion(t.client, t.namespace, i.deploymentName), { deploymentName: i.deploymentName, buildId: 'b1' });
  assert.doesNotMatch(w.output(), /warning/);
});

test('a Deployment with another build current is not switched by a worker at defaults, which warns with the command that would', async () => {
  const i = install();
  const first = worker({ ...i, buildId: 'b1' });
  await first.ready;
  const second = worker({ ...i, buildId: 'b2' });
  await second.ready;
  assert.equal(currentNote(second, i.deploymentName, 'b2'), `not current: ${i.deploymentName}.b1 is`);
  // The warning follows the start-up line.
  await until('the warning', () => second.output().includes('lbaas worker: warning:'), 10_000, 50);
  assert.match(
    second.output(),
    new RegExp(
      `lbaas worker: warning: build b2 receives only workflows pinned to it while ${i.deploymentName}\\.b1 is the Current Version; ` +
        `to make it current: temporal worker deployment set-current-version --deployment-name ${i.deploymentName} --build-id b2 \\(docs/operations\\.md#upgrading-lbaas\\)\n`,
    ),
  );
  assert.deepEqual(await currentVersion(t.client, t.namespace, i.deploymentName), { deploymentName: i.deploymentName, buildId: 'b1' });
});

test('LBAAS_SET_CURRENT_VERSION=true switches a Deployment whose Current Version is another build; false leaves even a fresh one alone', async () => {
  const i = install();
  const first = worker({ ...i, buildId: 'b1' });
  await first.ready;
  const second = worker({ ...i, buildId: 'b2', setCurrent: true });
  await second.ready;
  assert.equal(currentNote(second, i.deploymentName, 'b2'), 'made current: LBAAS_SET_CURRENT_VERSION=true');
  assert.deepEqual(await currentVersion(t.client, t.namespace, i.deploymentName), { deploymentName: i.deploymentName, buildId: 'b2' });

  const fresh = install();
  const never = worker({ ...fresh, buildId: 'b1', setCurrent: false });
  await never.ready;
  assert.equal(currentNote(never, fresh.deploymentName, 'b1'), 'current left as it is: LBAAS_SET_CURRENT_VERSION=false');
  // Its poll has registered the Deployment, which has no Current Version.
  await until('the Deployment is known', async () => (await t.client.workflowService.describeWorkerDeployment({ namespace: t.namespace, deploymentName: fresh.deploymentName }).then(() => true, () => false)), 20_000, 200);
  assert.equal(await currentVersion(t.client, t.namespace, fresh.deploymentName), null);
});

test('two different builds starting at once on a fresh install: exactly one becomes current, the other says so and keeps it', async () => {
  const i = install();
  const [a, b] = [worker({ ...i, buildId: 'ba' }), worker({ ...i, buildId: 'bb' })];
  await Promise.all([a.ready, b.ready]);
  const current = await currentVersion(t.client, t.namespace, i.deploymentName);
  assert.ok(current?.buildId === 'ba' || current?.buildId === 'bb', JSON.stringify(current));
  const [winner, loser] = current.buildId === 'ba' ? [a, b] : [b, a];
  const loserBuild = current.buildId === 'ba' ? 'bb' : 'ba';
  assert.equal(currentNote(winner, i.deploymentName, current.buildId), 'made current: no Version was current');
  assert.equal(currentNote(loser, i.deploymentName, loserBuild), `not current: ${i.deploymentName}.${current.buildId} is`);
  // Switched once: the routing config's change time is that of the one switch, and stays the winner's.
  await new Promise((r) => setTimeout(r, 2_000));
  assert.deepEqual(await currentVersion(t.client, t.namespace, i.deploymentName), current);
});

test('workers without Worker Versioning polling the task queue (a release being drained): a new worker at defaults leaves no Version current and says when to switch', async () => {
  const i = install();
  const native = await NativeConnection.connect({ address: t.address });
  const old = await Worker.create({ connection: native, namespace: t.namespace, taskQueue: i.taskQueue, workflowBundle: await workflowBundle() });
  const oldRun = old.run();
  try {
    // The unversioned worker's poll is listed before the new worker looks.
    await t.untilPolled(i.taskQueue);
    const w = worker({ ...i, buildId: 'b1' });
    await w.ready;
    assert.equal(currentNote(w, i.deploymentName, 'b1'), 'not current: unversioned workers poll');
    await until('the warning', () => w.output().includes('lbaas worker: warning:'), 10_000, 50);
    assert.match(
      w.output(),
      new RegExp(
        `lbaas worker: warning: build b1 receives nothing while workers without Worker Versioning poll task queue ${i.taskQueue} and no Version is current; ` +
          `after draining them: temporal worker deployment set-current-version --deployment-name ${i.deploymentName} --build-id b1 \\(docs/operations\\.md#from-a-release-without-worker-versioning\\)\n`,
      ),
    );
    assert.equal(await currentVersion(t.client, t.namespace, i.deploymentName), null);
  } finally {
    old.shutdown();
    await oldRun;
    await native.close();
  }
});

test('/readyz: 503 while the worker starts, 200 once it polls and its Version is known; /healthz 200 throughout; SIGTERM still exits 0', async () => {
  const i = install();
  const port = await drawPort(new Set());
  // Bundling the workflows at start (a few seconds) keeps the worker from polling while the endpoint already answers.
  const w = worker({ ...i, buildId: 'b1', healthAddress: `127.0.0.1:${port}`, bundleAtStart: true });
  const get = async (path: string) => {
    const r = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: r.status, body: await r.text() };
  };
  const first = await until('the health endpoint answers', async () => get('/readyz').catch(() => false), 60_000, 50);
  assert.deepEqual(first, { status: 503, body: 'starting: connecting to Temporal and starting the worker\n' });
  assert.deepEqual(await get('/healthz'), { status: 200, body: 'ok\n' });
  await w.ready;
  const started = Date.now();
  await until('ready', async () => (await get('/readyz')).status === 200, 30_000, 100);
  console.log(`ready ${Date.now() - started} ms after the start-up line`);
  assert.deepEqual(await get('/readyz'), { status: 200, body: 'ok\n' });
  assert.deepEqual(await get('/nope'), { status: 404, body: 'no such path: /nope; /healthz, /readyz\n' });
  w.proc.kill('SIGTERM');
  const exit = await exitWithin(w, 40_000);
  assert.deepEqual(exit, { code: 0, signal: null });
  assert.match(w.output(), new RegExp(`health on http://127\\.0\\.0\\.1:${port}/healthz and /readyz`));
});
