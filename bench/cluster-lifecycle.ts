/**
 * `npm run bench:cluster -- --lifecycle [--services 5000] [--workers 2] [--seed 42] [--only dev|cluster] [--no-write]
 * [--save-json FILE]`: a fleet's whole life on the production-shaped local cluster (cluster/index.ts: PostgreSQL,
 * separate Temporal services; `--only dev` runs it on the dev server instead) with W worker processes on one task
 * queue, each at the settings of `lbaas worker` without environment (bench/defaults.ts):
 *
 * 1. apply: a server pool of three nodes set, then N services x 2 load balancers using it (28 objects each) applied
 *    through their controllers, as `lbaas apply` does (32 client calls at a time, every apply before the first
 *    wait), until every one converged;
 * 2. no-op full resync: the Schedule's workflow (fullResync) signals every controller; until each finished a pass;
 * 3. pool change: a fourth node added to the pool, fanned out to every service (`lbaas pool add`), until the pool's
 *    waitConverged says every service reconciled it (4 Servers created per service);
 * 4. delete: every service deleted, until every controller closed.
 *
 * Per phase: wall time, services per minute, Engine requests per service (the simulator's counters), CPU seconds per
 * service of Temporal (every server process with its children: PostgreSQL's backends) and of the workers, each
 * worker's peak RSS (sampled every second), and history events per service (every run of a sample of services, read
 * after each phase). Prints a table and the summary line, and publishes (bench/publish.ts) bench/results/lifecycle.json
 * and the `bench:lifecycle` section of docs/scaling.md (bench/cluster-lifecycle-report.ts) unless `--no-write`.
 */
