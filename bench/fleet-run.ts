/**
 * `npm run build && node dist/bench/fleet-run.js [--services N] [--seed N] [--cached-workflows N] [--save-json FILE]`:
 * the controller fleet alone (bench/fleet.ts), for working on fleet scale without the core workload's repetitions;
 * `--cached-workflows` is the worker's LBAAS_MAX_CACHED_WORKFLOWS; `--memory-log MS` has the worker print where its memory
 * is (RSS, V8 heap by space, buffers) every MS ms; the worker runs at the settings of `lbaas worker` without
 * environment (bench/defaults.ts); `--heap-mib N` starts it with `--max-old-space-size=N` instead of 512, `--no-budget`
 * without an Engine request budget, and `--malloc-arena-max N` with MALLOC_ARENA_MAX=N in its environment.
 * `--memory-profile FILE` samples where the worker's memory is every second (bench/memory-profile.ts: smaps by kind of
 * mapping, both threads' V8 heaps), prints each phase's peak and what it was made of, and saves the samples to FILE. With `--budget N`: the Engine budget run
 * (bench/budget.ts) of N services instead. `npm run bench -- --fleet N` runs the same fleet inside the full benchmark and reports it in docs/benchmarks.md.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { startChildWorker } from '../dev/child-worker';
import { startDevServer } from '../dev/devserver';
import { ensureTemporalServer } from '../dev/temporal-server';
import { workflowsPath } from '../worker/main';
import { runBudget } from './budget';
import { runFleet } from './fleet';
import { memoryLines, phaseMemoryText, phasePeaks, smapsSample, type SmapsSample } from './memory-profile';
import { BENCH_TOKEN, startSimProcess } from './sim-process';
import { mib } from './util';
import { WORKER_DEFAULTS } from './defaults';

const log = (line: string) => process.stderr.write(`[fleet ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const value = (name: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
  const services = Number(value('--services') ?? 100);
  const seed = Number(value('--seed') ?? 42);
  if (!Number.isInteger(services) || services < 1) throw new Error(`--services: expected an integer >= 1, got ${value('--services')}`);
  const cached = value('--cached-workflows') === undefined ? undefined : Number(value('--cached-workflows'));
  if (cached !== undefined && !(Number.isInteger(cached) && cached >= 2)) throw new Error(`--cached-workflows: expected an integer >= 2, got ${value('--cached-workflows')}`);
  const profileFile = value('--memory-profile');
  await ensureTemporalServer({ which: ['server'], progress: log });
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'lbaas-fleet-'));
  const quiet = { info() {}, warn() {}, error: console.error, debug() {}, trace() {}, log() {} };
  const [srv, sim, bundle] = await Promise.all([
    startDevServer({ progress: log }),
    startSimProcess({ seed, deployMs: { min: 100, max: 300 } }),
    bundleWorkflowCode({ workflowsPath, logger: quiet as never }),
  ]);
  const bundlePath = path.join(tmp, 'workflows.js');
  writeFileSync(bundlePath, bundle.code);
  const connection = await Connection.connect({ address: srv.address });
  const taskQueue = `bench-ctl-${Date.now()}`;
  const worker = await startChildWorker({
    temporalAddress: srv.address,
    namespace: srv.namespace,
    taskQueue,
    engineUrl: sim.url,
    token: BENCH_TOKEN,
    bundlePath,
    echo: true,
    ...(cached ? { maxCachedWorkflows: cached } : {}),
    ...(value('--memory-log') || profileFile ? { memoryLogMs: Number(value('--memory-log') ?? 1000) } : {}),
    ...(value('--heap-mib') ? { heapMiB: Number(value('--heap-mib')) } : {}),
    // The Engine budget of `lbaas worker` without environment, unless --no-budget shows the run without one.
    ...(process.argv.includes('--no-budget') || !WORKER_DEFAULTS.pacing ? {} : { pacing: WORKER_DEFAULTS.pacing }),
    ...(value('--malloc-arena-max') ? { env: { MALLOC_ARENA_MAX: String(value('--malloc-arena-max')) } } : {}),
  });
  try {
    await worker.ready;
    const client = new Client({ connection, namespace: srv.namespace });
    if (value('--budget')) {
      const r = await runBudget({
        client,
        admin: sim.admin,
        services: Number(value('--budget')),
        seed,
        log,
        startWorker: async (q, pacing) => {
          const w = await startChildWorker({ temporalAddress: srv.address, namespace: srv.namespace, taskQueue: q, engineUrl: sim.url, token: BENCH_TOKEN, bundlePath, echo: true, pacing });
          await w.ready;
          return w;
        },
      });
      process.stdout.write(`${JSON.stringify(r)}\n`);
      const save = value('--save-json');
      if (save) writeFileSync(save, JSON.stringify(r, null, 1));
      return;
    }
    const phases: { name: string; startedAt: number }[] = [];
    const samples: SmapsSample[] = [];
    const sampler = profileFile
      ? setInterval(() => {
          const s = smapsSample(worker.pid);
          if (s) samples.push(s);
        }, 1000)
      : undefined;
    const r = await runFleet({ client, admin: sim.admin, worker, taskQueue, services, seed, pids: { temporal: srv.process.pid ?? -1, simulator: sim.child.pid ?? -1 }, log }, (name) => phases.push({ name, startedAt: Date.now() })).finally(() => clearInterval(sampler));
    if (profileFile) {
      const lines = memoryLines(worker.stderr());
      const peaks = phasePeaks(samples, lines, phases).filter((p) => p.phase !== 'end');
      writeFileSync(profileFile, JSON.stringify({ phases, peaks, samples, worker: lines }, null, 1));
      process.stdout.write(`memory profile (${samples.length} samples, saved to ${profileFile}):\n${peaks.map((p) => `  ${phaseMemoryText(p)}`).join('\n')}\n`);
    }
    const cpu = (c: Record<string, number>) => Object.entries(c).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ');
    const line = (name: string, p: typeof r.apply) =>
      `${name}: ${(p.wallMs / 1000).toFixed(1)} s, ${p.requests} Engine requests (${(p.requests / services).toFixed(1)} per service), ${p.mutations} writes, ${p.throttled} throttled; CPU s: ${cpu(p.cpuSeconds)}; machine ${p.machineBusySeconds.toFixed(1)}`;
    process.stdout.write(
      [
        `fleet of ${r.services} services x ${r.loadBalancers} load balancers (${r.objects} objects), deploys ${r.deployMs.min}-${r.deployMs.max} ms`,
        `${line('apply', r.apply)}; ${r.servicesPerMinute.toFixed(0)} services/min, per service p50 ${(r.serviceP50Ms / 1000).toFixed(1)} s p95 ${(r.serviceP95Ms / 1000).toFixed(1)} s`,
        `${line('no-op full resync', r.noop)}; ${r.resyncSignalled} controllers signalled`,
        `${line('delete', r.remove)}; ${r.leftAfterDelete} tagged objects left`,
        `no-op full resync by route: ${Object.entries(r.noop.byRoute ?? {}).map(([k, n]) => `${k} ${n}`).join(', ')}`,
        `worker peak RSS during the apply ${mib(r.workerPeakRssBytes)}, over the whole run ${mib(r.workerRunPeakRssBytes ?? NaN)} (idle ${mib(r.workerIdleRssBytes)}); history events: controller ${r.controllerEvents}, fullResync ${r.fullResyncEvents}`,
        // The fleet's keys of `npm run bench`'s summary line (bench/figures.ts), so that a fleet run alone reports them too.
        `summary: fleet_services=${r.services} fleet_services_per_min=${r.servicesPerMinute.toFixed(0)} fleet_peak_rss_mib=${(r.workerPeakRssBytes / 2 ** 20).toFixed(0)} fleet_noop_resync_s=${(r.noop.wallMs / 1000).toFixed(1)} fleet_noop_requests_per_service=${(r.noop.requests / services).toFixed(1)} fleet_noop_writes=${r.noop.mutations}`,
        '',
      ].join('\n'),
    );
    const save = value('--save-json');
    if (save) writeFileSync(save, JSON.stringify(r, null, 1));
  } finally {
    await worker.stop().catch(() => {});
    await connection.close();
    await sim.stop();
    await srv.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`fleet: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
