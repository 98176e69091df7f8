/**
 * (Longer than 300 lines: runClusterChaos is one scripted scenario whose fault steps share the cluster, the workers and
 * the report; the shared chaos pieces already come from test/chaos/.)
 *
 * A chaos run on the production-shaped local cluster (cluster/index.ts): services applied while several `lbaas worker`
 * processes share the task queue, the Engine simulator injects a few faults, and the cluster itself fails under them:
 * a history host SIGKILLed while the reconciliations fan out (and later the other one), PostgreSQL restarted under
 * every Temporal service, workers SIGKILLed. Then, faults off, every controller's latest revision must converge and
 * the invariants of test/chaos/invariants.ts must hold over the Engine's objects, the histories and the logs.
 *
 * test/cluster/chaos.test.ts runs it (`npm run test:cluster`); each fault's moment and recovery goes into the report.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { startCluster, type Cluster } from '../../cluster';
import { LbaasClient } from '../../client/service-client';
import { startSimulator, type AdminObject } from '../../simulator';
import { Prng } from '../../simulator/prng';
import { workflowIds } from '../../contract';
import { containsText, everyCreatedObjectTagged, exactlyDesired, foreignUntouched, noDuplicates, type Invariant } from '../chaos/invariants';
import { convergeOne, quiesce } from '../chaos/run';
import { retrying, sleep } from '../chaos/waits';
import { changedSpec, seedForeign, serviceSpec, validated, type ChaosService } from '../chaos/specs';
import { WorkerPool } from '../chaos/workers';

export interface ClusterChaosOptions {
  services: number;
  seed: number;
  /** Worker processes sharing the task queue. */
  workers: number;
  workerKills: number;
  /** Chaos window from the first apply; cluster faults happen at fixed fractions of it (see the timeline below). */
  durationMs: number;
  /** Each Engine fault's rate while the window is open; low, so that the cluster's own faults are what is tested. */
  engineFaultRate: number;
  convergeTimeoutMs: number;
  progress?: (line: string) => void;
}

export interface ClusterChaosReport {
  invariants: Invariant[];
  /** What happened when: each fault with its time from the first apply and what it found running. */
  timeline: string[];
  /**
   * Each history host SIGKILL: what was in flight, and how long until every controller answered a describe again (its
   * shard owned by a live host: the dead host's shards move once membership declares it gone).
   */
  historyKills: { host: string; atMs: number; reconciliationsRunning: number; engineWritesSoFar: number; allShardsServedAfterMs: number | null }[];
  postgresRestarts: { atMs: number; downMs: number }[];
  workerKills: number;
  workerProcesses: number;
  /** Distinct worker identities that completed activities, from the histories: proof the queue was shared. */
  activityWorkers: number;
  engineRequests: number;
  engineFaults: number;
  convergedAfterFaultsMs: number;
  ok: boolean;
  workDir: string;
}

async function count(client: Client, query: string): Promise<number> {
  let n = 0;
  for await (const _ of client.workflow.list({ query })) n++;
  return n;
}

