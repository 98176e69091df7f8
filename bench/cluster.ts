/**
 * `npm run bench:cluster [-- --services 120] [--workers 1,2,4] [--seed 42] [--only dev|cluster] [--no-write]
 *   [--save-jsonl FILE]` (each run appended as it is measured); `--from-jsonl A,B` renders the section from saved runs.
 * `npm run bench:cluster -- --lifecycle ...` measures one fleet's whole life instead (bench/cluster-lifecycle.ts).
 *
 * The throughput fleet (bench/throughput.ts: N services x 2 load balancers applied at once, deploys 100-300 ms) on
 * the Temporal dev server and on the production-shaped local cluster (cluster/index.ts), side by side, with 1, 2 and
 * 4 worker processes on one task queue. Per run: services per minute, CPU seconds of Temporal (every server process;
 * for the cluster also PostgreSQL with all its backends), of the workers and the simulator, how busy the machine was,
 * and the database growth per service (the dev server's SQLite file, the cluster's pg_database_size of both
 * databases). Prints its table and publishes (bench/publish.ts) bench/results/cluster.json and the `bench:cluster`
 * section of docs/benchmarks.md.
 */
import { appendFileSync, readFileSync, writeFileSync, mkdtempSync, rmSync, chmodSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { workflowsPath } from '../worker/main';
import { BENCH_TOKEN, startSimProcess, type SimProcess } from './sim-process';
import { clusterSection, type RunResult } from './cluster-report';
import { gitRevision, publish } from './publish';
import { FLEET_DEPLOY_MS } from './phase';
import { applyAll } from './throughput';
import { machineCpuSeconds } from './util';
import { treeCpuSeconds } from './proc-tree';
import { startChildWorker } from '../dev/child-worker';
import { fleetSpec } from './workload';
import { WORKER_DEFAULTS } from './defaults';
import type * as Lifecycle from './cluster-lifecycle';
import { clusterBackend, devBackend, type Backend } from './cluster-backends';


const log = (line: string) => process.stderr.write(`[bench:cluster ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

/** What an interrupted run must stop (SIGINT/SIGTERM): the workers, the backend in use and the simulator. */
const running = new Set<() => Promise<void>>();

async function measure(backend: Backend, sim: SimProcess, bundlePath: string, workers: number, services: number, seed: number): Promise<RunResult> {
  const connection = await Connection.connect({ address: backend.address });
  const client = new Client({ connection, namespace: backend.namespace });
  const label = `${backend.name === 'cluster' ? 'cl' : 'dev'}-w${workers}-${Date.now().toString(36)}`;
  const taskQueue = `bench-${label}`;
  const procs = await Promise.all(
    Array.from({ length: workers }, async () => {
      // At the settings of `lbaas worker` without environment (bench/defaults.ts): its Engine budget, its heap limit.
      const w = await startChildWorker({ temporalAddress: backend.address, namespace: backend.namespace, taskQueue, engineUrl: sim.url, token: BENCH_TOKEN, bundlePath, ...(WORKER_DEFAULTS.pacing ? { pacing: WORKER_DEFAULTS.pacing } : {}) });
      await w.ready;
      return w;
    }),
  );
  const stopWorkers = async () => {
    await Promise.all(procs.map((p) => p.stop().catch(() => {})));
  };
  running.add(stopWorkers);
  try {
    const lbs = [await sim.admin.seedLoadBalancer(`bench-${label}-a`, '198.51.100.40'), await sim.admin.seedLoadBalancer(`bench-${label}-b`, '198.51.100.41')];
    const spec = (i: number) => ({ ...fleetSpec(i, lbs), serviceUid: `bench-${label}-${i}`, nameSuffix: `svc-${i}.${label}.bench` });
    // Warm-up, not measured: each worker's first workflow tasks create its sandbox from the bundle. (Indices from
    // 60000 keep the warm-up's addresses apart from the measured ones and valid: fleetSpec puts i in one IPv6 group.)
    await sim.admin.setDeploy(seed, { min: 10, max: 20 });
    await applyAll(client, sim.admin, taskQueue, Array.from({ length: 2 * workers }, (_, i) => spec(60_000 + i)), 'warmup', {});
    await sim.admin.setDeploy(seed, FLEET_DEPLOY_MS);
    const db0 = await backend.databaseBytes();
    const pids = { workers: procs.map((p) => p.pid), sim: [sim.child.pid ?? -1] };
    const cpu0 = { temporal: treeCpuSeconds(backend.temporalPids()), workers: treeCpuSeconds(pids.workers), sim: treeCpuSeconds(pids.sim), machine: machineCpuSeconds().busy };
    log(`${backend.name}, ${workers} worker(s): applying ${services} services x 2 load balancers`);
    const phase = await applyAll(client, sim.admin, taskQueue, Array.from({ length: services }, (_, i) => spec(i)), 'apply', {});
    const cpu1 = { temporal: treeCpuSeconds(backend.temporalPids()), workers: treeCpuSeconds(pids.workers), sim: treeCpuSeconds(pids.sim), machine: machineCpuSeconds().busy };
    const db1 = await backend.databaseBytes();
    const cpus = os.availableParallelism?.() ?? os.cpus().length;
    const r: RunResult = {
      backend: backend.name,
      workers,
      services,
      wallMs: phase.wallMs,
      servicesPerMinute: (services / phase.wallMs) * 60_000,
      temporalCpuS: cpu1.temporal - cpu0.temporal,
      workerCpuS: cpu1.workers - cpu0.workers,
      simulatorCpuS: cpu1.sim - cpu0.sim,
      machineBusyS: cpu1.machine - cpu0.machine,
      machineBusy: (cpu1.machine - cpu0.machine) / ((phase.wallMs / 1000) * cpus),
      dbBytesPerService: (db1 - db0) / services,
      serviceP50Ms: phase.serviceP50Ms,
      serviceP95Ms: phase.serviceP95Ms,
    };
    log(`  ${r.servicesPerMinute.toFixed(0)} services/min, Temporal ${r.temporalCpuS.toFixed(0)} CPU-s, workers ${r.workerCpuS.toFixed(0)} CPU-s, machine ${(r.machineBusy * 100).toFixed(0)} % busy, ${(r.dbBytesPerService / 1024).toFixed(1)} KiB/service`);
    return r;
  } finally {
    running.delete(stopWorkers);
    await stopWorkers();
    await connection.close();
  }
}


interface Args {
  services: number;
  workers: number[];
  seed: number;
  write: boolean;
  backends: Backend['name'][];
  /** Each run's result is appended here as it is measured (one JSON line), so an interrupted run keeps what it had. */
  saveJsonl: string | null;
  /** Render the section from saved runs (several files, comma-separated) instead of measuring. */
  fromJsonl: string[];
}

function parse(argv: string[]): Args {
  const value = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const known = new Set(['--services', '--workers', '--seed', '--no-write', '--only', '--save-jsonl', '--from-jsonl']);
  for (let i = 0; i < argv.length; i++) {
    if (!known.has(argv[i] as string)) throw new Error(`unknown argument ${argv[i]} (flags: ${[...known].join(' ')})`);
    if (argv[i] !== '--no-write') i++;
  }
  const services = Number(value('--services') ?? 120);
  const workers = (value('--workers') ?? '1,2,4').split(',').map(Number);
  const seed = Number(value('--seed') ?? 42);
  if (!Number.isInteger(services) || services < 1) throw new Error(`--services: expected an integer >= 1, got ${value('--services')}`);
  if (workers.some((w) => !Number.isInteger(w) || w < 1 || w > 16)) throw new Error(`--workers: expected a list like 1,2,4 (each 1-16), got ${value('--workers')}`);
  const only = value('--only');
  if (only && only !== 'dev' && only !== 'cluster') throw new Error(`--only: expected dev or cluster, got ${only}`);
  return {
    services,
    workers,
    seed,
    write: !argv.includes('--no-write'),
    backends: only === 'dev' ? ['dev server'] : only === 'cluster' ? ['cluster'] : ['dev server', 'cluster'],
    saveJsonl: value('--save-jsonl') ?? null,
    fromJsonl: value('--from-jsonl')?.split(',') ?? [],
  };
}

async function main(): Promise<void> {
  // The whole life of one fleet (apply, no-op resync, pool change, delete): bench/cluster-lifecycle.ts.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  if (process.argv.includes('--lifecycle')) return (require('./cluster-lifecycle') as typeof Lifecycle).lifecycleMain(process.argv.slice(2));
  const args = parse(process.argv.slice(2));
  if (args.fromJsonl.length > 0) {
    const saved = args.fromJsonl.flatMap((f) => readFileSync(f, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as RunResult & { loadAvg: number[]; revision: string }));
    if (saved.length === 0) throw new Error(`--from-jsonl: no runs in ${args.fromJsonl.join(', ')}`);
    const loads = saved.map((r) => r.loadAvg);
    report(saved, args, loads[0] as number[], loads[loads.length - 1] as number[], (saved[0] as RunResult).services, [...new Set(saved.map((r) => r.revision))].join(', '));
    return;
  }
  const loadStart = os.loadavg();
  const revision = gitRevision();
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'lbaas-bench-cluster-'));
  // As root PostgreSQL runs as the postgres user, which must pass through this directory to its own.
  chmodSync(tmp, 0o711);
  const results: RunResult[] = [];
  let sim: SimProcess | null = null;
  try {
    const quiet = { info() {}, warn() {}, error: console.error, debug() {}, trace() {}, log() {} };
    const bundle = await bundleWorkflowCode({ workflowsPath, logger: quiet as never });
    const bundlePath = path.join(tmp, 'workflows.js');
    writeFileSync(bundlePath, bundle.code);
    sim = await startSimProcess({ seed: args.seed, deployMs: FLEET_DEPLOY_MS });
    const simProc = sim;
    running.add(() => simProc.stop());
    for (const name of args.backends) {
      log(`starting the ${name}`);
      const backend = name === 'cluster' ? await clusterBackend(tmp) : await devBackend(tmp);
      const stopBackend = () => backend.stop();
      running.add(stopBackend);
      try {
        for (const w of args.workers) {
          const r = await measure(backend, sim, bundlePath, w, args.services, args.seed);
          results.push(r);
          if (args.saveJsonl) appendFileSync(args.saveJsonl, `${JSON.stringify({ ...r, loadAvg: os.loadavg(), revision })}\n`);
        }
      } finally {
        running.delete(stopBackend);
        await backend.stop();
      }
    }
  } finally {
    await sim?.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
  report(results, args, loadStart, os.loadavg(), args.services, revision);
}

function report(results: RunResult[], args: Args, loadStart: number[], loadEnd: number[], services: number, revision: string): void {
  const only = args.backends.length === 1 ? ` --only ${args.backends[0] === 'cluster' ? 'cluster' : 'dev'}` : '';
  const workers = args.workers.join(',') === '1,2,4' ? '' : ` --workers ${args.workers.join(',')}`;
  const options = `${services !== 120 ? ` --services ${services}` : ''}${workers}${args.seed !== 42 ? ` --seed ${args.seed}` : ''}${only}`;
  const info = { command: `npm run bench:cluster${options ? ` --${options}` : ''}`, services, seed: args.seed, cpus: os.availableParallelism?.() ?? os.cpus().length, loadStart, loadEnd, revision };
  const section = clusterSection(results, info);
  process.stdout.write(`${section}\n`);
  if (args.write) {
    const written = publish({ name: 'cluster', doc: 'docs/benchmarks.md', results: { ...info, runs: results }, section });
    log(`wrote ${written.join(', ')}`);
  }
}

if (require.main === module) {
  // Everything this run started is a process of its own: stop the workers, the Temporal server(s) and the simulator.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`bench:cluster: ${signal}: stopping the workers, the Temporal server(s) and the simulator\n`);
      void Promise.all([...running].map((stop) => stop().catch(() => {}))).finally(() => process.exit(130));
    });
  }
  main().catch((err: unknown) => {
    // The causes too: a Temporal client error says what the server answered only in its cause (a gRPC status).
    const lines = [`bench:cluster: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`];
    for (let e = (err as { cause?: unknown }).cause, depth = 0; e !== undefined && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
      lines.push(`caused by: ${e instanceof Error ? e.message : String(e)}`);
    }
    process.stderr.write(`${lines.join('\n')}\n`);
    process.exitCode = 1;
  });
}
