/**
 * `npm run bench -- --pool [--services 30,300] [--seed N] [--no-write]`: the cost of a server pool's fan-out.
 *
 * For each N: N services (one load balancer, one port, one address) use a pool of two nodes. Measured:
 * - fan-out: from `pool add` (a third node) to the pool's waitConverged (every service has reconciled it), and the
 *   same for `pool remove`;
 * - direct: the same change made the old way, one `apply` per service (each service switched to inline servers
 *   with the third node), from the first apply to the last service converged;
 * - Engine requests per service for each (from the simulator's /_sim/stats).
 * Target: fan-out <= direct + 2 s at N = 300. Publishes (bench/publish.ts) bench/results/pools.json and the
 * `bench:pools` section of docs/benchmarks.md.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { LbaasClient } from '../client/service-client';
import { startChildWorker } from '../dev/child-worker';
import { startDevServer } from '../dev/devserver';
import { ensureTemporalServer } from '../dev/temporal-server';
import { validateSpec, type ServerSpec } from '../domain';
import { workflowsPath } from '../worker/main';
import { factTable, gitRevision, loadText, mdTable, publish, utcMinute } from './publish';
import { BENCH_TOKEN, startSimProcess, type SimAdmin } from './sim-process';

/** Engine deploy delays: short enough that 300 services set up in minutes, long enough to be waited for. */
const DEPLOY_MS = { min: 100, max: 300 };
/** Applies in flight at once while setting up (the client's own concurrency, not the orchestrator's). */
const SETUP_BATCH = 50;

interface PoolRow {
  services: number;
  fanoutAddMs: number;
  /** From `pool add` to the last service's pass finishing (workflow clock): the reconciliations without the reports' way back. */
  fanoutAddServicesMs: number;
  fanoutRemoveMs: number;
  directMs: number;
  fanoutRequestsPerService: number;
  fanoutWritesPerService: number;
  directRequestsPerService: number;
  directWritesPerService: number;
}

const NODES: ServerSpec[] = [
  { name: 'node-1', address: '10.0.0.11' },
  { name: 'node-2', address: '10.0.0.12' },
];
const NODE3: ServerSpec = { name: 'node-3', address: '10.0.0.13' };

function spec(uid: string, lb: string, source: { serverPool: string } | { servers: ServerSpec[] }): Record<string, unknown> {
  return {
    serviceUid: uid,
    nameSuffix: uid,
    loadBalancers: [lb],
    externalAddresses: ['203.0.113.10'],
    ports: { http: { external: 80, internal: 30080 } },
    ...source,
    readiness: { initialInterval: '100ms', backoffCoefficient: 1.5, maximumInterval: '1s', maximumAttempts: 50 },
  };
}

async function inBatches<T>(items: readonly T[], fn: (t: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += SETUP_BATCH) await Promise.all(items.slice(i, i + SETUP_BATCH).map(fn));
}

async function counts(admin: SimAdmin): Promise<{ requests: number; writes: number }> {
  const s = await admin.stats();
  const entries = Object.entries(s.requests);
  return { requests: entries.reduce((a, [, n]) => a + n, 0), writes: entries.filter(([r]) => /^(POST|PUT|DELETE) /.test(r)).reduce((a, [, n]) => a + n, 0) };
}

async function measure(lbaas: LbaasClient, admin: SimAdmin, n: number, run: string, log: (l: string) => void): Promise<PoolRow> {
  const pool = `bench-pool-${n}-${run}`;
  const lb = await admin.seedLoadBalancer(`bench-pool-${n}`, '198.51.100.20');
  const uids = Array.from({ length: n }, (_, i) => `bench-pool-${n}-${i}-${run}`);
  const apply = async (raw: Record<string, unknown>) => {
    const r = validateSpec(raw);
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    const { revision } = await lbaas.apply(raw, r.spec);
    const pass = await lbaas.waitConverged(r.spec.serviceUid, revision);
    if (!pass.converged) throw new Error(`${r.spec.serviceUid}: ${pass.error ?? 'not converged'}`);
  };
  log(`N=${n}: setting up ${n} services on pool ${pool}`);
  await lbaas.pools.set({ name: pool, servers: NODES });
  await inBatches(uids, (uid) => apply(spec(uid, lb, { serverPool: pool })));

  const fanout = async (change: () => Promise<{ revision: number }>) => {
    await admin.resetStats();
    const wall0 = Date.now();
    const t0 = performance.now();
    const { revision } = await change();
    const w = await lbaas.pools.waitConverged(pool, revision);
    const ms = performance.now() - t0;
    if (!w.converged || w.services.length !== n) throw new Error(`fan-out did not converge on all ${n} services`);
    const finished = await Promise.all(uids.map(async (uid) => (await lbaas.status(uid)).lastPass?.finishedAt ?? 0));
    return { ms, servicesMs: Math.max(...finished) - wall0, ...(await counts(admin)) };
  };
  log(`N=${n}: pool add`);
  const add = await fanout(() => lbaas.pools.add(pool, [NODE3]));
  log(`N=${n}: pool remove`);
  const remove = await fanout(() => lbaas.pools.remove(pool, [NODE3.name]));

  log(`N=${n}: the same change by one apply per service`);
  await admin.resetStats();
  const t0 = performance.now();
  await Promise.all(uids.map((uid) => apply(spec(uid, lb, { servers: [...NODES, NODE3] }))));
  const directMs = performance.now() - t0;
  const direct = await counts(admin);
  return {
    services: n,
    fanoutAddMs: Math.round(add.ms),
    fanoutAddServicesMs: Math.round(add.servicesMs),
    fanoutRemoveMs: Math.round(remove.ms),
    directMs: Math.round(directMs),
    fanoutRequestsPerService: +(add.requests / n).toFixed(1),
    fanoutWritesPerService: +(add.writes / n).toFixed(1),
    directRequestsPerService: +(direct.requests / n).toFixed(1),
    directWritesPerService: +(direct.writes / n).toFixed(1),
  };
}