import { writeFileSync, mkdtempSync, rmSync, chmodSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { LbaasClient } from '../client/service-client';
import { searchAttributes, workflowIds } from '../contract';
import { startChildWorker, type ChildWorker } from '../dev/child-worker';
import { validateSpec } from '../domain';
import { workflowsPath } from '../worker/main';
import { fullResync } from '../workflows';
import { clusterBackend, devBackend, type Backend } from './cluster-backends';
import { lifecycleSection, lifecycleText, type LifecycleResult, type LifecyclePhase } from './cluster-lifecycle-report';
import { gitRevision, publish } from './publish';
import { WORKER_DEFAULTS } from './defaults';
import { FLEET_DEPLOY_MS } from './phase';
import { treeCpuSeconds } from './proc-tree';
import { BENCH_TOKEN, startSimProcess, type SimAdmin } from './sim-process';
import { machineCpuSeconds, mapLimit, procMemory, sleep } from './util';

const CLIENT_CONCURRENCY = 32;
const CHECK_EVERY_MS = 2000;
/** A phase's progress is logged this often; a phase whose count has not moved for STALL_MS logs the task queue. */
const PROGRESS_EVERY_MS = 60_000;
const STALL_MS = 5 * 60_000;
/** Services whose histories are read after each phase (every run of each). */
const HISTORY_SAMPLE = 10;
const NODES = [
  { name: 'node-1', address: '10.0.0.11' },
  { name: 'node-2', address: '10.0.0.12' },
  { name: 'node-3', address: '10.0.0.13' },
];
const NEW_NODE = { name: 'node-4', address: '10.0.0.14' };

const log = (line: string) => process.stderr.write(`[bench:cluster lifecycle ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

export interface LifecycleArgs {
  services: number;
  workers: number;
  seed: number;
  backend: 'dev' | 'cluster';
  write: boolean;
  saveJson: string | null;
}

/** Every history event of every run of the service (controller with its continued runs, passes, load balancer runs). */
async function serviceEvents(client: Client, uid: string): Promise<number> {
  const id = workflowIds.controller(uid);
  let events = 0;
  for await (const w of client.workflow.list({ query: `WorkflowId = '${id}' OR WorkflowId STARTS_WITH '${id}/'` })) {
    events += (await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory()).events?.length ?? 0;
  }
  return events;
}

/**
 * What the task queue's partitions hold, for a log line when a phase stalls: backlog and age of each task type, and
 * the pollers the server saw (a backlog with pollers present is a dispatch problem, not a worker one).
 */
async function taskQueueReport(client: Client, taskQueue: string): Promise<string> {
  const parts: string[] = [];
  for (const [type, name] of [
    [1, 'workflow'],
    [2, 'activity'],
  ] as const) {
    const d = await client.workflowService.describeTaskQueue({ namespace: client.options.namespace, taskQueue: { name: taskQueue }, taskQueueType: type, reportStats: true }).catch((err: Error) => err);
    if (d instanceof Error) {
      parts.push(`${name}: describe failed (${d.message})`);
      continue;
    }
    const stats = d.stats;
    const age = Number(stats?.approximateBacklogAge?.seconds ?? 0);
    parts.push(`${name}: backlog ${String(stats?.approximateBacklogCount ?? '?')} (oldest ${age} s), add ${(stats?.tasksAddRate ?? 0).toFixed(1)}/s, dispatch ${(stats?.tasksDispatchRate ?? 0).toFixed(1)}/s, ${d.pollers?.length ?? 0} pollers`);
  }
  return parts.join('; ');
}

/**
 * Logs `done() of total` every PROGRESS_EVERY_MS while a phase runs and, when the count has not moved for STALL_MS,
 * the task queue's backlog (once per stall). Returns the function that stops it.
 */
function watchProgress(c: { client: Client; lbaas: LbaasClient }, name: string, total: number, done: () => number): () => void {
  let last = -1;
  let movedAt = Date.now();
  let reported = false;
  const timer = setInterval(() => {
    const n = done();
    if (n !== last) {
      last = n;
      movedAt = Date.now();
      reported = false;
    }
    log(`${name}: ${n} of ${total}`);
    if (!reported && Date.now() - movedAt >= STALL_MS) {
      reported = true;
      void taskQueueReport(c.client, c.lbaas.taskQueue).then((r) => log(`${name}: no progress for ${Math.round((Date.now() - movedAt) / 60_000)} min; task queue ${c.lbaas.taskQueue}: ${r}`));
    }
  }, PROGRESS_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}

export async function runLifecycle(a: LifecycleArgs): Promise<LifecycleResult> {
  const revision = gitRevision();
  const loadStart = os.loadavg();
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'lbaas-bench-lifecycle-'));
  chmodSync(tmp, 0o711); // PostgreSQL, run as the postgres user when we are root, must pass through it.
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) await stop().catch(() => {});
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void stopAll().finally(() => process.exit(130)));
  let completed = false;
  try {
    const quiet = { info() {}, warn() {}, error: console.error, debug() {}, trace() {}, log() {} };
    const bundlePath = path.join(tmp, 'workflows.js');
    writeFileSync(bundlePath, (await bundleWorkflowCode({ workflowsPath, logger: quiet as never })).code);
    const sim = await startSimProcess({ seed: a.seed, deployMs: FLEET_DEPLOY_MS });
    stops.push(() => sim.stop());
    log(`starting the ${a.backend === 'cluster' ? 'cluster' : 'dev server'}`);
    const backend: Backend = a.backend === 'cluster' ? await clusterBackend(tmp) : await devBackend(tmp);
    stops.push(() => backend.stop());
    const connection = await Connection.connect({ address: backend.address });
    stops.push(() => connection.close());
    const client = new Client({ connection, namespace: backend.namespace });
    const taskQueue = `bench-lifecycle-${Date.now().toString(36)}`;
    const workers: ChildWorker[] = await Promise.all(
      Array.from({ length: a.workers }, async () => {
        const w = await startChildWorker({ temporalAddress: backend.address, namespace: backend.namespace, taskQueue, engineUrl: sim.url, token: BENCH_TOKEN, bundlePath, heapMiB: WORKER_DEFAULTS.heapMiB, ...(WORKER_DEFAULTS.pacing ? { pacing: WORKER_DEFAULTS.pacing } : {}) });
        stops.push(() => w.stop());
        await w.ready;
        return w;
      }),
    );
    const lbaas = new LbaasClient(client, taskQueue);
    const result = await lifecycle({ client, admin: sim.admin, lbaas, backend, workers, services: a.services, seed: a.seed });
    completed = true;
    return { ...result, backend: a.backend, revision, loadStart, loadEnd: os.loadavg(), cpus: os.availableParallelism?.() ?? os.cpus().length };
  } finally {
    await stopAll();
    // A failed run keeps its directory: the Temporal services' logs (cluster/logs) are the evidence of what failed.
    if (completed) rmSync(tmp, { recursive: true, force: true });
    else log(`the run failed: kept ${tmp} (the Temporal services' logs are in cluster/logs)`);
  }
}

interface Ctx {
  client: Client;
  admin: SimAdmin;
  lbaas: LbaasClient;
  backend: Backend;
  workers: ChildWorker[];
  services: number;
  seed: number;
}

async function lifecycle(c: Ctx): Promise<Omit<LifecycleResult, 'backend' | 'revision' | 'loadStart' | 'loadEnd' | 'cpus'>> {
  const lbs = [await c.admin.seedLoadBalancer('bench-life-a', '198.51.100.50'), await c.admin.seedLoadBalancer('bench-life-b', '198.51.100.51')];
  const pool = 'bench-life-pool';
  const specs = Array.from({ length: c.services }, (_, i) => {
    const raw = {
      serviceUid: `bench-life-${i}`,
      nameSuffix: `svc-${i}.life.bench`,
      loadBalancers: lbs,
      externalAddresses: [`198.18.${(i >> 8) & 255}.${i & 255}`, `2001:db8:2::${(i + 1).toString(16)}`],
      ports: { http: { external: 80, internal: 30080 }, https: { external: 443, internal: 30443 } },
      serverPool: pool,
    };
    const v = validateSpec(raw);
    if (!v.ok) throw new Error(`lifecycle spec ${i} is invalid: ${JSON.stringify(v.issues)}`);
    return { raw, spec: v.spec };
  });
  const uids = specs.map((s) => s.spec.serviceUid);
  const sample = uids.filter((_, i) => i % Math.max(1, Math.floor(uids.length / HISTORY_SAMPLE)) === 0).slice(0, HISTORY_SAMPLE);
  await c.admin.setDeploy(c.seed, FLEET_DEPLOY_MS);
  await c.lbaas.pools.set({ name: pool, servers: NODES });

  let eventsSoFar = 0;
  const phases: LifecyclePhase[] = [];
  const measure = async (name: string, body: () => Promise<void>) => {
    await c.admin.resetStats();
    const peaks = c.workers.map(() => 0);
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        c.workers.forEach((w, i) => (peaks[i] = Math.max(peaks[i] ?? 0, procMemory(w.pid)?.rssBytes ?? 0)));
        await sleep(1000);
      }
    })();
    const cpu = () => ({ temporal: treeCpuSeconds(c.backend.temporalPids()), workers: treeCpuSeconds(c.workers.map((w) => w.pid)), machine: machineCpuSeconds().busy });
    const cpu0 = cpu();
    const t0 = Date.now();
    log(`${name}: ${c.services} services`);
    try {
      await body();
    } finally {
      sampling = false;
      await sampler;
    }
    const wallMs = Date.now() - t0;
    const cpu1 = cpu();
    const stats = await c.admin.stats();
    const events = (await mapLimit(sample, 4, (uid) => serviceEvents(c.client, uid))).reduce((x, y) => x + y, 0) / sample.length;
    const p: LifecyclePhase = {
      name,
      wallMs,
      requests: stats.total,
      writes: stats.mutations,
      temporalCpuS: cpu1.temporal - cpu0.temporal,
      workerCpuS: cpu1.workers - cpu0.workers,
      machineBusyS: cpu1.machine - cpu0.machine,
      workerPeakRssBytes: peaks,
      historyEventsPerService: events - eventsSoFar,
    };
    eventsSoFar = events;
    phases.push(p);
    log(`${name}: ${(wallMs / 1000).toFixed(1)} s, ${(p.requests / c.services).toFixed(1)} Engine requests per service, CPU-s per service Temporal ${(p.temporalCpuS / c.services).toFixed(3)} workers ${(p.workerCpuS / c.services).toFixed(3)}`);
    // Every figure of the phase, so that a run that fails later still has what it measured.
    log(`${name}: measured ${JSON.stringify(p)}`);
  };

  const passAfter = new Map<string, number>();
  await measure('apply', async () => {
    // Every apply first (as a rollout would send them), then the waits: the controllers all work at once.
    const applied = await mapLimit(specs, CLIENT_CONCURRENCY, async (s) => ({ s, ...(await c.lbaas.apply(s.raw, s.spec)) }));
    // The progress line counts controllers whose phase is Converged in visibility (one count a minute), not the waits
    // below: those are taken in service order, 32 at a time, and the pool delivers its members in uid order, so the
    // waits' count lags far behind (20 of 5,000 while 2,000 had converged, in a 5,000-service run).
    let converged = 0;
    const counter = setInterval(() => {
      void c.client.workflow
        .count(`WorkflowType = 'serviceController' AND TaskQueue = '${c.lbaas.taskQueue}' AND ${searchAttributes.phase.name} = 'Converged'`)
        .then((r) => (converged = Math.max(converged, r.count)))
        .catch(() => {});
    }, PROGRESS_EVERY_MS / 2);
    const stop = watchProgress(c, 'apply: services converged', c.services, () => converged);
    try {
      await mapLimit(applied, CLIENT_CONCURRENCY, async ({ s, revision }) => {
        const r = await c.lbaas.waitConverged(s.spec.serviceUid, revision);
        if (!r.converged) throw new Error(`lifecycle: ${s.spec.serviceUid} did not converge: ${r.error ?? ''}`);
        passAfter.set(s.spec.serviceUid, r.pass);
      });
    } finally {
      clearInterval(counter);
      stop();
    }
  });

  await measure('no-op full resync', async () => {
    const since = new Date(Date.now() - 1000).toISOString();
    const r = await c.client.workflow.execute(fullResync, { taskQueue: c.lbaas.taskQueue, workflowId: `bench/lifecycle-resync-${Date.now()}`, args: [{}] });
    if (r.signalled.length !== c.services) throw new Error(`lifecycle: the resync signalled ${r.signalled.length} controllers, expected ${c.services}`);
    // Finished passes counted in visibility first (one request per check), then each controller's status read once.
    const ended = (status: string) => `WorkflowType = 'reconcileService' AND TaskQueue = '${c.lbaas.taskQueue}' AND StartTime >= '${since}' AND ExecutionStatus = '${status}'`;
    let completed = 0;
    const stop = watchProgress(c, 'no-op full resync: passes completed', c.services, () => completed);
    let pending = uids;
    try {
      for (;;) {
        const failed = (await c.client.workflow.count(ended('Failed'))).count;
        completed = (await c.client.workflow.count(ended('Completed'))).count;
        if (failed > 0) throw new Error(`lifecycle: ${failed} resync passes failed`);
        if (completed >= c.services) break;
        await sleep(CHECK_EVERY_MS);
      }
      while (pending.length > 0) {
        const done = await mapLimit(pending, CLIENT_CONCURRENCY, async (uid) => {
          const st = await c.lbaas.status(uid);
          return (st.lastPass?.pass ?? 0) > (passAfter.get(uid) ?? 0) && st.running === null;
        });
        pending = pending.filter((_, i) => !done[i]);
        if (pending.length > 0) await sleep(CHECK_EVERY_MS);
      }
    } finally {
      stop();
    }
  });

  await measure('pool change', async () => {
    const { revision } = await c.lbaas.pools.add(pool, [NEW_NODE]);
    // The pool's own account, read every half minute, is what the progress line counts.
    let converged = 0;
    let waiting = true;
    const counting = (async () => {
      for (;;) {
        await sleep(30_000);
        if (!waiting) return;
        const st = await c.lbaas.pools.status(pool).catch(() => null);
        if (st) converged = st.services.filter((x) => (x.convergedRevision ?? 0) >= revision).length;
      }
    })();
    const stop = watchProgress(c, 'pool change: services converged on the new member', c.services, () => converged);
    const w = await c.lbaas.pools.waitConverged(pool, revision).finally(() => {
      waiting = false;
      stop();
    });
    void counting; // ends at its next wake-up, outside the phase's time
    if (!w.converged || w.services.length !== c.services) throw new Error(`lifecycle: the pool change converged on ${w.services.length} of ${c.services} services`);
  });

  await measure('delete', async () => {
    await mapLimit(uids, CLIENT_CONCURRENCY, (uid) => c.lbaas.startDelete(uid));
    let pending = uids;
    const stop = watchProgress(c, 'delete: controllers closed', c.services, () => c.services - pending.length);
    try {
      while (pending.length > 0) {
        const open = await mapLimit(pending, CLIENT_CONCURRENCY, async (uid) => (await c.lbaas.controller(uid).describe()).status.name === 'RUNNING');
        pending = pending.filter((_, i) => open[i]);
        if (pending.length > 0) await sleep(CHECK_EVERY_MS);
      }
    } finally {
      stop();
    }
  });
  const left = (await c.admin.objects()).filter((x) => x.tags.some((t) => t.startsWith('anxccm-svc-uid=bench-life-'))).length;
  if (left > 0) throw new Error(`lifecycle: ${left} tagged objects left after the delete`);
  return {
    services: c.services,
    workers: c.workers.length,
    historySample: sample.length,
    phases,
    workerRunPeakRssBytes: c.workers.map((w) => procMemory(w.pid)?.hwmBytes ?? NaN),
  };
}

