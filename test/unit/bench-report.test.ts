/**
 * The benchmark report from a small synthetic run: the summary line keeps its keys and computes its ratios, the
 * markdown states the run's numbers, and the sentences follow the numbers (the polling verdict turns round when the
 * measured times do).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keepSections, SECTION_END, SECTION_START } from '../../bench/cluster-report';
import { SUITE_TIME_MARK, withKeptSections } from '../../bench/kept-sections';
import { MODES, type CoreRun, type ModeName } from '../../bench/core';
import { WORKER_DEFAULTS } from '../../bench/defaults';
import { summarize, type BenchResult } from '../../bench/figures';
import { POOL_MARK } from '../../bench/pools';
import { markdown } from '../../bench/report-md';
import { svgChart } from '../../bench/report-svg';
import { textReport } from '../../bench/report-text';
import { porcelainPaths } from '../../bench/util';
import type { FleetPhase } from '../../bench/throughput';

function phase(wallMs: number, requests: number, mutations: number, byPurpose: Record<string, number>): CoreRun['apply'] {
  return { wallMs, requests, mutations, byRoute: { 'GET /x': requests }, byPurpose, latencyMedianMs: 2, pollGaps: [{ medianMs: 250, count: 4 }], pollsPerObject: [1, 2, 2, 3, 1], events: { service: 20, perLoadBalancer: { a: 60, b: 62 } } };
}

/** One repetition of a mode: converges in `wallMs` against a bound of 4 s, with 3 levels of 0.5 s reactions. */
function run(mode: ModeName, wallMs: number, requests: number): CoreRun {
  const lb = (name: string) => ({ loadBalancer: name, convergedMs: wallMs, boundMs: 4000, deployChainMs: 3900, levels: 3, engineDoneMs: wallMs - 300, firstCreateMs: 200, reactionsMs: [500, 500, 500] });
  return {
    mode,
    rep: 0,
    seed: 1,
    serviceUid: `u-${mode}`,
    apply: phase(wallMs, requests, 28, { awaitReady: requests / 2, retrieveState: requests / 2 }),
    noop: phase(1000, 31, 0, { retrieveState: 31 }),
    loadBalancers: MODES.find((m) => m.name === mode)?.loadBalancers === 1 ? [lb('a')] : [lb('a'), lb('b')],
    serviceBoundMs: 4000,
  };
}

const fleet = (wallMs: number, mutations: number): FleetPhase => ({ wallMs, requests: 600, mutations, serviceP50Ms: 900, serviceP95Ms: 1800, converged: 10, cpuSeconds: { worker: 3 }, machineBusySeconds: 10 });

function result(times: Partial<Record<ModeName, number>>): BenchResult {
  const modes = MODES.filter((m) => m.quick);
  return {
    quick: true,
    seed: 1,
    reps: 1,
    startedAt: new Date('2026-01-01T00:00:00Z'),
    durationMs: 60_000,
    machine: { cpus: 2, cpuModel: 'test', memoryBytes: 2 ** 30, node: 'v20', os: 'linux', temporalCli: '1.5.1', revision: 'abc', uncommitted: [], loadAvgStart: [1, 1, 1], loadAvgEnd: [1, 1, 1] },
    modes,
    core: modes.map((m) => run(m.name, times[m.name] ?? 5000, m.name === 'waves' ? 400 : 200)),
    throughput: { services: 10, loadBalancers: 2, objects: 280, deployMs: { min: 100, max: 300 }, apply: fleet(6000, 280), servicesPerMinute: 100, noop: fleet(3000, 0), workerPeakRssBytes: 2 ** 27, workerPeakRssAfterResyncBytes: 2 ** 27, workerIdleRssBytes: 2 ** 26 },
  };
}

