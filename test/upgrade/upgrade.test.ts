/**
 * `npm run test:upgrade [-- <commit>]`: upgrades of lbaas under running workflows, on the real dev server, with real
 * `lbaas worker` and `lbaas` processes of both builds (docs/operations.md#upgrading-lbaas; test/upgrade/kit.ts).
 *
 * 1. From a versioned build (test/upgrade/previous-build.ts says which): it converges service A and is SIGKILLed in
 *    the middle of service B's first pass, as a rolling update kills every old pod; the current build's worker starts
 *    as the Helm chart starts it and becomes current; A receives a new spec, which its controller (AUTO_UPGRADE)
 *    applies on the new build; B's pass (PINNED to the dead build) is terminated by the new worker's stranded-run
 *    sweep (worker/stranded.ts), and B's controller runs a fresh pass on the new build that converges, with no
 *    operator command; B's delete then succeeds. Only the new build needs the sweep.
 * 2. From the last unversioned build, with the drain of docs/operations.md: the versioned build starts beside it and
 *    gets nothing; once no pass runs, `temporal worker deployment set-current-version` switches, and the controllers
 *    move to the new build at their next task (a new spec for A, a resync for B).
 *
 * Both end with every workflow ended well (or, in 1, terminated by the sweep with a reason naming the dead build) or a
 * converged controller on the new build, no failed workflow task in any history, and exactly the desired objects of
 * both services on the Engine.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { test, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { ensureTemporalCli } from '../../dev/temporal-path';
import { defaultDeploymentVersion, versionText } from '../../worker/versioning';
import { REPO_ROOT } from '../helpers/cli';
import { until } from '../helpers/workflows';
import { buildOf, ok, say, searchValue, startUpgrade } from './kit';
import { lastUnversioned, upgradeFrom } from './previous-build';

const PASS_TYPES = "('reconcileService', 'reconcileLoadBalancer', 'planService', 'importServices', 'fullResync')";
const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
const newBuild = versionText(defaultDeploymentVersion());

/**
 * A build cannot be upgraded to itself. A commit someone named is then a mistake; the default is HEAD itself only on
 * the first versioned commit, which has no versioned predecessor, and the scenario is skipped there.
 */
function isHead(from: { commit: string; named: string; explicit?: boolean }, t: TestContext): boolean {
  if (from.commit !== head) return false;
  if (from.explicit) throw new Error(`nothing to upgrade from: ${from.named} (${from.commit.slice(0, 12)}) is this checkout's HEAD; give an older commit`);
  t.skip(`${from.named} is this checkout's HEAD: no earlier versioned build to upgrade from`);
  return true;
}

