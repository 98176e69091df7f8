/**
 * The report of the cluster lifecycle run (bench/cluster-lifecycle.ts): its phase table, its summary line, and the
 * `bench:lifecycle` section of docs/scaling.md: those tables with the 10,000 and 100,000-service projections derived
 * from the measured per-service costs (each row names its formula).
 */
import { FLEET_DEPLOY_MS } from './phase';
import { factTable, loadText, mdTable } from './publish';
/** The Engine budget of one token the projections assume (docs/scaling.md, "The Engine: requests per token"). */
const TOKEN_REQUESTS_PER_SECOND = 20;

export interface LifecyclePhase {
  name: string;
  wallMs: number;
  requests: number;
  writes: number;
  /** CPU seconds over the phase: Temporal's processes with their children, all workers together, the whole machine. */
  temporalCpuS: number;
  workerCpuS: number;
  machineBusyS: number;
  /** Each worker's highest sampled RSS in the phase. */
  workerPeakRssBytes: number[];
  /** History events the phase added per service (mean over the sampled services' runs). */
  historyEventsPerService: number;
}

export interface LifecycleResult {
  backend: 'dev' | 'cluster';
  services: number;
  workers: number;
  historySample: number;
  phases: LifecyclePhase[];
  /** Each worker's VmHWM at the end: its peak over the whole run. */
  workerRunPeakRssBytes: number[];
  revision: string;
  loadStart: number[];
  loadEnd: number[];
  cpus: number;
}