test('the summary line keeps its keys, adds the economy and fleet keys, and judges each figure against its target in its direction', () => {
  const sm = summarize(result({ heartbeat: 5000, waves: 10_000 }));
  assert.equal(
    sm.line,
    'summary: convergence_vs_bound=1.25 convergence_vs_bound_1lb=1.25 convergence_vs_bound_no_budget=1.25 convergence_vs_bound_1lb_no_budget=1.25 convergence_vs_waves=0.50 requests_vs_waves=0.50 noop_writes=0 core_requests=200 history_events_per_lb=61 readiness_gets_per_object=2.0 fleet_services_per_min=100 fleet_peak_rss_mib=128 fleet_noop_resync_s=3.0 budget_goodput=n/a fleet_run_peak_rss_mib=n/a defaults=no',
  );
  assert.deepEqual(
    sm.targets.map((t) => [t.key, t.met, t.text]),
    [
      ['convergence_vs_bound', false, 'missed: 14 % over the target (1.25 vs 1.1)'],
      ['convergence_vs_bound_1lb', false, 'missed: 14 % over the target (1.25 vs 1.1)'],
      ['convergence_vs_waves', true, 'met'],
      ['requests_vs_waves', true, 'met'],
      ['noop_writes', true, 'met'],
      ['core_requests', false, 'missed: 18 % over the target (200 vs 170)'],
      ['history_events_per_lb', true, 'met'],
      ['readiness_gets_per_object', true, 'met'],
      ['fleet_services_per_min', false, 'missed: 60 % under the target (100 vs 250)'],
      ['fleet_peak_rss_mib', true, 'met'],
      ['fleet_noop_resync_s', true, 'met'],
      ['budget_goodput', false, 'not measured in this run'],
    ],
  );
});

test('the one-load-balancer variant is judged on its own runs against the same bound target, each printed beside its run without a budget', () => {
  const sm = summarize(result({ heartbeat: 4400, 'no-budget': 4800, 'heartbeat-1lb': 4200, 'no-budget-1lb': 4000 }));
  assert.match(sm.line, /^summary: convergence_vs_bound=1\.10 convergence_vs_bound_1lb=1\.05 convergence_vs_bound_no_budget=1\.20 convergence_vs_bound_1lb_no_budget=1\.00 convergence_vs_waves=/);
  assert.deepEqual(sm.targets.find((t) => t.key === 'convergence_vs_bound_1lb'), { name: 'convergence time / lower bound, the service on one load balancer', key: 'convergence_vs_bound_1lb', measured: 1.05, target: 1.1, higher: false, met: true, text: 'met' });
  // Without its runs (a saved run from before the variant), the variant is not measured rather than taken from the two-load-balancer runs.
  const before = result({ heartbeat: 4400 });
  const old = summarize({ ...before, core: before.core.filter((c) => !c.mode.endsWith('-1lb')) });
  assert.match(old.line, / convergence_vs_bound_1lb=n\/a .* convergence_vs_bound_1lb_no_budget=n\/a /);
  assert.equal(old.targets.find((t) => t.key === 'convergence_vs_bound_1lb')?.text, 'not measured in this run');
});

test('the controller fleet and the budget run, when measured, give the fleet and budget figures instead of the throughput run', () => {
  const phase = { wallMs: 90_000, requests: 1, mutations: 0, throttled: 0, cpuSeconds: {}, machineBusySeconds: 1 };
  const r = {
    ...result({ heartbeat: 5000, waves: 10_000 }),
    fleet: {
      services: 1000,
      loadBalancers: 2,
      objects: 28_000,
      deployMs: { min: 100, max: 300 },
      apply: phase,
      servicesPerMinute: 300,
      serviceP50Ms: 1,
      serviceP95Ms: 2,
      noop: { ...phase, wallMs: 45_000, mutations: 2 },
      resyncSignalled: 1000,
      remove: phase,
      leftAfterDelete: 0,
      workerPeakRssBytes: 900 * 2 ** 20,
      workerIdleRssBytes: 1,
      controllerEvents: 1,
      fullResyncEvents: 1,
    },
    budget: { services: 30, requestsPerSecond: 20, wallMs: 1000, requests: 20, throttled: 0, goodput: 0.93, throttledShare: 0.01 },
  };
  const sm = summarize(r);
  assert.match(sm.line, / noop_writes=2 .* fleet_services_per_min=300 fleet_peak_rss_mib=900 fleet_noop_resync_s=45\.0 budget_goodput=0\.93 fleet_run_peak_rss_mib=n\/a defaults=no$/);
  assert.deepEqual(
    sm.targets.filter((t) => t.key.startsWith('fleet') || t.key === 'budget_goodput' || t.key === 'noop_writes').map((t) => [t.key, t.met]),
    [
      ['noop_writes', false],
      ['fleet_services_per_min', true],
      ['fleet_peak_rss_mib', true],
      ['fleet_noop_resync_s', true],
      ['budget_goodput', true],
    ],
  );
});

