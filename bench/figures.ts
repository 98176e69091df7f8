/**
 * The numbers of a benchmark run: the targets and the summary line, and per mode the figures every report is
 * rendered from (report-text.ts for stdout, report-md.ts for the tables of docs/benchmarks.md, report-svg.ts for its
 * chart).
 */
import type { CoreRun, Mode, ModeName } from './core';
import type { ThroughputResult } from './throughput';
import type { BudgetResult } from './budget';
import type { FleetPhaseFigures, FleetResult } from './fleet';
import { realistic429Share, REALISTIC_429_TARGET, type RealisticRun } from './realistic';
import { int, mean, median, quantile, ratio, sum } from './util';
import { isDefault, type WorkerSettings } from './defaults';

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryBytes: number;
  node: string;
  os: string;
  temporalCli: string;
  /**
   * The Temporal server the run measured (dev/temporal-server.ts, which startDevServer runs), absent in runs saved
   * before it was recorded: those ran it too from 790a425 on, though their machine line names only the CLI.
   */
  temporalServer?: string;
  /** The code measured: commit, and product files with uncommitted changes in the build. */
  revision: string;
  uncommitted: string[];
  loadAvgStart: number[];
  loadAvgEnd: number[];
}

export interface BenchResult {
  quick: boolean;
  seed: number;
  reps: number;
  startedAt: Date;
  durationMs: number;
  machine: Machine;
  modes: readonly Mode[];
  core: CoreRun[];
  throughput: ThroughputResult;
  /** The controller fleet run (--fleet N): apply, no-op full resync and delete through controllers. */
  fleet?: FleetResult;
  /** The Engine budget run: goodput of a fleet under a rate-limited simulator. */
  budget?: BudgetResult & { /** Set when the budget run was measured apart (its command), and merged into this report. */ source?: string };
  /** The core workload on the ideal and the realistic simulator profile (realistic.ts); absent in older saved runs. */
  realistic?: RealisticRun[];
  /**
   * The settings of the workers behind the product's figures: the core workload's product mode (and the throughput
   * run's worker, started alike) and the controller fleet's. Absent in runs saved before it was recorded.
   */
  workers?: { core: WorkerSettings; fleet: WorkerSettings };
}

/**
 * The project's performance targets (convergence and request economy of one service, then fleet scale and Engine
 * budgets); lower is better except for the fleet's services per minute and budget goodput.
 */
export const TARGETS = {
  convergenceVsBound: 1.1,
  convergenceVsWaves: 0.6,
  requestsVsWaves: 0.6,
  noopWrites: 0,
  coreRequests: 170,
  historyEventsPerLb: 80,
  readinessGetsPerObject: 2,
  fleetServicesPerMin: 250,
  fleetPeakRssMib: 1024,
  fleetNoopResyncS: 60,
  budgetGoodput: 0.9,
} as const;

export interface Target {
  name: string;
  key: string;
  measured: number;
  target: number;
  /** Whether more is better (services per minute, goodput); less is better for the others. */
  higher: boolean;
  met: boolean;
  text: string;
}

export interface Summary {
  convergenceVsBound: number;
  /** The same service on one load balancer (mode heartbeat-1lb), and both variants without a budget; NaN when not run. */
  convergenceVsBound1Lb: number;
  convergenceVsBoundNoBudget: number;
  convergenceVsBound1LbNoBudget: number;
  convergenceVsWaves: number;
  requestsVsWaves: number;
  noopWrites: number;
  coreRequests: number;
  historyEventsPerLb: number;
  readinessGetsPerObject: number;
  fleetServicesPerMin: number;
  fleetPeakRssMib: number;
  fleetNoopResyncS: number;
  /** The fleet worker's peak RSS over the whole run (apply, resync, delete), MiB; NaN when not measured. */
  fleetRunPeakRssMib: number;
  /** Whether the figures come from workers at the settings of `lbaas worker` without environment. */
  defaults: boolean;
  /** Share of the Engine budget a rate-limited fleet used for answered requests; NaN when not measured. */
  budgetGoodput: number;
  targets: Target[];
  line: string;
}

export const runsOf = (r: BenchResult, mode: ModeName) => r.core.filter((c) => c.mode === mode).sort((a, b) => a.rep - b.rep);

