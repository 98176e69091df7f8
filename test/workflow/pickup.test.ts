/**
 * client/pickup.ts against the real dev server: what it says about a workflow whose task nobody takes, for each
 * reason that the server can be put into here (no worker; workers of a Deployment without a Current Version; a run
 * pinned to a build whose worker stopped), and that it says nothing once the task is taken or while it is younger than
 * asked. Each test has a task queue and Deployment of its own.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { currentVersion, diagnosePickup, PickupWatch, type PickupDiagnosis } from '../../client/pickup';
import { workflowTypes } from '../../contract';
import { setCurrentVersion } from '../../worker/versioning';
import { fileTemporal } from '../helpers/file-temporal';
import { until } from '../helpers/workflows';

const t = fileTemporal();

function fresh() {
  const id = randomUUID().slice(0, 8);
  return { taskQueue: `pickup-${id}`, deploymentName: `pickup-${id}` };
}

const worker = (taskQueue: string, deployment: { deploymentName: string; buildId: string }, setCurrent: boolean) => t.versionedWorker(taskQueue, deployment, setCurrent);

/** A controller workflow (it waits for its first apply), started on `taskQueue`. */
async function startController(taskQueue: string, pinnedTo?: { deploymentName: string; buildId: string }): Promise<{ workflowId: string; startedAt: number }> {
  const workflowId = `lbaas/pickup-${randomUUID()}`;
  let startedAt = 0;
  const start = () => {
    startedAt = Date.now();
    return t.client.workflow.start(workflowTypes.serviceController, {
      taskQueue,
      workflowId,
      args: [{ serviceUid: workflowId.slice('lbaas/'.length) }],
      ...(pinnedTo ? { versioningOverride: { pinnedTo } } : {}),
    });
  };
  // A Version reaches its task queue's records a moment after its first poll is listed: a pinned start in between is
  // refused (FAILED_PRECONDITION "Pinned version ... is not present in task queue"; seen once in a loaded CI run).
  const notYetPresent = (err: unknown) => /is not present in task queue/.test(String((err as { cause?: unknown }).cause ?? err));
  await until(
    'the pinned start to be accepted',
    () => start().then(() => true, (err: unknown) => {
      if (pinnedTo && notYetPresent(err)) return false;
      throw err;
    }),
    30_000,
    250,
  );
  t.cleanup(() => t.client.workflow.getHandle(workflowId).terminate('test cleanup').catch(() => undefined));
  return { workflowId, startedAt };
}

const diagnose = (taskQueue: string, workflowId: string, minWaitMs = 0) => diagnosePickup(t.client, { namespace: t.namespace, taskQueue, workflowId, minWaitMs });

