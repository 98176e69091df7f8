/**
 * (Longer than 300 lines: the one entry point that parses the options, describes the machine and runs every measurement
 * in order on one Temporal dev server and simulator; each measurement and report already lives in its own file under
 * bench/.)
 *
 * `npm run bench [-- --quick] [--seed N] [--reps N] [--services N] [--fleet N] [--budget N] [--no-write]`
 * `npm run bench -- --core [--reps N] [--seed N] [--no-write]` runs only the core workload in the default worker and in
 * each mechanism-off mode (bench/core.ts, AB_MECHANISMS) and publishes what each mechanism buys (bench/report-ab.ts).
 * `npm run bench -- --kube [--services N] [--no-fleet] [--no-write]` runs only `lbaas kube` at cluster scale beside the
 * controller fleet (bench/kube.ts); `npm run bench -- --pool [--services 30,300]` only the pools' fan-out (bench/pools.ts).
 * `npm run bench -- --realistic-only [--seed N]` runs only the ideal-vs-realistic Engine comparison (realistic.ts)
 * and prints its table, writing nothing.
 * `node dist/bench/run.js --from-json` publishes bench/results/core.json again without measuring (after a change of
 * the tables).
 *
 * Measures the orchestrator against the lower bound of the Engine's own deploy delays and against the upstream
 * controller's waves, compares readiness polling strategies, measures workflow history sizes, throughput of one
 * worker and the cost of a no-op full resync. Prints a table, publishes (bench/publish.ts) its results as
 * bench/results/core.json and its tables as the `bench:core` section of docs/benchmarks.md with the chart
 * docs/benchmarks.svg, and ends with the summary line: `summary: convergence_vs_bound=<x> ... defaults=<yes|no>`.
 *
 * Everything runs on loopback: a Temporal dev server, the Engine simulator in a child process, and the workers in
 * child processes of their own (their peak RSS is read from /proc). `--quick` (2 repetitions, 40 services) finishes
 * within 5 minutes on a 2-CPU machine; the full run (5 repetitions, 200 services) takes longer.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import type { PacingOptions } from '../activities/engine';
import { startDevServer, type DevServer } from '../dev/devserver';
import { ensureTemporalCli } from '../dev/temporal-path';
import { TEMPORAL_SERVER_VERSION } from '../dev/temporal-server';
import { workflowsPath } from '../worker/main';
import { reconcileService } from '../workflows';
import { AB_MECHANISMS, CORE_DEPLOY_MS, MODES, runCore, WORKER_DEPLOY_TIMES, WORKER_PACING, WORKER_READINESS, WORKER_SWITCHES, type CoreContext, type CoreRun, type WorkerKind } from './core';
import { WORKER_DEFAULTS } from './defaults';
import { summarize, type BenchResult, type Machine } from './figures';
import { coreSection } from './report-md';
import { svgChart } from './report-svg';
import { coreOnlyReport, textReport } from './report-text';
import { publish, readResults, REPO, utcMinute } from './publish';
import { abSection, abRows, abSummary, abText } from './report-ab';
import { BENCH_TOKEN, startSimProcess, type SimProcess } from './sim-process';
import { runBudget } from './budget';
import { runFleet, type FleetResult } from './fleet';
import { FLEET_DEPLOY_MS } from './phase';
import { realistic429Share, realisticRows, runRealistic, textTable } from './realistic';
import { runThroughput } from './throughput';
import { startChildWorker, type ChildWorker } from '../dev/child-worker';
import { CountingEngine } from './waves';
import { coreSpec } from './workload';
import { runPoolBench } from './pools';
import { runKubeBench } from './kube';
import { porcelainPaths, PRODUCT_ROOMS } from './util';

interface Args {
  quick: boolean;
  seed: number;
  reps: number;
  services: number;
  /** Services of the controller fleet run (bench/fleet.ts); 0: not run. */
  fleet: number;
  /** Services of the Engine budget run (bench/budget.ts); 0: not run. */
  budget: number;
  /** Publish the results file and the doc section (false: --no-write, print only). */
  write: boolean;
  fromJson: boolean;
  realisticOnly: boolean;
  /** Only these core modes (comma-separated names), e.g. for an A/B of two workers in one run. */
  modes: string[] | null;
  /** Stop after the core workload (with --modes: a quick A/B; nothing is written). */
  coreOnly: boolean;
  /**
   * The same-run A/B of the latency mechanisms: the core workload only, in `heartbeat` and each AB_MECHANISMS mode
   * (or --modes), its table printed and published as bench/results/ab.json and `bench:ab` (unless --no-write).
   */
  ab: boolean;
}

