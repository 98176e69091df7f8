/**
 * What both upgrade scenarios (test/upgrade/upgrade.test.ts) run on: a previous build in a git worktree, a dev server
 * and the Engine simulator of their own, `lbaas worker` and `lbaas` processes of either build, two services A and B
 * on two load balancers, and the checks every upgrade must pass at its end.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { LbaasClient } from '../../client/service-client';
import { startDevServer, type DevServer } from '../../dev/devserver';
import { validateSpec } from '../../domain';
import type { ServiceSpec } from '../../domain/types';
import { startSimulator, type AdminObject, type RunningSimulator } from '../../simulator';
import { defaultDeploymentVersion } from '../../worker/versioning';
import { everyCreatedObjectTagged, exactlyDesired, noDuplicates } from '../chaos/invariants';
import { cliEnv, runCli, type CliRun } from '../helpers/cli';
import { exampleSpec, seedLoadBalancer } from '../helpers/fixtures';
import { spawnWorker, type WorkerProcess } from '../helpers/ops-process';
import { TEST_TOKEN } from '../helpers/stack';
import { buildPrevious, type PreviousBuild } from './previous-build';

const TASK_QUEUE = 'upgrade';
export const say = (line: string) => process.stderr.write(`[upgrade] ${line}\n`);

export interface SpecFile {
  spec: ServiceSpec;
  file: string;
}

export interface Upgrade {
  old: PreviousBuild;
  server: DevServer;
  sim: RunningSimulator;
  client: Client;
  lbaas: LbaasClient;
  specs: { a1: SpecFile; a2: SpecFile; b1: SpecFile };
  /** `lbaas ...` of the previous build (`old`) or of this checkout. */
  cli(build: 'old' | 'new', args: string[]): Promise<CliRun>;
  /** `lbaas worker` of either build or of a variant (test/upgrade/variant-build.ts), made current or not. */
  worker(build: 'old' | 'new' | { bin: string; buildId: string }, setCurrent: boolean): WorkerProcess;
  /** The Engine's objects before anything ran (the seeded load balancers), by identifier. */
  before: Record<string, AdminObject>;
  /** Objects of B on the Engine (tagged). */
  taggedB(): number;
  /**
   * Everything the end of an upgrade must show; `passBuilds`: the builds reconcileService ran on, for the caller's own
   * check. `stranded`: the build whose pinned runs the stranded-run sweep was expected to terminate; the terminated
   * runs (each with a reason naming that build) are returned, and any other terminated run fails the check.
   */
  checkEnd(o?: { stranded?: string }): Promise<{ passBuilds: string[]; terminated: { id: string; runId: string; reason: string; at: number }[] }>;
  close(): Promise<void>;
}

/** Every WorkflowTaskFailed event of every run in the namespace, as `<type> <id> event <n>: <message>` lines. */
export async function failedWorkflowTasks(client: Client): Promise<string[]> {
  const failed: string[] = [];
  for await (const w of client.workflow.list()) {
    const history = await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory();
    for (const e of history.events ?? []) {
      if (e.workflowTaskFailedEventAttributes) failed.push(`${w.type} ${w.workflowId} event ${String(e.eventId)}: ${e.workflowTaskFailedEventAttributes.failure?.message ?? ''}`);
    }
  }
  return failed;
}