// Side by side: each test has its own task queue and Deployment; one waits 70 s for a stopped worker's poll to go stale.
describe('diagnosePickup and PickupWatch', { concurrency: true }, () => {
  test('no worker polls: the first workflow task waits, the reason is no-worker and the fix names the task queue', async () => {
    const { taskQueue } = fresh();
    const { workflowId, startedAt } = await startController(taskQueue);
    const d = (await diagnose(taskQueue, workflowId)) as PickupDiagnosis;
    assert.ok(d, 'a diagnosis');
    assert.ok(d.waitingMs >= 0 && d.waitingMs <= Date.now() - startedAt + 1_000, `waited ${d.waitingMs} ms`);
    assert.deepEqual(
      { ...d, waitingMs: 0, runId: '' },
      {
        reason: 'no-worker',
        workflowId,
        runId: '',
        task: 'workflow',
        taskQueue,
        waitingMs: 0,
        version: null,
        pinned: false,
        pollingBuilds: [],
        lastPollAgoMs: null,
        fix: `start lbaas worker (LBAAS_TASK_QUEUE=${taskQueue})`,
        message: `workflow task of ${workflowId} not picked up for ${Math.round(d.waitingMs / 1000)} s: no worker polls task queue ${taskQueue}; fix: start lbaas worker (LBAAS_TASK_QUEUE=${taskQueue})`,
      },
    );
    // Younger than asked: nothing to say yet.
    assert.equal(await diagnose(taskQueue, workflowId, 60_000), null);
  });

  test('workers of a Deployment without a Current Version: no-current-version, and the fix is set-current-version of the polling build; once current, the task is taken and nothing is said', async () => {
    const { taskQueue, deploymentName } = fresh();
    const version = { deploymentName, buildId: 'b1' };
    await worker(taskQueue, version, false);
    const { workflowId } = await startController(taskQueue);
    const d = await until('the poller is listed', async () => (await diagnose(taskQueue, workflowId))?.reason === 'no-current-version' && diagnose(taskQueue, workflowId), 20_000, 200);
    assert.ok(d);
    assert.equal(d.pinned, false);
    assert.deepEqual(d.pollingBuilds, ['b1']);
    assert.equal(d.fix, `temporal worker deployment set-current-version --deployment-name ${deploymentName} --build-id b1`);
    assert.match(d.message, new RegExp(`: Worker Deployment ${deploymentName} has no Current Version, so its workers \\(builds b1\\) receive nothing; fix: temporal worker deployment set-current-version`));
    assert.equal(await currentVersion(t.client, t.namespace, deploymentName), null);

    await setCurrentVersion(t.client, t.namespace, version);
    await until('the task is taken', async () => (await diagnose(taskQueue, workflowId)) === null, 20_000, 200);
  });

  test('a run pinned to a build whose worker stopped, while another build polls and is current: busy-or-stopped until the stopped poller is stale, then version-not-polled, pinned, the fix names the build', { timeout: 180_000 }, async () => {
    const { taskQueue, deploymentName } = fresh();
    // Temporal 1.32 refuses to pin a run to a Version its task queue has never seen: a worker of b1 polls first.
    const b1 = await worker(taskQueue, { deploymentName, buildId: 'b1' }, false);
    await t.untilPolled(taskQueue);
    // Listed as a poller is not yet registered: the Version records its task queue a moment later, and a worker stopped
    // before that leaves a Version the server refuses to pin to (FAILED_PRECONDITION "is not present in task queue",
    // for the whole 30 s of a loaded CI run). b1 stops once the Version lists this task queue's workflow tasks.
    await until(
      `Version ${deploymentName}.b1 to list task queue ${taskQueue}`,
      async () => {
        const answer = await t.client.workflowService
          .describeWorkerDeploymentVersion({ namespace: t.namespace, deploymentVersion: { deploymentName, buildId: 'b1' } })
          .catch((err: unknown) => ((err as { code?: number }).code === 5 ? null : Promise.reject(err)));
        return (answer?.workerDeploymentVersionInfo?.taskQueueInfos ?? []).some((q) => q.name === taskQueue && q.type === 1);
      },
      30_000,
      200,
    );
    await b1.stop();
    await worker(taskQueue, { deploymentName, buildId: 'b2' }, true);
    const { workflowId } = await startController(taskQueue, { deploymentName, buildId: 'b1' });
    const early = (await diagnose(taskQueue, workflowId)) as PickupDiagnosis;
    assert.deepEqual([early?.reason, early?.pinned, early?.version], ['workers-busy', true, { deploymentName, buildId: 'b1' }]);
    assert.match(early.message, /or workers stopped within the last 70 s/);
    const d = await until('the stopped poller to count as gone', async () => {
      const x = await diagnose(taskQueue, workflowId);
      return x?.reason === 'version-not-polled' ? x : false;
    }, 120_000, 2_000);
    assert.deepEqual([d.reason, d.pinned, d.version, d.pollingBuilds, d.task], ['version-not-polled', true, { deploymentName, buildId: 'b1' }, ['b2'], 'workflow']);
    // b2 is current and polls: the lbaas workers of b2 would take the run over (these test workers have no sweep).
    assert.equal(
      d.fix,
      'start a worker of build b1 (LBAAS_BUILD_ID=b1), or let lbaas workers of the Current Version b2 take the run over: they do once nothing has polled b1 for 90 s, checking every 30 s (LBAAS_STRANDED_AFTER_SECONDS; an entity moves to their build, a pass is started again on it)',
    );
    assert.match(d.message, new RegExp(`the run is pinned to ${deploymentName}\\.b1 and no worker of that build polls task queue ${taskQueue} \\(builds polling: b2\\); fix: start a worker of build b1`));
  });

  test('PickupWatch reports once a task has waited long enough, again only after the repeat interval, and says when it was taken', async () => {
    const { taskQueue, deploymentName } = fresh();
    const { workflowId } = await startController(taskQueue);
    const reports: PickupDiagnosis[] = [];
    let resolved = 0;
    const watch = new PickupWatch({ client: t.client, namespace: t.namespace, taskQueue, target: () => ({ workflowId }), report: (d) => reports.push(d), resolved: () => resolved++, reportAfterMs: 0, repeatMs: 60_000 });
    const t0 = Date.now();
    assert.equal((await watch.check(t0))?.reason, 'no-worker');
    assert.equal((await watch.check(t0 + 1_000))?.reason, 'no-worker');
    assert.equal(reports.length, 1, 'not again within the repeat interval');
    await watch.check(t0 + 61_000);
    assert.equal(reports.length, 2, 'again after it');
    await worker(taskQueue, { deploymentName, buildId: 'b1' }, true);
    await until('the task is taken', async () => (await watch.check()) === null, 20_000, 200);
    assert.equal(resolved, 1);
    await watch.stop();
  });
});