function parseArgs(argv: string[]): Args {
  const quick = argv.includes('--quick');
  const value = (name: string): string | undefined => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const num = (name: string, def: number, min: number): number => {
    const raw = value(name);
    if (raw === undefined) return def;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) throw new Error(`${name}: expected an integer >= ${min}, got ${raw}`);
    return n;
  };
  const flags = new Set(['--quick', '--no-write', '--realistic-only', '--core-only', '--core', '--from-json']);
  const known = new Set([...flags, '--modes', '--seed', '--reps', '--services', '--fleet', '--budget']);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (!known.has(a)) throw new Error(`unknown argument ${a} (flags: ${[...known].join(' ')})`);
    if (!flags.has(a)) i++;
  }
  return {
    quick,
    seed: num('--seed', 42, 0),
    reps: num('--reps', quick ? 2 : 5, 1),
    services: num('--services', quick ? 40 : 200, 1),
    fleet: num('--fleet', 0, 0),
    budget: num('--budget', 0, 0),
    write: !argv.includes('--no-write'),
    fromJson: argv.includes('--from-json'),
    realisticOnly: argv.includes('--realistic-only'),
    modes: value('--modes')?.split(',') ?? null,
    coreOnly: argv.includes('--core-only') || argv.includes('--core'),
    ab: argv.includes('--core'),
  };
}

/** Prints the table, publishes the results with their tables and the chart, and ends with the summary line. */
function report(result: BenchResult, args: Args): void {
  const summary = summarize(result);
  process.stdout.write(textReport(result, summary));
  if (args.write) {
    const svgName = 'benchmarks.svg';
    const written = publish({ name: 'core', doc: 'docs/benchmarks.md', results: { ...result, summary: summaryFigures(summary) }, section: coreSection(result, summary, svgName) });
    writeFileSync(path.join(REPO, 'docs', svgName), svgChart(result));
    process.stdout.write(`wrote ${[...written, `docs/${svgName}`].join(', ')}\n`);
  }
  process.stdout.write(`${summary.line}\n`);
}

/** The summary's keys and values as the results file keeps them (numbers; null where not measured). */
function summaryFigures(sm: ReturnType<typeof summarize>): Record<string, number | boolean | null> {
  const out: Record<string, number | boolean | null> = {};
  for (const pair of sm.line.replace(/^summary: /, '').split(' ')) {
    const [key, value] = pair.split('=') as [string, string];
    out[key] = value === 'yes' ? true : value === 'no' ? false : value === 'n/a' ? null : Number(value);
  }
  return out;
}

/** `--core`: the A/B table on stdout, published as bench/results/ab.json and the `bench:ab` section. */
function writeAb(core: readonly CoreRun[], args: Args, mach: Machine): void {
  const rows = abRows(core);
  process.stdout.write(`\n${abText(rows)}\n`);
  if (args.write) {
    const reps = `${args.reps !== 5 ? ` --reps ${args.reps}` : ''}${args.seed !== 42 ? ` --seed ${args.seed}` : ''}`;
    mach.loadAvgEnd = os.loadavg();
    const info = {
      command: `npm run bench -- --core${reps}`,
      revision: `${mach.revision}${mach.uncommitted.length ? ' (with uncommitted changes)' : ''}`,
      reps: args.reps,
      seed: args.seed,
      date: utcMinute(new Date()),
      machine: `${mach.cpus} CPUs (${mach.cpuModel}), Node ${mach.node}`,
      load: { start: mach.loadAvgStart, end: mach.loadAvgEnd },
    };
    const written = publish({ name: 'ab', doc: 'docs/benchmarks.md', results: { ...info, core, rows }, section: abSection(rows, info) });
    process.stdout.write(`wrote ${written.join(', ')}\n`);
  }
  process.stdout.write(`${abSummary(rows)}\n`);
}

