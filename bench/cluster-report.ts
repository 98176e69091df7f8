/**
 * The report of `npm run bench:cluster` (bench/cluster.ts): one run's figures, the markdown section they make, and
 * where that section lives in docs/benchmarks.md (between markers, so that `npm run bench`, which rewrites the file,
 * keeps it).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { FLEET_DEPLOY_MS } from './phase';

export const SECTION_START = '<!-- bench:cluster start (written by `npm run bench:cluster`; kept by `npm run bench`) -->';
export const SECTION_END = '<!-- bench:cluster end -->';

/** One measured run: one Temporal, one worker count. */
export interface RunResult {
  backend: 'dev server' | 'cluster';
  workers: number;
  services: number;
  wallMs: number;
  servicesPerMinute: number;
  temporalCpuS: number;
  workerCpuS: number;
  simulatorCpuS: number;
  machineBusyS: number;
  /** Busy fraction of the machine's CPUs during the run. */
  machineBusy: number;
  dbBytesPerService: number;
  serviceP50Ms: number;
  serviceP95Ms: number;
}

export function markdownSection(results: RunResult[], meta: { services: number; seed: number; cpus: number; loadStart: number[]; loadEnd: number[]; revision: string }): string {
  const f = (x: number, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  const L: string[] = [SECTION_START, '', '## Dev server vs. the production-shaped cluster', ''];
  L.push(
    `\`npm run bench:cluster\` at ${meta.revision}: the throughput fleet (${meta.services} services x 2 load balancers, 28 objects each, deploys ${FLEET_DEPLOY_MS.min}-${FLEET_DEPLOY_MS.max} ms, seed ${meta.seed}) applied at once, on the Temporal dev server (one process, SQLite, 1 history shard) and on the local cluster of \`npm run dev:cluster\` (PostgreSQL; frontend, 2 history hosts, matching and worker as separate processes; 4 shards), with 1, 2 and 4 worker processes sharing the task queue. Machine: ${meta.cpus} CPUs, load average ${meta.loadStart.map((x) => x.toFixed(1)).join(' ')} at the start and ${meta.loadEnd.map((x) => x.toFixed(1)).join(' ')} at the end (${(meta.loadStart[0] ?? 0) >= 1.5 ? 'other work shared it' : 'a quiet machine at the start: the load during the run is the benchmark\'s own processes'}).`,
    '',
    '| Temporal | workers | services/min | service p50 / p95 | Temporal CPU-s | per service | workers CPU-s | simulator CPU-s | machine busy | DB growth per service |',
    '|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const r of results) {
    L.push(
      `| ${r.backend} | ${r.workers} | ${f(r.servicesPerMinute)} | ${f(r.serviceP50Ms / 1000, 1)} s / ${f(r.serviceP95Ms / 1000, 1)} s | ${f(r.temporalCpuS, 1)} | ${f((r.temporalCpuS / r.services) * 1000)} ms | ${f(r.workerCpuS, 1)} | ${f(r.simulatorCpuS, 1)} | ${f(r.machineBusy * 100)} % | ${f(r.dbBytesPerService / 1024, 1)} KiB |`,
    );
  }
  L.push('', ...findings(results));
  L.push('', 'Temporal CPU is the sum over the server processes from /proc (for the cluster: the five server processes and PostgreSQL with all its backends). DB growth is the SQLite file (with its WAL) of the dev server, and pg_database_size of `temporal` plus `temporal_visibility` for the cluster, over the measured apply (closed workflows are kept for the namespace retention, 3 days here, so this is what a fleet pass adds until retention removes it).', '', SECTION_END);
  return L.join('\n');
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? (s[(s.length - 1) / 2] as number) : ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2;
};

/**
 * What limits throughput, said from the runs: how busy the machine was, what more workers changed, how Temporal's CPU
 * compares with the workers', and how the two Temporals compare per service. Each sentence is chosen by the numbers.
 */
export function findings(results: RunResult[]): string[] {
  const out: string[] = ['What limits scaling here, from these runs:', ''];
  const busy = Math.min(...results.map((r) => r.machineBusy));
  out.push(
    busy >= 0.95
      ? `- The machine's CPUs were at least ${(busy * 100).toFixed(0)} % busy in every run: throughput is bounded by CPU, shared with whatever else ran (see the load average).`
      : `- The machine was not saturated in every run (least busy ${(busy * 100).toFixed(0)} %).`,
  );
  for (const backend of ['dev server', 'cluster'] as const) {
    const runs = results.filter((r) => r.backend === backend).sort((a, b) => a.workers - b.workers);
    if (runs.length < 2) continue;
    const first = runs[0] as RunResult;
    const last = runs[runs.length - 1] as RunResult;
    const gain = last.servicesPerMinute / first.servicesPerMinute;
    const ratio = median(runs.map((r) => r.temporalCpuS / r.workerCpuS));
    out.push(
      `- ${backend}: ${last.workers} workers converged ${gain.toFixed(2)}x the services per minute of ${first.workers}${gain < 1.25 ? ' (more workers add little: they are not what is short)' : ''}; Temporal used ${ratio.toFixed(1)}x the CPU of the workers (median over runs)${ratio > 1.5 ? ', so the server is where CPU goes first' : ''}.`,
    );
  }
  const dev = results.filter((r) => r.backend === 'dev server');
  const cluster = results.filter((r) => r.backend === 'cluster');
  if (dev.length > 0 && cluster.length > 0) {
    const rate = median(cluster.map((r) => r.servicesPerMinute)) / median(dev.map((r) => r.servicesPerMinute));
    const perService = (rs: RunResult[]) => median(rs.map((r) => (r.temporalCpuS / r.services) * 1000));
    out.push(
      `- The cluster converged ${rate.toFixed(1)}x as many services per minute as the dev server (medians) at ${perService(cluster).toFixed(0)} ms of Temporal CPU per service against ${perService(dev).toFixed(0)} ms.` +
        (busy >= 0.95 && rate > 1.5
          ? ' On a saturated machine the kernel shares CPU per process: the dev server is one process, the cluster six (five servers and PostgreSQL) with its backends, so the cluster simply gets more of the contended CPUs. The CPU per service, not the rate, is what carries over to a machine with cores to spare.'
          : ''),
    );
  }
  return out;
}

/** `fresh` (a newly rendered docs/benchmarks.md) with the cluster section of `previous` appended, if it had one. */
export function withClusterSection(fresh: string, previous: string): string {
  const a = previous.indexOf(SECTION_START);
  const b = previous.indexOf(SECTION_END);
  return a >= 0 && b > a ? `${fresh.trimEnd()}\n\n${previous.slice(a, b + SECTION_END.length)}\n` : fresh;
}

/** `text` without its marked cluster section (and the blank lines around it). */
export function withoutClusterSection(text: string): string {
  const a = text.indexOf(SECTION_START);
  const b = text.indexOf(SECTION_END);
  return a >= 0 && b > a ? `${text.slice(0, a).trimEnd()}\n${text.slice(b + SECTION_END.length).replace(/^\n+/, '\n')}` : text;
}

/**
 * What `npm run bench` writes: its fresh report, the cluster section kept from `previous`, then `pools` (the pools
 * section kept from `previous`), with the cluster section once even when an older file had it inside the pools
 * markers (which once doubled it).
 */
export function keepSections(fresh: string, previous: string, pools: string): string {
  const kept = withoutClusterSection(pools).trim();
  return `${withClusterSection(fresh, previous).trimEnd()}\n${kept ? `\n${kept}\n` : ''}`;
}

/** `text` with its marked cluster section replaced by `section`, or with `section` appended; the rest unchanged. */
export function replaceSection(text: string, section: string): string {
  const a = text.indexOf(SECTION_START);
  const b = text.indexOf(SECTION_END);
  return a >= 0 && b > a ? `${text.slice(0, a)}${section}${text.slice(b + SECTION_END.length)}` : `${text.trimEnd()}\n\n${section}\n`;
}

export function writeSection(file: string, section: string): void {
  writeFileSync(file, replaceSection(existsSync(file) ? readFileSync(file, 'utf8') : '', section));
}