test('fleet_run_peak_rss_mib is the fleet worker\'s peak over the whole run; defaults=yes only when every worker behind the figures ran as lbaas worker does without environment', () => {
  const base = result({ heartbeat: 5000, waves: 10_000 });
  const p = { wallMs: 1, requests: 1, mutations: 0, throttled: 0, cpuSeconds: {}, machineBusySeconds: 1 };
  const fleet = {
    services: 1000, loadBalancers: 2, objects: 28_000, deployMs: { min: 100, max: 300 }, apply: p, servicesPerMinute: 300, serviceP50Ms: 1, serviceP95Ms: 2,
    noop: p, resyncSignalled: 1000, remove: p, leftAfterDelete: 0, workerPeakRssBytes: 700 * 2 ** 20, workerRunPeakRssBytes: 1000.4 * 2 ** 20, workerIdleRssBytes: 1, controllerEvents: 1, fullResyncEvents: 1,
  };
  const line = (r: BenchResult) => / fleet_run_peak_rss_mib=(\S+) defaults=(\S+)$/.exec(summarize(r).line)?.slice(1);
  const defaults = { core: WORKER_DEFAULTS, fleet: WORKER_DEFAULTS };
  assert.deepEqual(line({ ...base, fleet, workers: defaults }), ['1000', 'yes']);
  // The same settings written in another key order are still the defaults.
  const reordered = { ...WORKER_DEFAULTS, pacing: Object.fromEntries(Object.entries(WORKER_DEFAULTS.pacing ?? {}).reverse()) };
  assert.deepEqual(line({ ...base, fleet, workers: { core: reordered, fleet: WORKER_DEFAULTS } }), ['1000', 'yes']);
  assert.deepEqual(line({ ...base, fleet, workers: { ...defaults, fleet: { ...WORKER_DEFAULTS, heapMiB: 768 } } }), ['1000', 'no']);
  // MALLOC_ARENA_MAX=2 is what every worker starts with (worker/heap.ts); another value is a change.
  assert.deepEqual(line({ ...base, fleet, workers: { ...defaults, fleet: { ...WORKER_DEFAULTS, env: { MALLOC_ARENA_MAX: '2' } } } }), ['1000', 'yes']);
  assert.deepEqual(line({ ...base, fleet, workers: { ...defaults, fleet: { ...WORKER_DEFAULTS, env: { MALLOC_ARENA_MAX: '8' } } } }), ['1000', 'no']);
  assert.deepEqual(line({ ...base, fleet, workers: { ...defaults, core: { ...WORKER_DEFAULTS, pacing: null } } }), ['1000', 'no']);
  assert.deepEqual(line({ ...base, fleet, workers: { ...defaults, core: { ...WORKER_DEFAULTS, pacing: { requestsPerSecond: 10, burst: 10 } } } }), ['1000', 'no']);
  // Without a fleet run only the core workers count, and there is no whole-run peak to report.
  assert.deepEqual(line({ ...base, workers: { ...defaults, fleet: { ...WORKER_DEFAULTS, heapMiB: 768 } } }), ['n/a', 'yes']);
  // A run saved before the settings were recorded cannot claim them.
  assert.deepEqual(line({ ...base, fleet }), ['1000', 'no']);
});