const f = (x: number, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const mib = (b: number) => b / 2 ** 20;
const phaseOf = (r: LifecycleResult, name: string) => r.phases.find((p) => p.name === name);

export function command(r: Pick<LifecycleResult, 'services' | 'workers' | 'backend'>): string {
  return `npm run bench:cluster -- --lifecycle --services ${r.services} --workers ${r.workers}${r.backend === 'dev' ? ' --only dev' : ''}`;
}

/** The summary line's figures: the apply's rate, all phases' Temporal + worker CPU per service, the highest worker peak. */
export function summaryLine(r: LifecycleResult): string {
  const apply = phaseOf(r, 'apply');
  const cpu = r.phases.reduce((s, p) => s + p.temporalCpuS + p.workerCpuS, 0) / r.services;
  return (
    `summary: cluster_services=${r.services} cluster_workers=${r.workers} cluster_services_per_min=${f(apply ? (r.services / apply.wallMs) * 60_000 : NaN)}` +
    ` cluster_cpu_s_per_service=${f(cpu, 3)} cluster_worker_peak_rss_mib=${f(mib(Math.max(...r.workerRunPeakRssBytes)))}`
  );
}

function phaseTable(r: LifecycleResult): string {
  const n = r.services;
  return mdTable(
    ['phase', 'wall', 'services/min', 'Engine requests per service (writes)', 'CPU-s per service: Temporal / workers', 'worker peak RSS (MiB, each)', 'history events per service'],
    r.phases.map((p) => [p.name, `${f(p.wallMs / 1000, 1)} s`, f((n / p.wallMs) * 60_000), `${f(p.requests / n, 1)} (${f(p.writes / n, 1)})`, `${f(p.temporalCpuS / n, 3)} / ${f(p.workerCpuS / n, 3)}`, p.workerPeakRssBytes.map((b) => f(mib(b))).join(', '), f(p.historyEventsPerService)]),
  );
}

/** The projections: each per-service cost times N, with its formula so it can be redone. */
function projections(r: LifecycleResult): string {
  const per = (name: string, k: keyof Pick<LifecyclePhase, 'requests' | 'temporalCpuS' | 'workerCpuS' | 'historyEventsPerService'>) => {
    const p = phaseOf(r, name);
    if (!p) return NaN;
    return k === 'historyEventsPerService' ? p[k] : p[k] / r.services;
  };
  const rows: [string, (n: number) => string][] = [];
  const req = { apply: per('apply', 'requests'), noop: per('no-op full resync', 'requests'), pool: per('pool change', 'requests') };
  const tc = { apply: per('apply', 'temporalCpuS'), noop: per('no-op full resync', 'temporalCpuS'), pool: per('pool change', 'temporalCpuS') };
  const wc = { apply: per('apply', 'workerCpuS'), noop: per('no-op full resync', 'workerCpuS'), pool: per('pool change', 'workerCpuS') };
  const events = r.phases.reduce((s, p) => s + p.historyEventsPerService, 0);
  const apply = phaseOf(r, 'apply');
  const rate = apply ? (r.services / apply.wallMs) * 60_000 : NaN;
  rows.push([`Engine requests/s, no-op resync every hour (${f(req.noop, 1)} x N / 3600 s)`, (n) => f((req.noop * n) / 3600)]);
  rows.push([`rollout from empty: ${f(req.apply, 1)} x N requests, at ${TOKEN_REQUESTS_PER_SECOND} requests/s per token`, (n) => `${f((req.apply * n) / 1e6, 2)} M: ${f((req.apply * n) / TOKEN_REQUESTS_PER_SECOND / 3600, 1)} h`]);
  rows.push([`a pool change fanned out to every service: ${f(req.pool, 1)} x N requests`, (n) => `${f((req.pool * n) / 1e3)} k: ${f((req.pool * n) / TOKEN_REQUESTS_PER_SECOND / 60)} min at ${TOKEN_REQUESTS_PER_SECOND}/s`]);
  rows.push([`Temporal CPUs, no-op resync every hour (${f(tc.noop, 3)} s x N / 3600 s)`, (n) => f((tc.noop * n) / 3600, 2)]);
  rows.push([`Temporal CPU-s, rollout from empty (${f(tc.apply, 3)} s x N)`, (n) => f(tc.apply * n)]);
  rows.push([`Temporal CPU-s, pool change (${f(tc.pool, 3)} s x N)`, (n) => f(tc.pool * n)]);
  rows.push([`worker CPUs, no-op resync every hour (${f(wc.noop, 3)} s x N / 3600 s)`, (n) => f((wc.noop * n) / 3600, 2)]);
  rows.push([`worker CPU-s, rollout from empty (${f(wc.apply, 3)} s x N)`, (n) => f(wc.apply * n)]);
  rows.push([`rollout at this run's rate (${f(rate)} services/min), if neither the Engine budget nor Temporal bound it first`, (n) => `${f(n / rate / 60, 1)} h`]);
  rows.push([`history events written over the whole life (${f(events)} x N)`, (n) => `${f((events * n) / 1e6, 1)} M`]);
  return mdTable(['projected from the per-service costs', '10,000 services', '100,000 services'], rows.map(([what, at]) => [what, at(10_000), at(100_000)]));
}

/** The `bench:lifecycle` section: the run, its phases, each worker's peak, the projections, the summary line. */
export function lifecycleSection(r: LifecycleResult): string {
  const where = r.backend === 'cluster' ? 'the local cluster of `npm run dev:cluster`' : 'the Temporal dev server';
  const run = factTable([
    ['command', `\`${command(r)}\``],
    ['commit', r.revision],
    ['workload', `${r.services} services x 2 load balancers on one server pool of 3 nodes, deploys ${FLEET_DEPLOY_MS.min}-${FLEET_DEPLOY_MS.max} ms`],
    ['Temporal; workers', `${where}; ${r.workers} on one task queue`],
    ['machine', `${r.cpus} CPUs, load average ${loadText(r.loadStart, r.loadEnd)}`],
    ['history events sampled from', `${r.historySample} services`],
    ["each worker's peak RSS over the run (VmHWM)", r.workerRunPeakRssBytes.map((b) => `${f(mib(b))} MiB`).join(', ')],
  ]);
  return [run, phaseTable(r), projections(r), `\`${summaryLine(r)}\``].join('\n\n');
}

/** The text printed on stdout: the phase table and the projections, then (apart) the summary line. */
export function lifecycleText(r: LifecycleResult): { table: string; summary: string } {
  return { table: [`${command(r)} at ${r.revision}`, phaseTable(r), '', projections(r)].join('\n'), summary: summaryLine(r) };
}