export function ok(r: CliRun, what: string): CliRun {
  assert.equal(r.code, 0, `${what} exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  return r;
}

/** The build a worker process named in its start-up line (`build lbaas.<id>`), or null for an unversioned build. */
export function buildOf(w: WorkerProcess): string | null {
  return /, build ([^\s,]+)/.exec(w.output())?.[1] ?? null;
}

/** `lbaas.<id>` → the value of Temporal's TemporalWorkerDeploymentVersion search attribute, `lbaas:<id>`. */
export function searchValue(build: string): string {
  return build.replace('.', ':');
}

export async function startUpgrade(from: { commit: string; named: string }): Promise<Upgrade> {
  const closes: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const c of closes.reverse()) await c().catch(() => undefined);
  };
  try {
    const old = await buildPrevious(from, say);
    closes.push(() => old.remove());
    const server = await startDevServer({});
    closes.push(() => server.stop());
    // Deploys of 0.8-1.2 s: a pass takes several seconds, long enough to kill a worker in the middle of one.
    const sim = await startSimulator({ port: 0, token: TEST_TOKEN, deployMs: { min: 800, max: 1200 }, seed: 21 });
    closes.push(() => sim.close());
    const connection = await Connection.connect({ address: server.address });
    closes.push(() => connection.close());
    const specDir = mkdtempSync(path.join(os.tmpdir(), 'lbaas-upgrade-specs-'));
    closes.push(async () => rmSync(specDir, { recursive: true, force: true }));
    const workers: WorkerProcess[] = [];
    closes.push(async () => {
      for (const w of workers) await w.kill();
    });

    const client = new Client({ connection, namespace: server.namespace });
    const target = { address: server.address, namespace: server.namespace, taskQueue: TASK_QUEUE };
    const lbs = [seedLoadBalancer(sim, 'upgrade-lb-1'), seedLoadBalancer(sim, 'upgrade-lb-2')];
    const before: Record<string, AdminObject> = Object.fromEntries(sim.objects().map((o) => [o.identifier, o]));
    const write = (name: string, raw: Record<string, unknown>): SpecFile => {
      const r = validateSpec(raw);
      if (!r.ok) throw new Error(JSON.stringify(r.issues));
      const file = path.join(specDir, `${name}.json`);
      writeFileSync(file, JSON.stringify(raw));
      return { spec: r.spec, file };
    };
    const a = { serviceUid: 'upgrade-a', nameSuffix: 'a.upgrade.test', externalAddresses: ['203.0.113.21'] };
    const threeServers = [1, 2, 3].map((n) => ({ name: `node-${n}`, address: `10.0.0.${10 + n}` }));
    const specs = {
      a1: write('a1', exampleSpec(lbs, a)),
      a2: write('a2', exampleSpec(lbs, { ...a, servers: threeServers })),
      b1: write('b1', exampleSpec(lbs, { serviceUid: 'upgrade-b', nameSuffix: 'b.upgrade.test', externalAddresses: ['203.0.113.22'] })),
    };

    return {
      old,
      server,
      sim,
      client,
      lbaas: new LbaasClient(client, TASK_QUEUE),
      specs,
      before,
      cli: (build, args) => runCli(args, { env: cliEnv(target), timeoutMs: 180_000, ...(build === 'old' ? { bin: old.bin } : {}) }),
      worker(build, setCurrent) {
        const which = build === 'old' ? { bin: old.bin } : build === 'new' ? {} : { bin: build.bin, extraEnv: { LBAAS_BUILD_ID: build.buildId } };
        const w = spawnWorker({ temporalAddress: server.address, namespace: server.namespace, taskQueue: TASK_QUEUE, engineUrl: sim.url, token: TEST_TOKEN, bundleAtStart: true, setCurrent, readyTimeoutMs: 180_000, ...which });
        workers.push(w);
        return w;
      },
      taggedB: () => sim.objects().filter((o) => o.tags.includes('anxccm-svc-uid=upgrade-b')).length,
      async checkEnd(o = {}) {
        // Both controllers moved to the new build and are pinned there; `lbaas status` says so.
        for (const uid of ['upgrade-a', 'upgrade-b']) {
          const s = JSON.parse(ok(await runCli(['status', uid, '-o', 'json'], { env: cliEnv(target) }), `status ${uid}`).stdout) as { build: unknown; phase: string };
          assert.deepEqual(s.build, { ...defaultDeploymentVersion(), behavior: 'PINNED' }, uid);
          assert.equal(s.phase, 'Converged', uid);
        }
        // Every workflow ended well (or is a controller, running), and no workflow task failed in any history.
        const runs: { type: string; status: string; id: string; runId: string; build: string }[] = [];
        for await (const w of client.workflow.list()) {
          runs.push({ type: w.type, status: w.status.name, id: w.workflowId, runId: w.runId, build: String(w.searchAttributes.TemporalWorkerDeploymentVersion?.[0] ?? 'unversioned') });
        }
        // Runs the sweep terminated: the reason is on the history's last event (WorkflowExecutionTerminated).
        const terminated: { id: string; runId: string; reason: string; at: number }[] = [];
        for (const r of runs.filter((x) => x.status === 'TERMINATED')) {
          const last = await client.workflowService.getWorkflowExecutionHistoryReverse({ namespace: server.namespace, execution: { workflowId: r.id, runId: r.runId }, maximumPageSize: 1 });
          const event = last.history?.events?.[0];
          terminated.push({ id: r.id, runId: r.runId, reason: event?.workflowExecutionTerminatedEventAttributes?.reason ?? '(no reason)', at: Number(event?.eventTime?.seconds ?? 0) * 1000 });
        }
        const strandedRun = (r: { status: string; id: string; runId: string }) =>
          o.stranded !== undefined && r.status === 'TERMINATED' && (terminated.find((t) => t.runId === r.runId)?.reason ?? '').startsWith(`stranded on build ${o.stranded}: no worker has polled it since `);
        const bad = runs.filter((r) => (r.status === 'RUNNING' ? r.type !== 'serviceController' : r.status !== 'COMPLETED' && r.status !== 'CONTINUED_AS_NEW' && !strandedRun(r)));
        assert.deepEqual(bad, [], 'workflows that did not end well');
        assert.deepEqual(runs.filter((r) => r.status === 'RUNNING').map((r) => r.id).sort(), ['lbaas/upgrade-a', 'lbaas/upgrade-b']);
        assert.deepEqual(await failedWorkflowTasks(client), [], 'workflow tasks failed');
        // The Engine holds exactly the desired objects of both services, no duplicate, nothing untagged.
        const input = { objects: sim.objects(), before, services: [specs.a2.spec, specs.b1.spec] };
        for (const inv of [exactlyDesired(input), noDuplicates(input), everyCreatedObjectTagged(input)]) assert.ok(inv.held, `${inv.name}: ${inv.detail.join('; ')}`);
        const passBuilds = [...new Set(runs.filter((r) => r.type === 'reconcileService').map((r) => r.build))].sort();
        say(`${runs.length} workflow runs; reconcileService ran on ${passBuilds.join(' and ')}`);
        return { passBuilds, terminated: terminated.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)) };
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
