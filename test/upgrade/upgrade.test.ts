/**
 * `npm run test:upgrade [-- <commit>]`: an upgrade of lbaas under running workflows, on the real dev server, with
 * real `lbaas worker` and `lbaas` processes of both builds (docs/operations.md#upgrading-lbaas). The previous build
 * (test/upgrade/previous-build.ts) converges service A and is killed in the middle of service B's first pass; the
 * current build is deployed and made current; A receives a new spec, which its controller (AUTO_UPGRADE) applies on
 * the new build; B's pass (PINNED) waits for its build, as it must, until the operator starts a worker of the old
 * build again, which drains it. Then: every workflow ended well or is a converged controller on the new build, no
 * workflow task failed anywhere, and the Engine holds exactly the desired objects of both services.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { LbaasClient } from '../../client/service-client';
import { startDevServer, type DevServer } from '../../dev/devserver';
import { validateSpec } from '../../domain';
import type { ServiceSpec } from '../../domain/types';
import { startSimulator, type AdminObject, type RunningSimulator } from '../../simulator';
import { defaultDeploymentVersion, versionText } from '../../worker/versioning';
import { everyCreatedObjectTagged, exactlyDesired, noDuplicates } from '../chaos/invariants';
import { cliEnv, REPO_ROOT, runCli, type CliRun } from '../helpers/cli';
import { exampleSpec, seedLoadBalancer } from '../helpers/fixtures';
import { spawnWorker, type WorkerProcess } from '../helpers/ops-process';
import { TEST_TOKEN } from '../helpers/stack';
import { until } from '../helpers/workflows';
import { buildPrevious, upgradeFrom, type PreviousBuild } from './previous-build';

const TASK_QUEUE = 'upgrade';
const say = (line: string) => process.stderr.write(`[upgrade] ${line}\n`);

let previous: PreviousBuild | null = null;
let server: DevServer | null = null;
let sim: RunningSimulator | null = null;
let connection: Connection | null = null;
let specDir: string | null = null;
const workers: WorkerProcess[] = [];

before(async () => {
  const from = await upgradeFrom();
  const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
  if (from.commit === head) throw new Error(`nothing to upgrade from: ${from.named} (${from.commit.slice(0, 12)}) is this checkout's HEAD; give an older commit`);
  previous = await buildPrevious(from, say);
  server = await startDevServer({});
  // Deploys of 0.8-1.2 s: a pass takes several seconds, long enough to kill a worker in the middle of one.
  sim = await startSimulator({ port: 0, token: TEST_TOKEN, deployMs: { min: 800, max: 1200 }, seed: 21 });
  connection = await Connection.connect({ address: server.address });
  specDir = mkdtempSync(path.join(os.tmpdir(), 'lbaas-upgrade-specs-'));
});

after(async () => {
  for (const w of workers) await w.kill();
  await connection?.close();
  await sim?.close();
  await server?.stop();
  await previous?.remove();
  if (specDir) rmSync(specDir, { recursive: true, force: true });
});

function spec(raw: Record<string, unknown>): { raw: Record<string, unknown>; spec: ServiceSpec; file: string } {
  const r = validateSpec(raw);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  const file = path.join(specDir as string, `${String(raw.serviceUid)}-${Date.now()}.json`);
  writeFileSync(file, JSON.stringify(raw));
  return { raw, spec: r.spec, file };
}

function ok(r: CliRun, what: string): CliRun {
  assert.equal(r.code, 0, `${what} exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  return r;
}

/** The build a worker process named in its start-up line (`build lbaas.<id>`). */
function buildOf(w: WorkerProcess): string {
  const m = /, build (\S+)/.exec(w.output());
  if (!m?.[1]) throw new Error(`the worker's start-up line names no build; a previous build must be a versioned one (see test/upgrade/previous-build.ts):\n${w.output().slice(-2000)}`);
  return m[1];
}