/** Per repetition, `f(mode run) / f(other mode run)`, paired by repetition. */
export function paired(r: BenchResult, a: ModeName, b: ModeName, f: (c: CoreRun) => number): number[] {
  const bs = new Map(runsOf(r, b).map((c) => [c.rep, c]));
  return runsOf(r, a).flatMap((c) => {
    const other = bs.get(c.rep);
    return other ? [f(c) / f(other)] : [];
  });
}

export const boundRatio = (c: CoreRun) => c.apply.wallMs / c.serviceBoundMs;

export function summarize(r: BenchResult): Summary {
  const product = runsOf(r, 'heartbeat');
  const convergenceVsBound = median(product.map(boundRatio));
  const vsBound = (mode: ModeName) => {
    const runs = runsOf(r, mode);
    return runs.length ? median(runs.map(boundRatio)) : NaN;
  };
  const [convergenceVsBound1Lb, convergenceVsBoundNoBudget, convergenceVsBound1LbNoBudget] = [vsBound('heartbeat-1lb'), vsBound('no-budget'), vsBound('no-budget-1lb')];
  const convergenceVsWaves = median(paired(r, 'heartbeat', 'waves', (c) => c.apply.wallMs));
  const requestsVsWaves = median(paired(r, 'heartbeat', 'waves', (c) => c.apply.requests));
  const noopWrites = r.throughput.noop.mutations + (r.fleet?.noop.mutations ?? 0) + sum(product.map((c) => c.noop.mutations));
  const coreRequests = median(product.map((c) => c.apply.requests));
  const historyEventsPerLb = median(product.flatMap((c) => Object.values(c.apply.events?.perLoadBalancer ?? {})));
  const readinessGetsPerObject = median(product.flatMap((c) => c.apply.pollsPerObject ?? []));
  // The fleet figures come from the controller fleet run (--fleet) when there was one, else from the throughput run.
  const fleetServicesPerMin = r.fleet?.servicesPerMinute ?? r.throughput.servicesPerMinute;
  const fleetPeakRssMib = (r.fleet?.workerPeakRssBytes ?? r.throughput.workerPeakRssBytes) / 2 ** 20;
  const fleetNoopResyncS = (r.fleet?.noop.wallMs ?? r.throughput.noop.wallMs) / 1000;
  const fleetRunPeakRssMib = (r.fleet?.workerRunPeakRssBytes ?? NaN) / 2 ** 20;
  const defaults = r.workers !== undefined && isDefault(r.workers.core) && (r.fleet === undefined || isDefault(r.workers.fleet));
  const budgetGoodput = r.budget?.goodput ?? NaN;
  const t = (name: string, key: string, measured: number, target: number, digits = 2, higher = false): Target => {
    if (!Number.isFinite(measured)) return { name, key, measured, target, higher, met: false, text: 'not measured in this run' };
    const met = higher ? measured >= target : measured <= target;
    const off = higher ? `${((1 - measured / target) * 100).toFixed(0)} % under` : `${((measured / target - 1) * 100).toFixed(0)} % over`;
    const by = target === 0 ? `${measured} instead of 0` : `${off} the target (${measured.toFixed(digits)} vs ${target})`;
    return { name, key, measured, target, higher, met, text: met ? 'met' : `missed: ${by}` };
  };
  const targets = [
    t('convergence time / lower bound', 'convergence_vs_bound', convergenceVsBound, TARGETS.convergenceVsBound),
    t('convergence time / lower bound, the service on one load balancer', 'convergence_vs_bound_1lb', convergenceVsBound1Lb, TARGETS.convergenceVsBound),
    t('convergence time / waves baseline', 'convergence_vs_waves', convergenceVsWaves, TARGETS.convergenceVsWaves),
    t('Engine requests / waves baseline', 'requests_vs_waves', requestsVsWaves, TARGETS.requestsVsWaves),
    t('writes on a no-op resync', 'noop_writes', noopWrites, TARGETS.noopWrites, 0),
    t('Engine requests, core workload from empty', 'core_requests', coreRequests, TARGETS.coreRequests, 0),
    t('history events per reconcileLoadBalancer, core shape from empty', 'history_events_per_lb', historyEventsPerLb, TARGETS.historyEventsPerLb, 0),
    t('readiness GETs per created object (median)', 'readiness_gets_per_object', readinessGetsPerObject, TARGETS.readinessGetsPerObject, 0),
    t('services converged per minute, fleet on one worker', 'fleet_services_per_min', fleetServicesPerMin, TARGETS.fleetServicesPerMin, 0, true),
    t('worker peak RSS during the fleet apply (MiB)', 'fleet_peak_rss_mib', fleetPeakRssMib, TARGETS.fleetPeakRssMib, 0),
    t('no-op full resync of the fleet (s)', 'fleet_noop_resync_s', fleetNoopResyncS, TARGETS.fleetNoopResyncS, 1),
    t('goodput under a rate-limited Engine budget', 'budget_goodput', budgetGoodput, TARGETS.budgetGoodput, 2, true),
  ];
  const share = realistic429Share(r.realistic ?? []);
  if (share !== null) targets.push(t('requests answered 429, realistic Engine', 'realistic_429_share', share, REALISTIC_429_TARGET, 3));
  const line =
    `summary: convergence_vs_bound=${ratio(convergenceVsBound)}` +
    // The same service on one load balancer, and both beside the same workload without an Engine budget.
    ` convergence_vs_bound_1lb=${ratio(convergenceVsBound1Lb)} convergence_vs_bound_no_budget=${ratio(convergenceVsBoundNoBudget)} convergence_vs_bound_1lb_no_budget=${ratio(convergenceVsBound1LbNoBudget)}` +
    ` convergence_vs_waves=${ratio(convergenceVsWaves)} requests_vs_waves=${ratio(requestsVsWaves)} noop_writes=${noopWrites}` +
    ` core_requests=${int(coreRequests)} history_events_per_lb=${int(historyEventsPerLb)} readiness_gets_per_object=${ratio(readinessGetsPerObject, 1)}` +
    ` fleet_services_per_min=${int(fleetServicesPerMin)} fleet_peak_rss_mib=${int(fleetPeakRssMib)} fleet_noop_resync_s=${ratio(fleetNoopResyncS, 1)} budget_goodput=${ratio(budgetGoodput)}` +
    `${share === null ? '' : ` realistic_429_share=${share.toFixed(3)}`} fleet_run_peak_rss_mib=${int(fleetRunPeakRssMib)} defaults=${defaults ? 'yes' : 'no'}`;
  return {
    convergenceVsBound,
    convergenceVsBound1Lb,
    convergenceVsBoundNoBudget,
    convergenceVsBound1LbNoBudget,
    convergenceVsWaves,
    requestsVsWaves,
    noopWrites,
    coreRequests,
    historyEventsPerLb,
    readinessGetsPerObject,
    fleetServicesPerMin,
    fleetPeakRssMib,
    fleetNoopResyncS,
    fleetRunPeakRssMib,
    defaults,
    budgetGoodput,
    targets,
    line,
  };
}