export async function runClusterChaos(o: ClusterChaosOptions): Promise<ClusterChaosReport> {
  const t0 = Date.now();
  const say = (line: string) => o.progress?.(`[cluster-chaos ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${line}`);
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-cluster-chaos-'));
  // The cluster's state lives inside (kept for reading when an invariant breaks); as root, PostgreSQL runs as the
  // postgres user, which must be able to pass through this directory (mkdtemp makes it 0700).
  await chmod(workDir, 0o711);
  const token = `cluster-chaos-token-${randomBytes(12).toString('hex')}`;
  const prng = new Prng(o.seed, 11);
  let engineFaults = 0;
  const sim = await startSimulator({
    port: 0,
    token,
    seed: o.seed,
    deployMs: { min: 100, max: 600 },
    log: (line) => {
      if (line.includes('[fault ') || line.endsWith('-> DeploymentError')) engineFaults++;
    },
  });
  let cluster: Cluster | null = null;
  let pool: WorkerPool | null = null;
  let connection: Connection | null = null;
  const timeline: string[] = [];
  const report: ClusterChaosReport = {
    invariants: [],
    timeline,
    historyKills: [],
    postgresRestarts: [],
    workerKills: 0,
    workerProcesses: 0,
    activityWorkers: 0,
    engineRequests: 0,
    engineFaults: 0,
    convergedAfterFaultsMs: 0,
    ok: false,
    workDir,
  };
  try {
    const lbs = [0, 1].map((i) => sim.seedObject({ kind: 'loadbalancer', fields: { name: `cluster-lb-${'ab'[i]}`, ip_address: `198.51.100.${i + 31}` }, state: 'Deployed' })) as [string, string];
    const services: ChaosService[] = Array.from({ length: o.services }, (_, i) => {
      const raw = serviceSpec(o.seed, i, lbs, { sharedSuffix: false });
      return { uid: raw.serviceUid as string, revisions: [raw] };
    });
    await seedForeign({ seed: async (s) => sim.seedObject(s as Parameters<typeof sim.seedObject>[0]) }, o.seed, lbs, services.map((s) => s.revisions[0] as Record<string, unknown>));
    // Foreign objects predate the run, as on a real Engine (a retried create adopts only objects younger than itself).
    for (const obj of sim.sim.store.byId.values()) obj.createdAt -= 3_600_000;
    const before: Record<string, AdminObject> = Object.fromEntries(sim.objects().map((x) => [x.identifier, x]));

    cluster = await startCluster({ stateDir: path.join(workDir, 'cluster'), progress: say });
    const c = cluster;
    connection = await Connection.connect({ address: c.address });
    const client = new Client({ connection, namespace: c.namespace });
    const taskQueue = `cluster-chaos-${o.seed}`;
    const lbaas = new LbaasClient(client, taskQueue);
    const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_') && !k.startsWith('LBAAS_') && k !== 'ANEXIA_TOKEN'));
    // LBAAS_SET_CURRENT_VERSION: tasks reach only the Current Version; the workers make their build current.
    Object.assign(env, { TEMPORAL_ADDRESS: c.address, TEMPORAL_NAMESPACE: c.namespace, LBAAS_TASK_QUEUE: taskQueue, ANEXIA_ENGINE_URL: sim.url, ANEXIA_TOKEN: token, LBAAS_SET_CURRENT_VERSION: 'true' });
    pool = new WorkerPool({ slots: o.workers, env, logDir: workDir, event: say });
    pool.start();
    await pool.waitAllReady(240_000);
    const p = pool;

    const rate = o.engineFaultRate;
    sim.setFaults({ seed: o.seed, rates: { serverError: rate, rateLimited: rate, dropAfterCommit: rate, deploymentError: rate } });
    sim.resetStats();
    const at = () => Date.now() - start;
    const mark = (what: string) => {
      timeline.push(`${(at() / 1000).toFixed(1).padStart(6)} s  ${what}`);
      say(what);
    };
    const latest = new Map<string, number>();
    const apply = async (svc: ChaosService, raw: Record<string, unknown>) => {
      const { revision } = await retrying(`apply ${svc.uid}`, () => lbaas.apply(raw, validated(raw)));
      latest.set(svc.uid, revision);
    };
    const start = Date.now();
    await Promise.all(services.map((s) => apply(s, s.revisions[0] as Record<string, unknown>)));
    mark(`applied ${services.length} services`);

    const killHistory = async (host: Cluster['historyHosts'][number]) => {
      const running = await retrying('counting reconciliations', () => count(client, `ExecutionStatus = 'Running' AND WorkflowType = 'reconcileLoadBalancer'`));
      const writes = sim.stats().mutations;
      const killedAt = Date.now();
      await host.kill();
      const entry = { host: host.name, atMs: at(), reconciliationsRunning: running, engineWritesSoFar: writes, allShardsServedAfterMs: null as number | null };
      report.historyKills.push(entry);
      mark(`SIGKILL ${host.name} (${running} reconcileLoadBalancer runs in flight, ${writes} Engine writes so far)`);
      // In the background: the controllers' workflow ids spread over the shards; when all answer, all shards are served.
      void (async () => {
        while (Date.now() - killedAt < 120_000) {
          const answers = await Promise.all(
            services.map((svc) => connection!.withDeadline(Date.now() + 2000, () => client.workflow.getHandle(workflowIds.controller(svc.uid)).describe()).then(() => true, () => false)),
          );
          if (answers.every(Boolean)) {
            entry.allShardsServedAfterMs = Date.now() - killedAt;
            mark(`every controller answers again ${(entry.allShardsServedAfterMs / 1000).toFixed(1)} s after the SIGKILL of ${host.name}`);
            return;
          }
          await sleep(250);
        }
      })();
    };
    // Mid fan-out: as soon as the first objects are being created, the reconciliations are spread over both hosts.
    await retrying('first Engine writes', async () => {
      if (sim.stats().mutations < 3) throw new Error('no Engine writes yet');
    }, 60_000);
    const [h1, h2] = c.historyHosts as [Cluster['historyHosts'][number], Cluster['historyHosts'][number]];
    await killHistory(h1);

    const changing = services.slice(0, Math.max(1, Math.floor(services.length / 4)));
    const reapplies = changing.map((svc, variant) => {
      const raw = changedSpec(svc.revisions[0] as Record<string, unknown>, variant, lbs);
      svc.revisions.push(raw);
      return apply(svc, raw).then(() => mark(`applied a changed revision of ${svc.uid}`));
    });
    await sleep(o.durationMs * 0.15);
    h1.start();
    mark(`${h1.name} started again`);

    const workerKillAt = Array.from({ length: o.workerKills }, () => o.durationMs * (0.2 + 0.7 * prng.next())).sort((a, b) => a - b);
    const events: { at: number; run: () => Promise<void> }[] = workerKillAt.map((ms) => ({
      at: ms,
      run: async () => {
        const victim = await p.kill((n) => prng.int(0, n - 1), prng.int(500, 3000));
        mark(victim ? `SIGKILL ${victim}` : 'no polling worker to kill');
      },
    }));
    events.push({
      at: o.durationMs * 0.45,
      run: async () => {
        const down = Date.now();
        mark('PostgreSQL: fast shutdown (every Temporal service loses its database)');
        await c.postgres.stop();
        await sleep(3000);
        await c.postgres.start();
        report.postgresRestarts.push({ atMs: at(), downMs: Date.now() - down });
        mark(`PostgreSQL back after ${((Date.now() - down) / 1000).toFixed(1)} s`);
      },
    });
    events.push({
      at: o.durationMs * 0.65,
      run: async () => {
        await killHistory(h2);
        await sleep(o.durationMs * 0.1);
        h2.start();
        mark(`${h2.name} started again`);
      },
    });
    events.sort((a, b) => a.at - b.at);
    for (const e of events) {
      await sleep(start + e.at - Date.now());
      await e.run();
    }
    await sleep(start + o.durationMs - Date.now());
    await Promise.all(reapplies);
    sim.setFaults({ rates: { serverError: 0, rateLimited: 0, dropAfterCommit: 0, deploymentError: 0 } });
    mark('faults off; waiting for every controller to converge on its latest revision');

    const c0 = Date.now();
    const deadline = c0 + o.convergeTimeoutMs;
    const notConverged: string[] = [];
    await Promise.all(
      services.map(async (svc) => {
        const revision = latest.get(svc.uid) as number;
        const why = await convergeOne(connection as Connection, lbaas, svc.uid, revision, deadline, () => mark(`resync ${svc.uid} (its last pass failed)`));
        if (why) notConverged.push(`${svc.uid} revision ${revision}: ${why}`);
      }),
    );
    report.convergedAfterFaultsMs = Date.now() - c0;
    mark(`convergence: ${services.length - notConverged.length}/${services.length} controllers`);
    report.invariants.push({
      name: 'nothing lost: every controller converged on its latest revision',
      held: notConverged.length === 0,
      detail: notConverged.length ? notConverged : [`${services.length} controllers, ${services.length + changing.length} revisions, converged ${(report.convergedAfterFaultsMs / 1000).toFixed(1)} s after faults stopped`],
    });
    const controllers = await count(client, `ExecutionStatus = 'Running' AND WorkflowType = 'serviceController'`);
    report.invariants.push({
      name: 'nothing lost: exactly one running controller per service',
      held: controllers === services.length,
      detail: [`${controllers} running serviceController workflows for ${services.length} services`],
    });
    const stray = await quiesce(client, 60_000);
    report.invariants.push({ name: 'no reconciliation still running after convergence', held: stray.length === 0, detail: stray.length ? stray : ['only the controllers are running'] });

    const objInput = { objects: sim.objects(), before, services: services.map((s) => validated(s.revisions[s.revisions.length - 1] as Record<string, unknown>)) };
    report.invariants.push(exactlyDesired(objInput), noDuplicates(objInput), everyCreatedObjectTagged(objInput), foreignUntouched(objInput));

    const h = await scanHistories(client, token);
    report.activityWorkers = h.identities.size;
    report.invariants.push({
      name: 'Engine token absent from every workflow history',
      held: h.hits.length === 0 && h.errors.length === 0,
      detail: h.hits.length || h.errors.length ? [...h.hits, ...h.errors] : [`${h.workflows} workflow runs, ${h.events} events`],
    });
    report.engineRequests = sim.stats().total;
    report.engineFaults = engineFaults;
    await p.stop();
    report.workerKills = p.kills;
    report.workerProcesses = p.starts;
    const died = p.ownExits;
    report.invariants.push({
      name: 'no worker died on its own (history host deaths, database restart, Engine faults)',
      held: died.length === 0,
      detail: died.length ? died.map((x) => `${x.name} exited: ${x.how}`) : [`${p.starts} worker processes, every exit ours`],
    });
    const serverDeaths = c.processes.flatMap((s) => s.unexpectedExits);
    report.invariants.push({
      name: 'no Temporal server process died on its own (only the history hosts we killed)',
      held: serverDeaths.length === 0,
      detail: serverDeaths.length ? serverDeaths : [`${c.processes.length} server processes all running at the end`],
    });
    const logHits: string[] = [];
    for (const file of p.logFiles) if ((await readFile(file, 'utf8').catch(() => '')).includes(token)) logHits.push(`token in ${path.basename(file)}`);
    report.invariants.push({ name: 'Engine token absent from every worker log', held: logHits.length === 0, detail: logHits.length ? logHits : [`${p.logFiles.length} worker logs`] });
    report.ok = report.invariants.every((i) => i.held);
  } finally {
    await pool?.stop();
    await connection?.close().catch(() => {});
    await cluster?.stop();
    await sim.close();
  }
  if (report.ok) {
    await rm(workDir, { recursive: true, force: true });
    report.workDir = '(removed)';
  }
  return report;
}