const log = (line: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

function machine(temporalPath: string): Machine {
  let temporalCli = 'unknown';
  try {
    temporalCli = execFileSync(temporalPath, ['--version'], { encoding: 'utf8' }).trim().replace(/^temporal version /, '');
  } catch {
    // Reported as unknown.
  }
  const repo = path.join(__dirname, '..', '..');
  const git = (...a: string[]) => {
    try {
      // trimEnd, not trim: a porcelain line starts with a space when only the work tree changed.
      return execFileSync('git', a, { cwd: repo, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trimEnd();
    } catch {
      return '';
    }
  };
  const uncommitted = porcelainPaths(git('status', '--porcelain', '--', ...PRODUCT_ROOMS));
  return {
    revision: git('rev-parse', '--short', 'HEAD').trim() || 'unknown',
    uncommitted,
    cpus: os.availableParallelism?.() ?? os.cpus().length,
    cpuModel: os.cpus()[0]?.model?.trim() ?? 'unknown',
    memoryBytes: os.totalmem(),
    node: process.version,
    os: `${os.type()} ${os.release()}`,
    temporalCli,
    temporalServer: TEMPORAL_SERVER_VERSION,
    loadAvgStart: os.loadavg(),
    loadAvgEnd: [],
  };
}

async function main(): Promise<void> {
  if (process.argv.includes('--pool')) return runPoolBench(process.argv.slice(2).filter((a) => a !== '--pool'));
  if (process.argv.includes('--kube')) return runKubeBench(process.argv.slice(2).filter((a) => a !== '--kube'));
  const args = parseArgs(process.argv.slice(2));
  if (args.fromJson) {
    const saved = readResults<BenchResult & { startedAt: string }>('core');
    report({ ...saved, startedAt: new Date(saved.startedAt) }, args);
    return;
  }
  const startedAt = new Date();
  const t0 = Date.now();
  const temporalPath = await ensureTemporalCli({ progress: log });
  const mach = machine(temporalPath);
  log(args.coreOnly ? `core workload only: seed ${args.seed}, ${args.reps} repetition(s)` : `${args.quick ? 'quick' : 'full'} run: seed ${args.seed}, ${args.reps} repetition(s), ${args.services} services for throughput`);

  const tmp = mkdtempSync(path.join(os.tmpdir(), 'lbaas-bench-'));
  let server: DevServer | null = null;
  let sim: SimProcess | null = null;
  let connection: Connection | null = null;
  const workers: ChildWorker[] = [];
  let wavesEngine: CountingEngine | null = null;
  try {
    log('starting the Temporal dev server, the simulator and bundling the workflows');
    const quiet = { info() {}, warn() {}, error: console.error, debug() {}, trace() {}, log() {} };
    const [srv, simProc, bundle] = await Promise.all([
      startDevServer({ progress: log }),
      startSimProcess({ seed: args.seed, deployMs: CORE_DEPLOY_MS }),
      bundleWorkflowCode({ workflowsPath, logger: quiet as never }),
    ]);
    server = srv;
    sim = simProc;
    const bundlePath = path.join(tmp, 'workflows.js');
    writeFileSync(bundlePath, bundle.code);
    connection = await Connection.connect({ address: srv.address });
    const client = new Client({ connection, namespace: srv.namespace });
    // Every worker runs at the settings of `lbaas worker` without environment (bench/defaults.ts; the heap limit is
    // dev/child-worker.ts's default) unless its kind or measurement says otherwise, to show that setting's effect.
    const startWorker = async (taskQueue: string, kind: WorkerKind, pacing: PacingOptions | null = WORKER_PACING[kind]) => {
      const w = await startChildWorker({
        temporalAddress: srv.address,
        namespace: srv.namespace,
        taskQueue,
        engineUrl: simProc.url,
        token: BENCH_TOKEN,
        bundlePath,
        echo: true,
        ...(WORKER_READINESS[kind] ? { readiness: WORKER_READINESS[kind] } : {}),
        ...(WORKER_DEPLOY_TIMES[kind] ? { deployTimes: WORKER_DEPLOY_TIMES[kind] } : {}),
        ...WORKER_SWITCHES[kind],
        ...(pacing ? { pacing } : {}),
      });
      await w.ready;
      return w;
    };
    const workerSettings = { core: { pacing: WORKER_PACING.heartbeat, heapMiB: WORKER_DEFAULTS.heapMiB }, fleet: WORKER_DEFAULTS };
    const realisticContext = { client, admin: simProc.admin, seed: args.seed, startWorker: (q: string, p?: PacingOptions) => startWorker(q, 'heartbeat', p ?? null), log };
    if (args.realisticOnly) {
      const runs = await runRealistic(realisticContext);
      process.stdout.write(`\n${textTable(realisticRows(runs))}\n`);
      process.stdout.write(`summary: realistic_429_share=${(realistic429Share(runs) ?? 0).toFixed(3)}\n`);
      return;
    }

    const run = randomUUID().slice(0, 8);
    const unknownMode = args.modes?.find((name) => !MODES.some((m) => m.name === name));
    if (unknownMode !== undefined) throw new Error(`--modes: unknown mode ${unknownMode} (modes: ${MODES.map((m) => m.name).join(', ')})`);
    const abModes: string[] = ['heartbeat', ...AB_MECHANISMS.map((m) => m.mode)];
    const modes = MODES.filter((m) => (args.modes ? args.modes.includes(m.name) : args.ab ? abModes.includes(m.name) : !args.quick || m.quick));
    const kinds = [...new Set(modes.flatMap((m) => (m.worker ? [m.worker] : [])))] as WorkerKind[];
    const queues = Object.fromEntries(kinds.map((k) => [k, `bench-${k}-${run}`])) as Record<WorkerKind, string>;
    log('starting the workers');
    const started = await Promise.all(kinds.map((k) => startWorker(queues[k], k)));
    workers.push(...started);
    wavesEngine = new CountingEngine(simProc.url, BENCH_TOKEN);
    const ctx: CoreContext = {
      client,
      admin: simProc.admin,
      workers: Object.fromEntries(kinds.map((k, i) => [k, { process: started[i] as ChildWorker, taskQueue: queues[k] }])) as CoreContext['workers'],
      waves: wavesEngine,
      log,
    };

    // Warm-up (not measured): the first workflow tasks of a worker create its sandbox and compile the bundle, and the
    // deploy-time estimator learns the core workload's deploys as it would in steady state: two services on two load
    // balancers give every kind at least MIN_SAMPLES deploys (4 Backends, 4 Frontends, 8 Binds, 12 Servers each).
    log('warming up the workers');
    await simProc.admin.setDeploy(args.seed + 1000, CORE_DEPLOY_MS);
    const warmLbs = [await simProc.admin.seedLoadBalancer('bench-warmup-a', '198.51.100.98'), await simProc.admin.seedLoadBalancer('bench-warmup-b', '198.51.100.99')];
    await Promise.all(
      kinds.map(async (kind) => {
        for (const i of [1, 2]) {
          const uid = `bench-warmup-${kind}-${i}-${run}`;
          await client.workflow.execute(reconcileService, { taskQueue: queues[kind], workflowId: `bench/${uid}`, args: [{ spec: coreSpec(uid, warmLbs) }] });
        }
      }),
    );

    const core: CoreRun[] = [];
    for (let rep = 0; rep < args.reps; rep++) {
      // Rotate the order of modes so that drifting background load does not always hit the same one.
      const order = modes.map((_, i) => modes[(i + rep) % modes.length] as (typeof modes)[number]);
      for (const mode of order) {
        const c = await runCore(ctx, mode, rep, args.seed + rep);
        core.push(c);
        log(
          `core rep ${rep} ${mode.name}: ${(c.apply.wallMs / 1000).toFixed(2)} s (bound ${(c.serviceBoundMs / 1000).toFixed(2)} s, ratio ${(c.apply.wallMs / c.serviceBoundMs).toFixed(2)}), ${c.apply.requests} requests; no-op ${(c.noop.wallMs / 1000).toFixed(2)} s, ${c.noop.requests} requests, ${c.noop.mutations} writes`,
        );
      }
    }
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    if (args.coreOnly) {
      process.stdout.write(`\n${coreOnlyReport(core)}\n`);
      if (args.ab) writeAb(core, args, mach);
      return;
    }

    log('starting a fresh worker for the throughput run');
    const fleetQueue = `bench-fleet-${run}`;
    const fleetWorker = await startWorker(fleetQueue, 'heartbeat');
    workers.push(fleetWorker);
    const throughput = await runThroughput({
      client,
      admin: simProc.admin,
      worker: fleetWorker,
      taskQueue: fleetQueue,
      services: args.services,
      seed: args.seed,
      pids: { temporal: srv.process.pid ?? -1, simulator: simProc.child.pid ?? -1 },
      log,
    });
    log(`throughput: ${throughput.servicesPerMinute.toFixed(0)} services/min, no-op resync ${throughput.noop.requests} requests, ${throughput.noop.mutations} writes`);
    await Promise.all(workers.splice(0).map((w) => w.stop()));

    let fleet: FleetResult | undefined;
    if (args.fleet > 0) {
      // On a Temporal dev server and simulator of its own, as `fleet-run` measures it: the earlier phases' runs in the
      // shared server's in-memory database slowed the fleet by a sixth (209 against 254 services/min when measured).
      log('starting a Temporal dev server, a simulator and a worker of their own for the controller fleet');
      const [fleetSrv, fleetSim] = await Promise.all([startDevServer({ progress: log }), startSimProcess({ seed: args.seed, deployMs: FLEET_DEPLOY_MS })]);
      const fleetConnection = await Connection.connect({ address: fleetSrv.address }).catch(async (err: unknown) => {
        await Promise.all([fleetSrv.stop(), fleetSim.stop()]);
        throw err;
      });
      try {
        const ctlQueue = `bench-ctl-${run}`;
        // At the settings of `lbaas worker` without environment: its Engine budget and heap limit.
        const ctlWorker = await startChildWorker({ temporalAddress: fleetSrv.address, namespace: fleetSrv.namespace, taskQueue: ctlQueue, engineUrl: fleetSim.url, token: BENCH_TOKEN, bundlePath, echo: true, ...(WORKER_DEFAULTS.pacing ? { pacing: WORKER_DEFAULTS.pacing } : {}), heapMiB: WORKER_DEFAULTS.heapMiB });
        workers.push(ctlWorker);
        await ctlWorker.ready;
        const fleetClient = new Client({ connection: fleetConnection, namespace: fleetSrv.namespace });
        fleet = { workerNodeHeapMiB: WORKER_DEFAULTS.heapMiB, ...(await runFleet({ client: fleetClient, admin: fleetSim.admin, worker: ctlWorker, taskQueue: ctlQueue, services: args.fleet, seed: args.seed, pids: { temporal: fleetSrv.process.pid ?? -1, simulator: fleetSim.child.pid ?? -1 }, log })) };
        await Promise.all(workers.splice(0).map((w) => w.stop()));
      } finally {
        await fleetConnection.close();
        await Promise.all([fleetSim.stop(), fleetSrv.stop()]);
      }
    }

    const budget = args.budget > 0 ? await runBudget({ client, admin: simProc.admin, services: args.budget, seed: args.seed, log, startWorker: (q, p) => startWorker(q, 'heartbeat', p) }) : undefined;

    log('the core workload on the ideal and the realistic simulator profile');
    const realistic = await runRealistic(realisticContext);

    mach.loadAvgEnd = os.loadavg();
    const result: BenchResult = { quick: args.quick, seed: args.seed, reps: args.reps, startedAt, durationMs: Date.now() - t0, machine: mach, workers: workerSettings, modes, core, throughput, realistic, ...(fleet ? { fleet } : {}), ...(budget ? { budget } : {}) };
    report(result, args);
  } finally {
    await Promise.all(workers.map((w) => w.stop().catch(() => {})));
    await connection?.close();
    await wavesEngine?.engine.close();
    await sim?.stop();
    await server?.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