export interface ModeFigures {
  mode: Mode;
  runs: CoreRun[];
  wall: number[];
  bound: number[];
  boundRatio: number[];
  requests: number[];
  writes: number[];
  noopWall: number[];
  noopRequests: number[];
  noopWrites: number[];
  /** Per load balancer run: history events of the from-empty and the no-op reconcileLoadBalancer. */
  eventsApply: number[];
  eventsNoop: number[];
  serviceEventsApply: number[];
  /** Per load balancer: time between the Engine's last deploy and the reconciliation noticing and finishing. */
  tailLag: number[];
  /** Per load balancer: how much later than the chain of deploy delays the Engine finished deploying. */
  chainSlack: number[];
  /** Per load balancer: from the start to the first create. */
  startup: number[];
  /** Per object with a parent: from the parent's deploy to the child's create. */
  reactions: number[];
  /** The reactions split: readiness-poll overshoot, and from that GET to the child's create (bench/bound.ts). */
  notices: number[];
  handoffs: number[];
  latency: number[];
  /** Per run: readiness GETs (realizeObjects' and settleObjects' polls). */
  readinessGets: number[];
  /** Per load balancer run: dependency levels of its longest chain. */
  levels: number[];
}

export function modeFigures(r: BenchResult, mode: Mode): ModeFigures {
  const runs = runsOf(r, mode.name);
  const lbs = runs.flatMap((c) => c.loadBalancers);
  const ev = (c: CoreRun, phase: 'apply' | 'noop') => Object.values(c[phase].events?.perLoadBalancer ?? {});
  return {
    mode,
    runs,
    wall: runs.map((c) => c.apply.wallMs),
    bound: runs.map((c) => c.serviceBoundMs),
    boundRatio: runs.map(boundRatio),
    requests: runs.map((c) => c.apply.requests),
    writes: runs.map((c) => c.apply.mutations),
    noopWall: runs.map((c) => c.noop.wallMs),
    noopRequests: runs.map((c) => c.noop.requests),
    noopWrites: runs.map((c) => c.noop.mutations),
    eventsApply: runs.flatMap((c) => ev(c, 'apply')),
    eventsNoop: runs.flatMap((c) => ev(c, 'noop')),
    serviceEventsApply: runs.flatMap((c) => (c.apply.events ? [c.apply.events.service] : [])),
    tailLag: lbs.map((l) => l.convergedMs - l.engineDoneMs),
    chainSlack: lbs.map((l) => l.engineDoneMs - l.deployChainMs),
    startup: lbs.map((l) => l.firstCreateMs),
    reactions: lbs.flatMap((l) => l.reactionsMs),
    notices: lbs.flatMap((l) => l.noticesMs ?? []),
    handoffs: lbs.flatMap((l) => l.handoffsMs ?? []),
    latency: runs.map((c) => c.apply.latencyMedianMs),
    readinessGets: runs.map((c) => c.apply.readinessGets ?? 0),
    levels: lbs.map((l) => l.levels),
  };
}