/** Every run's history: token hits, unreadable histories, and the identities of the workers that started activities. */
async function scanHistories(client: Client, token: string) {
  const out = { workflows: 0, events: 0, hits: [] as string[], errors: [] as string[], identities: new Set<string>() };
  for await (const wf of client.workflow.list()) {
    out.workflows++;
    try {
      const history = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
      out.events += history.events?.length ?? 0;
      for (const e of history.events ?? []) {
        const identity = e.activityTaskStartedEventAttributes?.identity;
        if (identity) out.identities.add(identity);
      }
      if (containsText(history, token)) out.hits.push(`token in the history of ${wf.workflowId} (run ${wf.runId})`);
    } catch (err) {
      out.errors.push(`history of ${wf.workflowId} (run ${wf.runId}) unreadable: ${(err as Error).message}`);
    }
  }
  return out;
}

export function formatClusterReport(r: ClusterChaosReport): string {
  return [
    'timeline',
    ...r.timeline.map((l) => `  ${l}`),
    `worker processes ${r.workerProcesses} (${r.workerKills} SIGKILLed), ${r.activityWorkers} distinct worker identities ran activities`,
    `Engine requests ${r.engineRequests}, faults injected ${r.engineFaults}`,
    'invariants',
    ...r.invariants.flatMap((i) => [`  ${i.held ? 'HELD  ' : 'BROKEN'}  ${i.name}`, ...i.detail.map((d) => `            ${d}`)]),
    `work directory: ${r.workDir}`,
  ].join('\n');
}
