/**
 * The controller fleet (fleet.ts) and the Engine budget run (budget.ts) in docs/benchmarks.md and on stdout: what
 * each phase cost in wall time, Engine requests and writes, CPU per process, and the worker's memory.
 */
import type { BenchResult } from './figures';
import type { FleetPhaseFigures } from './fleet';
import { mib, secs } from './util';
import { isDefault } from './defaults';

const s = (ms: number) => `${secs(ms, 1)} s`;
const per = (n: number, of: number) => `${n} (${(n / of).toFixed(1)})`;
const cpu = (p: FleetPhaseFigures, key: string) => (p.cpuSeconds[key] ?? NaN).toFixed(1);

/** The fleet's phases in run order; the node change only in runs that had one. */
const fleetPhases = (f: NonNullable<BenchResult['fleet']>): [string, FleetPhaseFigures][] => [
  ['apply', f.apply],
  ['no-op full resync', f.noop],
  ...(f.nodeChange ? [['node change (a node joins the pool)', f.nodeChange] as [string, FleetPhaseFigures]] : []),
  ['delete', f.remove],
];

export function fleetMarkdown(r: BenchResult): string {
  const L: string[] = [];
  const f = r.fleet;
  if (f) {
    L.push(`## Controller fleet: apply, no-op full resync, ${f.nodeChange ? 'node change, ' : ''}delete`);
    L.push('');
    L.push(
      `${f.services} services x ${f.loadBalancers} load balancers (${f.objects} Engine objects, deploys ${f.deployMs.min}-${f.deployMs.max} ms) ${f.nodeChange ? ' on one server pool of three nodes' : ''} applied at once to one fresh worker${f.workerNodeHeapMiB ? ` (node heap limit \`--max-old-space-size=${f.workerNodeHeapMiB}\`${r.workers && isDefault(r.workers.fleet) ? ', Engine budget and workflow cache: everything as `lbaas worker` without environment' : ''})` : ''} through their controllers (update-with-start, as \`lbaas apply\`), each waited for until converged; then one run of the Schedule's workflow (fullResync, ${f.resyncSignalled} controllers signalled) until every controller finished a pass after it; ${f.nodeChange ? `then a fourth node added to the pool, until the pool's waitConverged said every service converged on it; ` : ''}then every service deleted until every controller closed (${f.leftAfterDelete} tagged objects left).`,
    );
    L.push('');
    const procs = Object.keys(f.apply.cpuSeconds);
    const row = (name: string, p: FleetPhaseFigures) => [name, s(p.wallMs), per(p.requests, f.services), String(p.mutations), String(p.throttled), ...procs.map((k) => cpu(p, k)), p.machineBusySeconds.toFixed(1)];
    L.push(`| phase | wall | Engine requests (per service) | writes | 429 | ${procs.map((k) => `CPU s ${k}`).join(' | ')} | CPU s machine |`);
    L.push(`|${Array.from({ length: 6 + procs.length }, () => '---').join('|')}|`);
    for (const [name, p] of fleetPhases(f)) L.push(`| ${row(name, p).join(' | ')} |`);
    L.push('');
    L.push(
      `Services converged per minute: ${f.servicesPerMinute.toFixed(0)} (per service from its apply: median ${s(f.serviceP50Ms)}, p95 ${s(f.serviceP95Ms)}). Worker peak RSS during the apply ${mib(f.workerPeakRssBytes)}, over the whole run, apply to delete ${mib(f.workerRunPeakRssBytes ?? f.workerPeakRssBytes)} (idle ${mib(f.workerIdleRssBytes)}). History events: one controller after apply, resync and delete ${f.controllerEvents}; the fullResync run ${f.fullResyncEvents}. "machine" counts every process on the machine, other people's work included: when it is near ${r.machine.cpus} CPU seconds per second of wall time, the wall times above measure the machine's load as much as the orchestrator.`,
    );
    L.push('');
    const own = f.apply.cpuSeconds;
    const ours = (own.temporal ?? 0) + (own.worker ?? 0) + (own.simulator ?? 0);
    L.push(
      `What bounds the wall times, from these numbers: the apply cost the orchestrator's processes ${ours.toFixed(0)} CPU s (Temporal ${(own.temporal ?? NaN).toFixed(0)}, worker ${(own.worker ?? NaN).toFixed(0)}), ${(ours / f.services).toFixed(2)} per service, while the machine was busy ${f.apply.machineBusySeconds.toFixed(0)} of ${(r.machine.cpus * f.apply.wallMs / 1000).toFixed(0)} CPU seconds: on ${r.machine.cpus} otherwise idle CPUs that bounds the apply at about ${((r.machine.cpus * 60) / (ours / f.services)).toFixed(0)} services a minute; the no-op resync cost ${(((f.noop.cpuSeconds.temporal ?? 0) + (f.noop.cpuSeconds.worker ?? 0)) / f.services).toFixed(2)} CPU s per service (a signalled controller, one reconcileService and one observeService activity per service when nothing changed). docs/scaling.md carries these per-service costs to 10,000 and 100,000 services.`,
    );
    L.push('');
  }
  const b = r.budget;
  if (b) {
    L.push('## Under an Engine request budget');
    L.push('');
    L.push(
      `${b.services} services x 2 load balancers applied at once${b.source ? ` (measured apart: \`${b.source}\`)` : ''} under ${b.requestsPerSecond} requests/s, the worker's budget and the simulator's per-token limit alike: ${s(b.wallMs)}, ${b.requests} requests, ${b.throttled} answered 429. Goodput (answered requests per second over the budget, from the first start to the last converged service): ${(b.goodput * 100).toFixed(0)} %; ${(b.throttledShare * 100).toFixed(2)} % of requests answered 429.`,
    );
    L.push('');
  }
  return L.join('\n');
}

/** The same on stdout, one line per phase. */
export function fleetText(r: BenchResult): string[] {
  const f = r.fleet;
  const out: string[] = [];
  if (f) {
    out.push(`controller fleet: ${f.services} services x ${f.loadBalancers} load balancers, ${f.servicesPerMinute.toFixed(0)} services/min, worker peak RSS ${mib(f.workerPeakRssBytes)}`);
    for (const [name, p] of fleetPhases(f)) {
      out.push(`  ${name}: ${s(p.wallMs)}, ${per(p.requests, f.services)} Engine requests, ${p.mutations} writes; CPU s ${Object.entries(p.cpuSeconds).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')}`);
    }
  }
  if (r.budget) out.push(`Engine budget ${r.budget.requestsPerSecond}/s: goodput ${(r.budget.goodput * 100).toFixed(0)} %, ${(r.budget.throttledShare * 100).toFixed(2)} % answered 429`);
  return out;
}