/** Mean of a per-key count over runs, sorted by count. */
export function meanCounts(maps: Record<string, number>[]): [string, number][] {
  const total = new Map<string, number>();
  for (const m of maps) for (const [k, v] of Object.entries(m)) total.set(k, (total.get(k) ?? 0) + v);
  return [...total.entries()].map(([k, v]) => [k, v / Math.max(1, maps.length)] as [string, number]).sort((a, b) => b[1] - a[1]);
}

/** Mean per run of the requests a mode made for one purpose (Temporal modes: activity type). */
export const perPurpose = (f: ModeFigures, purpose: string) => mean(f.runs.map((c) => c.apply.byPurpose[purpose] ?? 0));

/** Mean per run of the requests on one route, e.g. `POST /api/LBaaS/v1/backend.json`. */
export const perRoute = (f: ModeFigures, route: string, phase: 'apply' | 'noop' = 'apply') => sum(f.runs.map((c) => c[phase].byRoute[route] ?? 0)) / Math.max(1, f.runs.length);

/** Every route any run of these modes used in a phase, sorted. */
export const routesOf = (figs: readonly ModeFigures[], phase: 'apply' | 'noop') => [...new Set(figs.flatMap((f) => f.runs.flatMap((c) => Object.keys(c[phase].byRoute))))].sort();

/** The first gaps between readiness polls we report; later ones sit at the backoff ceiling. */
const REPORTED_POLL_GAPS = 6;

/** Median over runs of the n-th readiness poll gap, in ms. */
export function pollGapsOf(f: ModeFigures): number[] {
  const out: number[] = [];
  for (let i = 0; i < REPORTED_POLL_GAPS; i++) {
    const gaps = f.runs.flatMap((c) => {
      const g = c.apply.pollGaps[i];
      return g && g.count > 0 ? [g.medianMs] : [];
    });
    if (gaps.length === 0) break;
    out.push(median(gaps));
  }
  return out;
}

/**
 * Where the product's time above its lower bound goes, per load balancer (medians, ms): the start before the first
 * create, the reactions along the longest chain (median reaction x median levels), and the tail after the last
 * deploy. `overhead` is the median service time minus the median bound.
 */
export function overheadParts(f: ModeFigures): { overhead: number; start: number; reactions: number; levels: number; reaction: number; tail: number } {
  const reaction = quantile(f.reactions, 0.5);
  const levels = median(f.levels);
  return { overhead: median(f.wall) - median(f.bound), start: median(f.startup), reactions: reaction * levels, levels, reaction, tail: median(f.tailLag) };
}

/** The controller fleet's phases in run order; the node change only in runs that had one. */
export function fleetPhases(f: FleetResult): [string, FleetPhaseFigures][] {
  return [['apply', f.apply], ['no-op full resync', f.noop], ...(f.nodeChange ? [['node change', f.nodeChange] as [string, FleetPhaseFigures]] : []), ['delete', f.remove]];
}
