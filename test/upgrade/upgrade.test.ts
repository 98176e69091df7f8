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
 * 2. From the previous release (entities AUTO_UPGRADE, workflows/legacy/) to this build, and on to a variant of this
 *    build whose controller loop changed (test/upgrade/variant-build.ts), each time with a pool change reaching its
 *    services and their passes in flight when the new build becomes current, the old build's worker left running (it
 *    serves what is pinned to it): every controller and the pool move to the new build by continue-as-new (the
 *    previous release's runs through workflows/legacy/, this build's because the new build's worker wakes them),
 *    and are pinned there; no workflow task fails; the Engine holds exactly the desired objects. Also says how long
 *    the move took: LBAAS_UPGRADE_IDLE_SERVICES (default 10) more services on the pool, idle, are there to measure.
 * 3. From the last unversioned build, with the drain of docs/operations.md: the versioned build starts beside it and
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
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { validateSpec } from '../../domain';
import type { ServiceSpec } from '../../domain/types';
import { everyCreatedObjectTagged, exactlyDesired, noDuplicates } from '../chaos/invariants';
import { exampleSpec } from '../helpers/fixtures';
import { buildOf, failedWorkflowTasks, ok, say, searchValue, startUpgrade } from './kit';
import { lastUnversioned, upgradeFrom } from './previous-build';
import { buildVariant } from './variant-build';

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

test('from the previous release to this build and on to a build whose controller loop changed, each with a pool change in flight: every controller and the pool move to the new build by continue-as-new and are pinned there, no workflow task fails, the Engine holds exactly the desired objects', { timeout: 1_200_000 }, async (t) => {
  const from = await upgradeFrom();
  if (isHead(from, t)) return;
  const idleCount = Number(process.env.LBAAS_UPGRADE_IDLE_SERVICES ?? 10);
  const u = await startUpgrade(from);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lbaas-upgrade-move-'));
  const variant = buildVariant(`${defaultDeploymentVersion().buildId}-variant`);
  try {
    const lbs = u.specs.a1.spec.loadBalancers;
    const node = (n: number) => ({ name: `node-${n}`, address: `10.0.1.${n}` });
    const poolFile = (n: number) => {
      const file = path.join(dir, `pool-${n}.json`);
      writeFileSync(file, JSON.stringify({ name: 'upgrade-nodes', servers: Array.from({ length: n }, (_, i) => node(i + 1)) }));
      return file;
    };
    // Services on the pool that reconcile each pool change (objects on the Engine), and idle ones (no ports: nothing
    // on the Engine, no pass to speak of) that are there to be moved.
    const busy = [1, 2, 3].map((n) => ({ serviceUid: `upgrade-p${n}`, nameSuffix: `p${n}.upgrade.test`, externalAddresses: [`203.0.113.3${n}`] }));
    const busyFile = (b: (typeof busy)[number]) => {
      const file = path.join(dir, `${b.serviceUid}.json`);
      const raw = exampleSpec(lbs, b);
      delete raw.servers;
      writeFileSync(file, JSON.stringify({ ...raw, serverPool: 'upgrade-nodes' }));
      return file;
    };
    const idle = Array.from({ length: idleCount }, (_, i) => `upgrade-idle-${i + 1}`);
    const idleSpec = (uid: string) => {
      const raw = exampleSpec(lbs, { serviceUid: uid, nameSuffix: `${uid}.upgrade.test`, externalAddresses: [], ports: {} });
      delete raw.servers;
      return { ...raw, serverPool: 'upgrade-nodes' };
    };
    const passesRunning = "WorkflowType = 'reconcileService' AND ExecutionStatus = 'Running'";
    const entities = ['lbaas/upgrade-a', ...busy.map((b) => `lbaas/${b.serviceUid}`), ...idle.map((uid) => `lbaas/${uid}`), 'lbaas-pool/upgrade-nodes'];
    /** Waits until every entity's open run is on `build`, pinned, started from a `v: 2` input; returns the seconds it took. */
    const allMovedTo = async (build: string, since: number) => {
      const query = `WorkflowType IN ('serviceController', 'serverPool') AND ExecutionStatus = 'Running' AND TemporalWorkerDeploymentVersion = '${searchValue(build)}' AND TemporalWorkflowVersioningBehavior = 'Pinned'`;
      await until(`every controller and the pool on ${build}`, async () => (await u.client.workflow.count(query)).count === entities.length, 600_000, 500).catch(async (err: unknown) => {
        const left: string[] = [];
        for await (const w of u.client.workflow.list({ query: `WorkflowType IN ('serviceController', 'serverPool') AND ExecutionStatus = 'Running' AND TemporalWorkerDeploymentVersion != '${searchValue(build)}'` })) left.push(w.workflowId);
        throw new Error(`${(err as Error).message}; not moved: ${left.sort().join(', ')}`);
      });
      const seconds = (Date.now() - since) / 1000;
      for (const id of entities) {
        const d = await u.client.workflow.getHandle(id).describe();
        const behavior = d.raw.workflowExecutionInfo?.versioningInfo?.behavior;
        assert.equal(d.status.name, 'RUNNING', id);
        assert.equal(behavior, 1, `${id} is PINNED (behavior ${String(behavior)})`);
        const history = await u.client.workflow.getHandle(id).fetchHistory();
        const input = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data;
        assert.equal((JSON.parse(Buffer.from(input ?? new Uint8Array()).toString('utf8')) as { v?: number }).v, 2, `${id}: its run started from a v: 2 input`);
      }
      return seconds;
    };
    /** Waits until every service on the pool converged the pool's revision. */
    const poolConverged = async (revision: number) => {
      const r = await u.lbaas.pools.waitConverged('upgrade-nodes', revision);
      assert.equal(r.converged, true, JSON.stringify(r.services.filter((x) => (x.convergedRevision ?? 0) < revision)));
      assert.equal(r.services.length, busy.length + idle.length);
    };

    // 1. The previous release runs everything: a pool of 2, A (inline servers) and the services on the pool.
    const oldWorker = u.worker('old', true);
    await oldWorker.ready;
    const oldBuild = buildOf(oldWorker) as string;
    say(`previous build ${oldBuild} (${from.named}), this build ${newBuild}, variant ${variant.buildId}; ${idleCount} idle services`);
    ok(await u.cli('old', ['pool', 'set', '-f', poolFile(2)]), 'pool set on the previous build');
    ok(await u.cli('old', ['apply', '-f', u.specs.a1.file, '--wait']), 'apply A on the previous build');
    for (const b of busy) ok(await u.cli('old', ['apply', '-f', busyFile(b)]), `apply ${b.serviceUid} on the previous build`);
    // This build's client starts controllers with a v: 2 input, which the previous release runs (and writes) as its
    // own: workflows/legacy/ takes them over as well (ENTITY_LOOP_PATCH).
    for (const uid of idle) {
      const raw = idleSpec(uid);
      const r = validateSpec(raw);
      if (!r.ok) throw new Error(JSON.stringify(r.issues));
      await u.lbaas.apply(raw, r.spec);
    }
    // `lbaas kube` applies with applyAndWait, which the previous release's controller does not know: the client falls
    // back to apply and waitConverged, and gets the pass's result all the same.
    {
      const raw = idleSpec('upgrade-kube-style');
      const r = validateSpec(raw);
      if (!r.ok) throw new Error(JSON.stringify(r.issues));
      const applied = await u.lbaas.applyAccepted(raw, r.spec);
      const { revision, result } = await applied.converged();
      assert.deepEqual({ revision, resultRevision: result.revision, converged: result.converged }, { revision: 1, resultRevision: 1, converged: true }, 'applyAndWait against the previous release');
      entities.push('lbaas/upgrade-kube-style');
      idle.push('upgrade-kube-style');
    }
    await poolConverged(1);

    // 2. A pool change reaches every service; with their passes in flight, this build starts and becomes current.
    ok(await u.cli('old', ['pool', 'set', '-f', poolFile(3)]), 'pool change on the previous build');
    await until('passes of the pool change in flight', async () => (await u.client.workflow.count(passesRunning)).count >= 2, 60_000, 100);
    const newWorker = u.worker('new', true);
    await newWorker.ready;
    const current1 = Date.now();
    const moved1 = await allMovedTo(newBuild, current1);
    say(`${entities.length} entities moved from ${oldBuild} to ${newBuild} in ${moved1.toFixed(1)} s after it became current`);
    await poolConverged(2);

    // 3. Another pool change, its passes in flight on this build, and the variant becomes current.
    ok(await u.cli('new', ['pool', 'set', '-f', poolFile(4)]), 'pool change on this build');
    await until('passes of the pool change in flight', async () => (await u.client.workflow.count(passesRunning)).count >= 2, 60_000, 100);
    const variantWorker = u.worker(variant, true);
    await variantWorker.ready;
    const current2 = Date.now();
    const variantBuild = `${defaultDeploymentVersion().deploymentName}.${variant.buildId}`;
    assert.equal(buildOf(variantWorker), variantBuild);
    const moved2 = await allMovedTo(variantBuild, current2);
    say(`${entities.length} entities moved from ${newBuild} to ${variantBuild} in ${moved2.toFixed(1)} s after it became current`);
    assert.match(newWorker.output(), new RegExp(`woke \\d+ of \\d+ controllers and pools`), 'this build woke the previous release\'s entities');
    assert.match(variantWorker.output(), new RegExp(`woke \\d+ of \\d+ controllers and pools`), 'the variant woke this build\'s entities');
    await poolConverged(3);

    // 4. A new spec for A converges on the variant, whose changed loop runs the pass.
    ok(await u.cli('new', ['apply', '-f', u.specs.a2.file, '--wait']), 'apply A revision 2 on the variant');
    const passBuilds = new Set<string>();
    for await (const w of u.client.workflow.list({ query: "WorkflowType = 'reconcileService'" })) passBuilds.add(String(w.searchAttributes.TemporalWorkerDeploymentVersion?.[0]));
    assert.deepEqual([...passBuilds].sort(), [oldBuild, newBuild, variantBuild].map(searchValue).sort(), 'passes ran on all three builds');

    // 5. No workflow task failed in any history, nothing was terminated, the Engine holds exactly the desired objects.
    assert.deepEqual(await failedWorkflowTasks(u.client), [], 'workflow tasks failed');
    assert.equal((await u.client.workflow.count("ExecutionStatus = 'Terminated'")).count, 0, 'no run was terminated');
    const members = [1, 2, 3, 4].map(node);
    const desired: ServiceSpec[] = [u.specs.a2.spec];
    for (const b of busy) {
      const r = validateSpec(exampleSpec(lbs, { ...b, servers: members }));
      if (!r.ok) throw new Error(JSON.stringify(r.issues));
      desired.push(r.spec);
    }
    const input = { objects: u.sim.objects(), before: u.before, services: desired };
    for (const inv of [exactlyDesired(input), noDuplicates(input), everyCreatedObjectTagged(input)]) assert.ok(inv.held, `${inv.name}: ${inv.detail.join('; ')}`);
  } finally {
    variant.remove();
    rmSync(dir, { recursive: true, force: true });
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