test('the markdown states the figures of the run and the sentences follow them', () => {
  const faster = result({ heartbeat: 5000, retry: 6000, 'retry-fast': 5500, waves: 10_000 });
  const md = markdown(faster, summarize(faster), 'benchmarks.svg', 'npm run bench');
  assert.match(md, /Summary line: `summary: convergence_vs_bound=1\.25 /);
  assert.match(md, /The product needed 1\.00 s above its lower bound \(medians\)\. Per load balancer it spent 0\.20 s before its first create, 0\.50 s per chain level .* over 3 levels, and 0\.30 s after the last deploy; the largest part is the reactions along the chain\./);
  assert.match(md, /Polling inside the heartbeating activity was the fastest: retry-based polling took 10 % longer at its fastest schedule and 20 % longer/);
  const slower = result({ heartbeat: 5000, retry: 6000, 'retry-fast': 4000, waves: 10_000 });
  assert.match(markdown(slower, summarize(slower), 'benchmarks.svg', 'npm run bench'), /Retry-based polling at its fastest schedule was faster than the heartbeat in this run \(0\.80x its time/);
});

test('the text report and the chart render every mode of the run', () => {
  const r = result({});
  const text = textReport(r, summarize(r));
  const svg = svgChart(r);
  for (const m of r.modes) {
    assert.match(text, new RegExp(`^${m.name} `, 'm'));
    assert.ok(svg.includes(`>${m.name}</text>`), m.name);
  }
});

test('npm run bench keeps the cluster and pools sections of the file it rewrites, each once, even when the old file had the cluster section inside the pools markers', () => {
  const cluster = `${SECTION_START}\n\n## Dev server vs. the production-shaped cluster\n\ncluster table\n\n${SECTION_END}`;
  const pools = `${POOL_MARK.begin}\n${cluster}\n\n## Server pools: fan-out of one node change\n\npools table\n${POOL_MARK.end}\n`;
  const previous = `# Benchmarks\n\nold figures\n\n${pools}`;
  const fresh = '# Benchmarks\n\nnew figures\n';
  const written = keepSections(fresh, previous, pools);
  const count = (s: string) => written.split(s).length - 1;
  assert.equal(count(SECTION_START), 1);
  assert.equal(count('## Dev server vs. the production-shaped cluster'), 1);
  assert.equal(count(POOL_MARK.begin), 1);
  assert.equal(count('pools table'), 1);
  assert.ok(!written.includes('old figures'));
  assert.ok(written.startsWith(fresh));
  // Written again from what it wrote: the same file.
  const pools2 = written.slice(written.indexOf(POOL_MARK.begin), written.indexOf(POOL_MARK.end) + POOL_MARK.end.length);
  assert.equal(keepSections(fresh, written, `${pools2}\n`), written);
});

test('npm run bench keeps the hand-measured test suite section of the file it rewrites, once, and rewriting what it wrote changes nothing', () => {
  const suite = `${SUITE_TIME_MARK.begin}\n\n## Test suite time\n\nsuite table\n\n${SUITE_TIME_MARK.end}`;
  const previous = `# Benchmarks\n\nold figures\n\n${suite}\n`;
  const fresh = '# Benchmarks\n\nnew figures\n';
  const written = withKeptSections(keepSections(fresh, previous, ''), previous);
  assert.equal(written, `${fresh}\n${suite}\n`);
  assert.equal(withKeptSections(keepSections(fresh, written, ''), written), written);
  assert.equal(withKeptSections(fresh, '# Benchmarks\n'), fresh);
});

test('the report names every uncommitted product file whole, including the first one listed with a leading space, and the new path of a rename', () => {
  assert.deepEqual(porcelainPaths(' M bench/cluster-report.ts\n M bench/fleet.ts\nM  domain/plan.ts\nR  activities/a.ts -> activities/b.ts\n?? bench/phase.ts\n'), [
    'bench/cluster-report.ts',
    'bench/fleet.ts',
    'domain/plan.ts',
    'activities/b.ts',
    'bench/phase.ts',
  ]);
  assert.deepEqual(porcelainPaths(''), []);
});