test('an upgrade under running workflows: the controller moves to the new build, the pinned pass drains on its own build, nothing fails, the Engine holds exactly the desired objects', { timeout: 900_000 }, async () => {
  const srv = server as DevServer;
  const engine = sim as RunningSimulator;
  const client = new Client({ connection: connection as Connection, namespace: srv.namespace });
  const lbaas = new LbaasClient(client, TASK_QUEUE);
  const target = { address: srv.address, namespace: srv.namespace, taskQueue: TASK_QUEUE };
  const cli = (bin: string | undefined, args: string[]) => runCli(args, { env: cliEnv(target), timeoutMs: 180_000, ...(bin ? { bin } : {}) });
  const workerOn = (bin: string | undefined, setCurrent: boolean) => {
    const w = spawnWorker({ temporalAddress: srv.address, namespace: srv.namespace, taskQueue: TASK_QUEUE, engineUrl: engine.url, token: TEST_TOKEN, bundleAtStart: true, setCurrent, readyTimeoutMs: 180_000, ...(bin ? { bin } : {}) });
    workers.push(w);
    return w;
  };
  const old = previous as PreviousBuild;
  const lbs = [seedLoadBalancer(engine, 'upgrade-lb-1'), seedLoadBalancer(engine, 'upgrade-lb-2')];
  const before: Record<string, AdminObject> = Object.fromEntries(engine.objects().map((o) => [o.identifier, o]));
  const a1 = spec(exampleSpec(lbs, { serviceUid: 'upgrade-a', nameSuffix: 'a.upgrade.test', externalAddresses: ['203.0.113.21'] }));
  const b1 = spec(exampleSpec(lbs, { serviceUid: 'upgrade-b', nameSuffix: 'b.upgrade.test', externalAddresses: ['203.0.113.22'] }));
  const a2 = spec(
    exampleSpec(lbs, {
      serviceUid: 'upgrade-a',
      nameSuffix: 'a.upgrade.test',
      externalAddresses: ['203.0.113.21'],
      servers: [
        { name: 'node-1', address: '10.0.0.11' },
        { name: 'node-2', address: '10.0.0.12' },
        { name: 'node-3', address: '10.0.0.13' },
      ],
    }),
  );

  // 1. The previous build runs the task queue: A converges, B's first pass is in flight when its worker is killed.
  const oldWorker = workerOn(old.bin, true);
  await oldWorker.ready;
  const oldBuild = buildOf(oldWorker);
  const newBuild = versionText(defaultDeploymentVersion());
  say(`previous build ${oldBuild} (${old.named}), current build ${newBuild}`);
  assert.notEqual(oldBuild, newBuild, 'the two builds must have different build ids');
  ok(await cli(old.bin, ['apply', '-f', a1.file, '--wait']), 'apply A on the previous build');
  ok(await cli(old.bin, ['apply', '-f', b1.file]), 'apply B on the previous build');
  const taggedB = () => engine.objects().filter((o) => o.tags.includes('anxccm-svc-uid=upgrade-b')).length;
  await until('B half done: some of its objects created, not all', () => taggedB() >= 4, 60_000, 20);
  await oldWorker.kill();
  const bObjectsAtKill = taggedB();
  say(`previous build's worker killed with ${bObjectsAtKill} of B's 24 objects created`);

  // 2. The current build is deployed and made current (what `temporal worker deployment set-current-version` does).
  const newWorker = workerOn(undefined, true);
  await newWorker.ready;
  assert.equal(buildOf(newWorker), newBuild);
  const d = await client.workflowService.describeWorkerDeployment({ namespace: srv.namespace, deploymentName: 'lbaas' });
  assert.equal(d.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId, defaultDeploymentVersion().buildId);

  // 3. A controller receives a new spec after the upgrade: it moves to the new build and converges there.
  const applied = JSON.parse(ok(await cli(undefined, ['apply', '-f', a2.file, '--wait', '-o', 'json']), 'apply A revision 2 on the new build').stdout) as { revision: number; converged: boolean };
  assert.deepEqual({ revision: applied.revision, converged: applied.converged }, { revision: 2, converged: true });

  // 4. B's pass is pinned to the previous build: nothing of the new build runs it; it waits for a worker of its build.
  const [oldDeployment, oldBuildId] = [oldBuild.slice(0, oldBuild.indexOf('.')), oldBuild.slice(oldBuild.indexOf('.') + 1)];
  // The drain query of docs/operations.md. B's controller may still show the old build too: it is AUTO_UPGRADE and
  // moves at its next workflow task, which comes when its pass ends.
  const pinnedToOld = `TemporalWorkerDeploymentVersion = '${oldDeployment}:${oldBuildId}' AND TemporalWorkflowVersioningBehavior = 'Pinned' AND ExecutionStatus = 'Running'`;
  const stillPinned = await client.workflow.count(pinnedToOld);
  assert.ok(stillPinned.count >= 1, `B's pass should still be running on ${oldBuild}, found ${stillPinned.count} runs`);
  const bPinned: string[] = [];
  for await (const w of client.workflow.list({ query: pinnedToOld })) bPinned.push(w.type);
  assert.deepEqual([...new Set(bPinned)].sort(), ['reconcileLoadBalancer', 'reconcileService'], `only B's pass runs pinned on the previous build: ${bPinned.join(', ')}`);

  // 5. The operator's remedy (docs/operations.md): a worker of the previous build, not made current, drains it.
  const drainer = workerOn(old.bin, false);
  await drainer.ready;
  const b = await lbaas.waitConverged('upgrade-b', 1);
  assert.equal(b.converged, true, `B: ${b.error ?? ''}`);
  await until('no workflow running on the previous build', async () => (await client.workflow.count(pinnedToOld)).count === 0, 60_000, 250);
  drainer.proc.kill('SIGTERM');
  assert.deepEqual(await drainer.exited, { code: 0, signal: null });

  // 6. Both controllers run on the new build now; `lbaas status` says so.
  for (const uid of ['upgrade-a', 'upgrade-b']) {
    const s = JSON.parse(ok(await cli(undefined, ['status', uid, '-o', 'json']), `status ${uid}`).stdout) as { build: unknown; phase: string };
    assert.deepEqual(s.build, { ...defaultDeploymentVersion(), behavior: 'AUTO_UPGRADE' }, uid);
    assert.equal(s.phase, 'Converged', uid);
  }

  // 7. Every workflow ended well (or is a controller, running), and no workflow task failed in any history.
  const runs: { type: string; status: string; id: string; runId: string; build: unknown }[] = [];
  for await (const w of client.workflow.list()) runs.push({ type: w.type, status: w.status.name, id: w.workflowId, runId: w.runId, build: w.searchAttributes.TemporalWorkerDeploymentVersion?.[0] });
  const bad = runs.filter((r) => (r.status === 'RUNNING' ? r.type !== 'serviceController' : r.status !== 'COMPLETED' && r.status !== 'CONTINUED_AS_NEW'));
  assert.deepEqual(bad, [], 'workflows that did not end well');
  assert.deepEqual(runs.filter((r) => r.status === 'RUNNING').map((r) => r.id).sort(), ['lbaas/upgrade-a', 'lbaas/upgrade-b']);
  const failedTasks: string[] = [];
  for (const r of runs) {
    const history = await client.workflow.getHandle(r.id, r.runId).fetchHistory();
    for (const e of history.events ?? []) if (e.workflowTaskFailedEventAttributes) failedTasks.push(`${r.type} ${r.id} event ${String(e.eventId)}: ${e.workflowTaskFailedEventAttributes.failure?.message ?? ''}`);
  }
  assert.deepEqual(failedTasks, [], 'workflow tasks failed');
  const passesByBuild = (type: string) => [...new Set(runs.filter((r) => r.type === type).map((r) => String(r.build)))].sort();
  say(`${runs.length} workflow runs; reconcileService ran on ${passesByBuild('reconcileService').join(' and ')}`);
  assert.deepEqual(passesByBuild('reconcileService'), [`${oldDeployment}:${oldBuildId}`, `lbaas:${defaultDeploymentVersion().buildId}`].sort());

  // 8. The Engine holds exactly the desired objects of both services, no duplicate, nothing untagged.
  const input = { objects: engine.objects(), before, services: [a2.spec, b1.spec] };
  for (const inv of [exactlyDesired(input), noDuplicates(input), everyCreatedObjectTagged(input)]) assert.ok(inv.held, `${inv.name}: ${inv.detail.join('; ')}`);
});