export function parseLifecycle(argv: string[]): LifecycleArgs {
  const value = (name: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
  const known = new Set(['--lifecycle', '--services', '--workers', '--seed', '--only', '--no-write', '--save-json']);
  for (let i = 0; i < argv.length; i++) {
    if (!known.has(argv[i] as string)) throw new Error(`--lifecycle: unknown argument ${argv[i]} (flags: ${[...known].join(' ')})`);
    if (argv[i] !== '--lifecycle' && argv[i] !== '--no-write') i++;
  }
  const int = (name: string, def: number, min: number, max: number) => {
    const raw = value(name);
    const n = raw === undefined ? def : Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name}: expected an integer ${min}-${max}, got ${raw}`);
    return n;
  };
  const only = value('--only') ?? 'cluster';
  if (only !== 'dev' && only !== 'cluster') throw new Error(`--only: expected dev or cluster, got ${only}`);
  return { services: int('--services', 5000, 1, 60_000), workers: int('--workers', 2, 1, 16), seed: int('--seed', 42, 0, 2 ** 31), backend: only, write: !argv.includes('--no-write'), saveJson: value('--save-json') ?? null };
}

export async function lifecycleMain(argv: string[]): Promise<void> {
  const a = parseLifecycle(argv);
  const r = await runLifecycle(a);
  if (a.saveJson) writeFileSync(a.saveJson, JSON.stringify(r, null, 1));
  const text = lifecycleText(r);
  process.stdout.write(`${text.table}\n`);
  if (a.write) log(`wrote ${publish({ name: 'lifecycle', doc: 'docs/scaling.md', results: r, section: lifecycleSection(r) }).join(', ')}`);
  process.stdout.write(`${text.summary}\n`);
}