interface PoolRunInfo {
  command: string;
  revision: string;
  date: string;
  load: { start: number[]; end: number[] };
}

/** The `bench:pools` section: the run, then one row per fleet size. */
export function poolSection(rows: readonly PoolRow[], info: PoolRunInfo): string {
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const run = factTable([
    ['command', `\`${info.command}\``],
    ['commit', info.revision],
    ['date', info.date],
    ['load average', loadText(info.load.start, info.load.end)],
    ['simulator deploys', `${DEPLOY_MS.min}-${DEPLOY_MS.max} ms`],
  ]);
  const table = mdTable(
    ['services', 'fan-out add (last service converged)', 'fan-out remove', 'direct apply', 'fan-out - direct', 'requests/service fan-out (writes)', 'requests/service direct (writes)'],
    rows.map((r) => [r.services, `${s(r.fanoutAddMs)} (${s(r.fanoutAddServicesMs)})`, s(r.fanoutRemoveMs), s(r.directMs), s(r.fanoutAddMs - r.directMs), `${r.fanoutRequestsPerService} (${r.fanoutWritesPerService})`, `${r.directRequestsPerService} (${r.directWritesPerService})`]),
    true,
  );
  return `${run}\n\n${table}`;
}

export async function runPoolBench(argv: string[]): Promise<void> {
  const value = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const sizes = (value('--services') ?? '30,300').split(',').map((s) => {
    const x = Number(s);
    if (!Number.isInteger(x) || x < 1) throw new Error(`--services: expected sizes like 30,300, got ${s}`);
    return x;
  });
  const seed = Number(value('--seed') ?? 42);
  const log = (l: string) => process.stderr.write(`[bench pools] ${l}\n`);
  const loadStart = os.loadavg();
  await ensureTemporalServer({ which: ['server'], progress: log });
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'lbaas-bench-pool-'));
  const quiet = { info() {}, warn() {}, error: console.error, debug() {}, trace() {}, log() {} };
  const [srv, sim, bundle] = await Promise.all([
    startDevServer({ progress: log }),
    startSimProcess({ seed, deployMs: DEPLOY_MS }),
    bundleWorkflowCode({ workflowsPath, logger: quiet as never }),
  ]);
  const bundlePath = path.join(tmp, 'workflows.js');
  writeFileSync(bundlePath, bundle.code);
  const taskQueue = `bench-pool-${randomUUID().slice(0, 8)}`;
  const worker = await startChildWorker({ temporalAddress: srv.address, namespace: srv.namespace, taskQueue, engineUrl: sim.url, token: BENCH_TOKEN, bundlePath });
  const connection = await Connection.connect({ address: srv.address });
  try {
    await worker.ready;
    const lbaas = new LbaasClient(new Client({ connection, namespace: srv.namespace }), taskQueue);
    const run = randomUUID().slice(0, 6);
    const rows: PoolRow[] = [];
    for (const n of sizes) {
      const row = await measure(lbaas, sim.admin, n, run, log);
      rows.push(row);
      process.stdout.write(`${JSON.stringify(row)}\n`);
    }
    const info = { command: `npm run bench -- --pool --services ${sizes.join(',')}${seed !== 42 ? ` --seed ${seed}` : ''}`, revision: gitRevision(), date: utcMinute(new Date()), load: { start: loadStart, end: os.loadavg() } };
    const section = poolSection(rows, info);
    process.stdout.write(`${section}\n`);
    if (!argv.includes('--no-write')) process.stdout.write(`wrote ${publish({ name: 'pools', doc: 'docs/benchmarks.md', results: { ...info, rows }, section }).join(', ')}\n`);
    const big = rows.at(-1) as PoolRow;
    process.stdout.write(`summary: pool_fanout_overhead_ms=${big.fanoutAddMs - big.directMs} services=${big.services}\n`);
  } finally {
    await connection.close();
    await worker.stop();
    await sim.stop();
    await srv.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}