test('from a versioned build, the old workers killed mid-pass as a rolling update does: the new build ends the stranded pass, its controller runs a fresh one there, nothing fails, the Engine holds exactly the desired objects, and the delete succeeds', { timeout: 900_000 }, async (t) => {
  const from = await upgradeFrom();
  if (isHead(from, t)) return;
  const u = await startUpgrade(from);
  try {
    // 1. The previous build runs the task queue: A converges, B's first pass is in flight when its worker is killed.
    const oldWorker = u.worker('old', true);
    await oldWorker.ready;
    const oldBuild = buildOf(oldWorker);
    if (!oldBuild) throw new Error(`${from.named} (${from.commit.slice(0, 12)}) runs unversioned workers: give a versioned commit (the second test starts from an unversioned one)`);
    say(`previous build ${oldBuild} (${from.named}), current build ${newBuild}`);
    assert.notEqual(oldBuild, newBuild, 'the two builds must have different build ids');
    ok(await u.cli('old', ['apply', '-f', u.specs.a1.file, '--wait']), 'apply A on the previous build');
    ok(await u.cli('old', ['apply', '-f', u.specs.b1.file]), 'apply B on the previous build');
    await until('B half done: some of its objects created, not all', () => u.taggedB() >= 4, 60_000, 20);
    // A Deployment's rolling update with maxUnavailable: every old pod goes at once, with no time to drain.
    await oldWorker.kill();
    const killedAt = Date.now();
    const createdAtKill = u.taggedB();
    say(`previous build's worker killed with ${createdAtKill} of B's 24 objects created`);
    // What is pinned to the dead build now: B's pass and its load balancer children (the drain query of docs/operations.md).
    const pinnedToOld = `TemporalWorkerDeploymentVersion = '${searchValue(oldBuild)}' AND TemporalWorkflowVersioningBehavior = 'Pinned' AND ExecutionStatus = 'Running'`;
    const stranded: { id: string; runId: string; type: string }[] = [];
    for await (const w of u.client.workflow.list({ query: pinnedToOld })) stranded.push({ id: w.workflowId, runId: w.runId, type: w.type });
    assert.deepEqual([...new Set(stranded.map((w) => w.type))].sort(), ['reconcileLoadBalancer', 'reconcileService'], `B's pass should be pinned to ${oldBuild}: ${stranded.map((w) => w.id).join(', ') || 'nothing'}`);

    // 2. The new build's worker starts with every setting at its default except LBAAS_SET_CURRENT_VERSION=true, which
    // the Helm chart sets on every worker (with a Current Version already there, that is how the rollout makes the
    // new build current). No operator command follows.
    const started = Date.now();
    const newWorker = u.worker('new', true);
    await newWorker.ready;
    assert.equal(buildOf(newWorker), newBuild);
    const d = await u.client.workflowService.describeWorkerDeployment({ namespace: u.server.namespace, deploymentName: 'lbaas' });
    assert.equal(d.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId, defaultDeploymentVersion().buildId);

    // 3. A controller receives a new spec after the upgrade: it moves to the new build and converges there.
    const applied = JSON.parse(ok(await u.cli('new', ['apply', '-f', u.specs.a2.file, '--wait', '-o', 'json']), 'apply A revision 2 on the new build').stdout) as { revision: number; converged: boolean };
    assert.deepEqual({ revision: applied.revision, converged: applied.converged }, { revision: 2, converged: true });

    // 4. B converges on the new build by itself: the new worker's sweep finds the old build's last poll over 90 s old,
    // terminates B's stranded pass (children first), and B's controller runs a fresh pass on the new build at once.
    const b = await until(
      'B converged on the new build',
      async () => {
        const s = await u.lbaas.status('upgrade-b');
        return s.phase === 'Converged' && s.lastPass?.converged ? s : undefined;
      },
      300_000,
      1_000,
    );
    const convergedAfter = Math.round((Date.now() - started) / 1000);
    assert.equal(b.revision, 1);
    assert.ok((b.lastPass?.pass ?? 0) >= 2, `B converged in pass ${b.lastPass?.pass}: the stranded pass 1 cannot have converged`);
    assert.equal(b.consecutiveFailures, 0, 'a stranded pass is not counted as the service\'s failure');
    const sweepLines = newWorker.output().split('\n').filter((l) => l.includes(`terminated: stranded on build ${oldBuild}: no worker has polled it since `));
    assert.deepEqual(sweepLines.map((l) => /lbaas worker: (\S+ \S+) \(run (\S+)\)/.exec(l)?.slice(1).join(' ')).sort(), stranded.map((w) => `${w.type} ${w.id} ${w.runId}`).sort(), newWorker.output().slice(-3000));
    say(`B converged in pass ${b.lastPass?.pass} ${convergedAfter} s after the new worker started (${createdAtKill} of its objects were created when the old worker was killed)`);

    // 5. Everything ended well but the stranded runs, which the sweep terminated naming the dead build; passes ran on
    // both builds; no workflow task failed; the Engine holds exactly the desired objects.
    const { passBuilds, terminated } = await u.checkEnd({ stranded: oldBuild });
    assert.deepEqual(terminated.map((r) => `${r.id} ${r.runId}`), stranded.map((w) => `${w.id} ${w.runId}`).sort());
    const terminatedAt = Math.max(...terminated.map((r) => r.at));
    say(`the sweep terminated the stranded runs ${Math.round((terminatedAt - killedAt) / 1000)} s after the old worker was killed, ${Math.round((terminatedAt - started) / 1000)} s after the new one was started`);
    assert.deepEqual(passBuilds, [searchValue(oldBuild), searchValue(newBuild)].sort());
    await until('no pinned workflow running on the previous build', async () => (await u.client.workflow.count(pinnedToOld)).count === 0, 60_000, 250);

    // 6. The delete after the upgrade succeeds and leaves nothing of B.
    ok(await u.cli('new', ['delete', 'upgrade-b', '--wait']), 'delete B on the new build');
    assert.equal(u.taggedB(), 0, 'objects of B left after the delete');
  } finally {
    await u.close();
  }
});

