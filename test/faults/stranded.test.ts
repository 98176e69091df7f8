/**
 * The stranded-run sweep (worker/stranded.ts) on the real dev server, with worker processes of two builds of this
 * checkout (LBAAS_BUILD_ID) in a Worker Deployment of their own: the old build's worker is SIGKILLed (a rolling update
 * that gives it no time to drain) while a pass of service B is in flight and while the controller of service C is
 * pinned to that build (a versioning override: how a PINNED entity looks). The new build's worker, made current as the
 * Helm chart does (LBAAS_SET_CURRENT_VERSION=true), ends B's stranded pass and resets C onto its own build, with no
 * other command. It judges the killed build dead after 10 s without a poll and sweeps every 2 s
 * (LBAAS_TEST_STRANDED_TIMING) instead of after the product's 90 s and every 30 s: nothing here depends on the
 * threshold, since no live worker of another build is about (the defaults and their floor are test/unit/stranded.test.ts's).
 * test/upgrade/upgrade.test.ts does the pass part across real releases, at the default threshold.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { temporal } from '@temporalio/proto';
import { workflowIds } from '../../contract';
import { drawPort } from '../../common/ports';
import { everyCreatedObjectTagged, exactlyDesired, noDuplicates } from '../chaos/invariants';
import { seedLoadBalancer } from '../helpers/fixtures';
import { rollout } from '../helpers/file-temporal';
import { scrape, sumOf } from '../helpers/ops-process';
import { serviceSpec, uniqueUid, valid } from '../helpers/ops-services';
import { until } from '../helpers/workflows';

const ro = rollout({ name: 'stranded', seed: 13 });
const { taskQueue, deploymentName } = ro;

test('a build killed mid-pass: the current build terminates its stranded pass (children first, naming the build), and resets the controllers pinned to the dead build onto the current build, where their specs are re-applied and they converge without counting a failure', { timeout: 420_000 }, async () => {
  const b = uniqueUid('ops-stranded-b');
  const c = uniqueUid('ops-stranded-c');
  const { sim, lbaas, t } = ro;
  const { client, namespace } = t;
  const lbB = seedLoadBalancer(sim, `lb-${b}`);
  const lbC = seedLoadBalancer(sim, `lb-${c}`);
  const before = sim.objects();
  const old = ro.worker('stranded-old', true);
  await old.ready;
  await ro.untilCurrent('stranded-old');

  // C converges on the old build, then is pinned to it, as a PINNED entity would be.
  const specC = serviceSpec(c, [lbC]);
  await lbaas.applyRaw(specC);
  assert.equal((await lbaas.waitConverged(c, 1)).converged, true);
  const cRun = (await lbaas.controller(c).describe()).runId;
  await client.workflowService.updateWorkflowExecutionOptions({
    namespace,
    workflowExecution: { workflowId: workflowIds.controller(c), runId: cRun },
    workflowExecutionOptions: {
      versioningOverride: { pinned: { behavior: temporal.api.workflow.v1.VersioningOverride.PinnedOverrideBehavior.PINNED_OVERRIDE_BEHAVIOR_PINNED, version: { deploymentName, buildId: 'stranded-old' } } },
    },
    updateMask: { paths: ['versioning_override'] },
  });

  // B's first pass is in flight when the old build's only worker is killed.
  const specB = serviceSpec(b, [lbB]);
  await lbaas.applyRaw(specB);
  await ro.untilTagged(b, 2);
  await old.kill();
  const killedAt = Date.now();
  const pinnedToOld = `TaskQueue = '${taskQueue}' AND TemporalWorkerDeploymentVersion = '${deploymentName}:stranded-old' AND TemporalWorkflowVersioningBehavior = 'Pinned' AND ExecutionStatus = 'Running'`;
  const stranded = await until(
    'B\'s pass and C\'s controller listed as pinned to the dead build',
    async () => {
      const runs: { id: string; runId: string; type: string }[] = [];
      for await (const w of client.workflow.list({ query: pinnedToOld })) runs.push({ id: w.workflowId, runId: w.runId, type: w.type });
      return runs.some((r) => r.id === workflowIds.controller(c)) && runs.some((r) => r.id === workflowIds.controller(b)) && runs.some((r) => r.id === workflowIds.pass(b, 1)) ? runs : undefined;
    },
    15_000,
    250,
  );

  // The new build's worker, as the Helm chart starts it: LBAAS_SET_CURRENT_VERSION=true, every other setting at its
  // default but the sweep's timing.
  const metricsAddress = `127.0.0.1:${await drawPort(new Set())}`;
  const fresh = ro.worker('stranded-new', true, { metricsAddress, extraEnv: { LBAAS_TEST_STRANDED_TIMING: '10/2' } });
  await fresh.ready;
  const startedAt = Date.now();

  const converged = async (uid: string) => {
    const s = await lbaas.status(uid).catch(() => undefined);
    return s?.phase === 'Converged' && s.lastPass?.converged ? s : undefined;
  };
  const sB = await until('B converged on the new build', () => converged(b), 300_000, 1_000);
  say(`B converged ${Math.round((Date.now() - startedAt) / 1000)} s after the new worker was ready, ${Math.round((Date.now() - killedAt) / 1000)} s after the old one was killed`);
  // B's controller is PINNED to the dead build as well (every entity is): it is reset onto the new build like C's, and
  // its new run (which starts from its first task: pass numbers start again) converges without a failure.
  assert.ok(stranded.some((r) => r.id === workflowIds.controller(b) && r.type === 'serviceController'), 'B\'s controller was pinned to the dead build');
  assert.equal(sB.consecutiveFailures, 0);

  // Every stranded run was acted on, with a reason naming the dead build; passes terminated, children first.
  const lines = fresh.output().split('\n').filter((l) => l.includes(`stranded on build ${deploymentName}.stranded-old: no worker has polled it since `));
  const acted = lines.map((l) => /lbaas worker: (\S+) (\S+) \(run (\S+)\) (terminated|reset onto)/.exec(l)?.slice(1));
  assert.deepEqual(
    acted.map((a) => `${a?.[0]} ${a?.[1]} ${a?.[2]}`).sort(),
    stranded.map((r) => `${r.type} ${r.id} ${r.runId}`).sort(),
    fresh.output().slice(-3000),
  );
  const order = acted.map((a) => a?.[0]);
  assert.ok(order.lastIndexOf('reconcileLoadBalancer') < order.indexOf('reconcileService'), `children first: ${order.join(', ')}`);
  for (const r of stranded.filter((x) => x.type !== 'serviceController')) {
    const last = await client.workflowService.getWorkflowExecutionHistoryReverse({ namespace: namespace, execution: { workflowId: r.id, runId: r.runId }, maximumPageSize: 1 });
    assert.match(last.history?.events?.[0]?.workflowExecutionTerminatedEventAttributes?.reason ?? '', new RegExp(`^stranded on build ${deploymentName}\\.stranded-old: no worker has polled it since `), r.id);
  }

  // C: a new run on the new build, pinned there by the override the reset set (its own behavior stays the one its
  // code declares, PINNED), its spec re-applied from the old run.
  const sC = await until('C converged in its new run', async () => ((await lbaas.controller(c).describe()).runId !== cRun ? converged(c) : undefined), 120_000, 1_000);
  assert.equal(sC.revision, 1);
  const dC = await lbaas.controller(c).describe();
  const v = dC.raw.workflowExecutionInfo?.versioningInfo;
  assert.deepEqual(
    { behavior: v?.behavior, override: v?.versioningOverride?.pinned?.version?.buildId, on: v?.deploymentVersion?.buildId },
    { behavior: temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED, override: 'stranded-new', on: 'stranded-new' },
  );
  assert.equal((await client.workflow.getHandle(workflowIds.controller(c), cRun).describe()).status.name, 'TERMINATED');

  // Counted, no workflow task failed anywhere, and the Engine holds exactly what both specs want.
  const { samples } = await scrape(metricsAddress);
  const count = (workflow_type: string, action: string) => sumOf(samples, 'lbaas_stranded_runs_total', { workflow_type, action });
  assert.deepEqual(
    { passes: count('reconcileService', 'terminated'), lbs: count('reconcileLoadBalancer', 'terminated'), controllers: count('serviceController', 'reset'), failed: sumOf(samples, 'lbaas_stranded_runs_total', { action: 'failed' }) },
    { passes: 1, lbs: stranded.filter((r) => r.type === 'reconcileLoadBalancer').length, controllers: 2, failed: 0 },
  );
  const failedTasks: string[] = [];
  for await (const w of client.workflow.list({ query: `TaskQueue = '${taskQueue}'` })) {
    for (const e of (await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory()).events ?? []) {
      // A reset writes its own failed task at the reset point (cause ResetWorkflow): the reset, not a failure of code.
      const cause = e.workflowTaskFailedEventAttributes?.cause;
      if (e.workflowTaskFailedEventAttributes && cause !== temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW) failedTasks.push(`${w.workflowId} event ${String(e.eventId)}: ${e.workflowTaskFailedEventAttributes.failure?.message ?? ''}`);
    }
  }
  assert.deepEqual(failedTasks, []);
  const input = { objects: sim.objects(), before: Object.fromEntries(before.map((o) => [o.identifier, o])), services: [valid(specB), valid(specC)] };
  for (const inv of [exactlyDesired(input), noDuplicates(input), everyCreatedObjectTagged(input)]) assert.ok(inv.held, `${inv.name}: ${inv.detail.join('; ')}`);
});

function say(line: string): void {
  process.stderr.write(`# ${line}\n`);
}
