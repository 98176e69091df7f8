/**
 * The `bench:cluster` section of docs/benchmarks.md (`npm run bench:cluster`, bench/cluster.ts): the run, then one row
 * per Temporal and worker count. What the two Temporals are and what the figures mean is the hand-written text around
 * the section.
 */
import { FLEET_DEPLOY_MS } from './phase';
import { factTable, loadText, mdTable } from './publish';

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

export interface ClusterRunInfo {
  command: string;
  services: number;
  seed: number;
  cpus: number;
  loadStart: number[];
  loadEnd: number[];
  revision: string;
}

export function clusterSection(results: readonly RunResult[], meta: ClusterRunInfo): string {
  const f = (x: number, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  const run = factTable([
    ['command', `\`${meta.command}\``],
    ['commit', meta.revision],
    ['workload', `${meta.services} services x 2 load balancers, 28 objects each, deploys ${FLEET_DEPLOY_MS.min}-${FLEET_DEPLOY_MS.max} ms, seed ${meta.seed}`],
    ['machine', `${meta.cpus} CPUs`],
    ['load average', loadText(meta.loadStart, meta.loadEnd)],
  ]);
  const table = mdTable(
    ['Temporal', 'workers', 'services/min', 'service p50 / p95', 'Temporal CPU-s', 'per service', 'workers CPU-s', 'simulator CPU-s', 'machine busy', 'DB growth per service'],
    results.map((r) => [
      r.backend,
      r.workers,
      f(r.servicesPerMinute),
      `${f(r.serviceP50Ms / 1000, 1)} s / ${f(r.serviceP95Ms / 1000, 1)} s`,
      f(r.temporalCpuS, 1),
      `${f((r.temporalCpuS / r.services) * 1000)} ms`,
      f(r.workerCpuS, 1),
      f(r.simulatorCpuS, 1),
      `${f(r.machineBusy * 100)} %`,
      `${f(r.dbBytesPerService / 1024, 1)} KiB`,
    ]),
  );
  return `${run}\n\n${table}`;
}