test('from the last unversioned build: the versioned build waits beside it, the passes drain, set-current-version switches, the controllers move on, nothing fails, the Engine holds exactly the desired objects', { timeout: 900_000 }, async () => {
  const from = await lastUnversioned();
  if (from.commit === head) throw new Error(`nothing to upgrade from: ${from.named} (${from.commit.slice(0, 12)}) is this checkout's HEAD`);
  const u = await startUpgrade(from);
  try {
    const oldWorker = u.worker('old', false);
    await oldWorker.ready;
    if (buildOf(oldWorker)) throw new Error(`${from.named} (${from.commit.slice(0, 12)}) runs versioned workers (${buildOf(oldWorker)}): LBAAS_UPGRADE_FROM_UNVERSIONED must name an unversioned commit`);
    say(`previous build unversioned (${from.named}, ${from.commit.slice(0, 12)}), current build ${newBuild}`);
    ok(await u.cli('old', ['apply', '-f', u.specs.a1.file, '--wait']), 'apply A on the previous build');
    ok(await u.cli('old', ['apply', '-f', u.specs.b1.file]), 'apply B on the previous build');

    // The versioned build starts beside the old one and is not current: it gets no task, so B's pass stays unversioned.
    const newWorker = u.worker('new', false);
    await newWorker.ready;
    assert.equal(buildOf(newWorker), newBuild);
    await until('B half done', () => u.taggedB() >= 4, 60_000, 20);
    // The server knows the Deployment once the new worker's first poll reached it (its start-up line comes earlier).
    const before = await until('the new Version registered', () => u.client.workflowService.describeWorkerDeployment({ namespace: u.server.namespace, deploymentName: 'lbaas' }).catch(() => undefined), 30_000, 100);
    assert.equal(before.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion ?? null, null, 'no Current Version before the switch');

    // The drain of docs/operations.md: no pass running (nothing else starts one here), then switch at once.
    const passesRunning = `WorkflowType IN ${PASS_TYPES} AND ExecutionStatus = 'Running'`;
    await until('no pass running', async () => (await u.client.workflow.count(passesRunning)).count === 0, 120_000, 250);
    const temporal = await ensureTemporalCli({ progress: say });
    const switched = await promisify(execFile)(temporal, [
      'worker', 'deployment', 'set-current-version', '--deployment-name', 'lbaas', '--build-id', defaultDeploymentVersion().buildId,
      '--address', u.server.address, '--namespace', u.server.namespace, '--yes',
    ]);
    say(`set-current-version: ${switched.stdout.trim().split('\n').join(' | ')}`);
    oldWorker.proc.kill('SIGTERM');
    assert.deepEqual(await oldWorker.exited, { code: 0, signal: null });

    // The controllers move to the new build at their next task: a new spec for A, a resync for B.
    const applied = JSON.parse(ok(await u.cli('new', ['apply', '-f', u.specs.a2.file, '--wait', '-o', 'json']), 'apply A revision 2 on the new build').stdout) as { revision: number; converged: boolean };
    assert.deepEqual({ revision: applied.revision, converged: applied.converged }, { revision: 2, converged: true });
    ok(await u.cli('new', ['resync', 'upgrade-b']), 'resync B on the new build');
    await until('B resynced on the new build', async () => ((await u.lbaas.status('upgrade-b')).lastPass?.pass ?? 0) >= 2, 60_000, 250);

    const { passBuilds } = await u.checkEnd();
    assert.deepEqual(passBuilds, [searchValue(newBuild), 'unversioned'].sort());
  } finally {
    await u.close();
  }
});
