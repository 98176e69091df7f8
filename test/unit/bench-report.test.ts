/**
 * The benchmark report from a small synthetic run: the summary line keeps its keys and computes its ratios, the
 * `bench:core` section holds the run's figures in tables and nothing else, and publishing (bench/publish.ts) writes
 * the results file and replaces exactly the marked section of a doc, refusing a doc whose markers are missing or
 * doubled.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { MODES, type CoreRun, type ModeName } from '../../bench/core';
import { WORKER_DEFAULTS } from '../../bench/defaults';
import { summarize, type BenchResult } from '../../bench/figures';
import { markers, publish, replaceSection } from '../../bench/publish';
import { commandOf, coreSection } from '../../bench/report-md';
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

test('the bench:core section states the run and its figures in tables, with the summary line, and no sentence', () => {
  const r = result({ heartbeat: 5000, retry: 6000, 'retry-fast': 5500, waves: 10_000 });
  const sm = summarize(r);
  const md = coreSection(r, sm, 'benchmarks.svg');
  assert.ok(md.startsWith('| run |  |\n|---|---|\n| command | `npm run bench -- --quick --seed 1 --reps 1 --services 10` |\n| commit | abc |\n'));
  assert.ok(md.includes(`\n\`${sm.line}\`\n`));
  assert.ok(md.includes('| convergence time / lower bound | `convergence_vs_bound` | <= 1.1 | 1.25 | **missed: 14 % over the target (1.25 vs 1.1)** |\n'));
  assert.ok(md.includes('| writes on a no-op resync | `noop_writes` | 0 | 0 | yes |\n'));
  // heartbeat: 5 s against a 4 s bound, half the waves' time and requests, 200 requests, 28 writes, a 1 s no-op.
  assert.ok(md.includes('\n| `heartbeat` | 5.00 s | 4.00 s | 1.25 | 0.50 | 200 | 0.50 | 0 | 28 | 1.00 s | 31 | 0 |\n'));
  assert.ok(md.includes('\n| `retry-fast` | 5.50 s | 4.00 s | 1.38 | 0.55 | 200 | 0.50 | 0 | 28 | 1.00 s | 31 | 0 |\n'));
  // The waves baseline runs no worker: no readiness GETs or poll gaps of the worker's to show.
  assert.ok(md.includes('\n| `waves` | 10.00 s | 4.00 s | 2.50 | 1.00 | 400 | 1.00 | - | 28 | 1.00 s | 31 | 0 |\n'));
  assert.match(md, /\n\| `waves` \| 3\.90 s \(3\.90 s-3\.90 s\) \| .* \| 2\.0 ms \| - \|\n/);
  assert.ok(md.includes('![Convergence time against the lower bound, per load balancer and run](benchmarks.svg)'));
  // Where the time goes: 0.2 s start, three reactions of 0.5 s, 0.3 s tail.
  assert.ok(md.includes('\n| `heartbeat` | 3.90 s (3.90 s-3.90 s) | 0.20 s (0.20 s-0.20 s) | 0.50 s / 0.50 s / 0.50 s | - | - | 0.80 s (0.80 s-0.80 s) | 0.30 s (0.30 s-0.30 s) | 2.0 ms | 0.25 |\n'));
  assert.ok(md.includes('\n| `retry` | awaitReady 100, retrieveState 100 | 61 (60-62) | 20 |\n'));
  assert.match(md, /\n\| apply \| 6\.00 s \| 100 \| 0\.90 s \/ 1\.80 s \| 600 \(60\.0\) \| 280 \| 3\.0 \| 10\.0 \|/);
  // Figures only: each paragraph is a table, the chart, the summary line, or the one-line caption of the table after it.
  const paragraphs = md.split('\n\n');
  for (const [i, p] of paragraphs.entries()) {
    const caption = !p.includes('\n') && p.endsWith(':') && (paragraphs[i + 1] ?? '').startsWith('|');
    assert.ok(p.startsWith('|') || p.startsWith('![') || p === `\`${sm.line}\`` || caption, `not a table: ${p.slice(0, 80)}`);
  }
});

test('the machine row names the Temporal server the run measured beside the CLI, and only the CLI for a run saved before the server was recorded', () => {
  const r = result({ heartbeat: 5000, retry: 6000, 'retry-fast': 5500, waves: 10_000 });
  const row = (machine: typeof r.machine) => coreSection({ ...r, machine }, summarize(r), 'benchmarks.svg').split('\n').find((l) => l.startsWith('| machine |'));
  assert.equal(row({ ...r.machine, temporalServer: '1.32.2' }), '| machine | 2 CPUs (test), 1024 MiB, linux, Node v20, Temporal server 1.32.2 (SQLite, in memory), Temporal CLI 1.5.1 |');
  assert.equal(row(r.machine), '| machine | 2 CPUs (test), 1024 MiB, linux, Node v20, Temporal CLI 1.5.1 |');
});

test('the command in the section reproduces the run: only the options that differ from the defaults', () => {
  const base = { quick: false, seed: 42, reps: 5, throughput: { services: 200 } };
  assert.equal(commandOf(base), 'npm run bench');
  assert.equal(commandOf({ ...base, quick: true, reps: 2, throughput: { services: 40 } }), 'npm run bench -- --quick');
  assert.equal(commandOf({ ...base, quick: true, reps: 1, throughput: { services: 10 } }), 'npm run bench -- --quick --reps 1 --services 10');
  assert.equal(commandOf({ ...base, seed: 7, reps: 3, fleet: { services: 1000 } as never, budget: { services: 30 } as never }), 'npm run bench -- --seed 7 --reps 3 --fleet 1000 --budget 30');
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

test('publishing writes the results file and replaces the marked section only, the same way every time', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-publish-'));
  try {
    mkdirSync(path.join(dir, 'docs'));
    const doc = path.join(dir, 'docs', 'benchmarks.md');
    const { begin, end } = markers('core');
    assert.deepEqual([begin, end], ['<!-- bench:core:begin -->', '<!-- bench:core:end -->']);
    const around = (body: string) => `# Benchmarks\n\nWritten by hand.\n\n${begin}\n${body}\n${end}\n\n<!-- bench:kube:begin -->\nkube table\n<!-- bench:kube:end -->\n\n## Test suite time\n`;
    writeFileSync(doc, around('old table'));
    assert.deepEqual(publish({ name: 'core', doc: 'docs/benchmarks.md', results: { a: 1 }, section: '| x |\n|---|\n| 1 |\n' }, dir), ['bench/results/core.json', 'docs/benchmarks.md']);
    assert.equal(readFileSync(doc, 'utf8'), around('| x |\n|---|\n| 1 |'));
    assert.deepEqual(JSON.parse(readFileSync(path.join(dir, 'bench', 'results', 'core.json'), 'utf8')), { a: 1 });
    publish({ name: 'core', doc: 'docs/benchmarks.md', results: { a: 1 }, section: '| x |\n|---|\n| 1 |\n' }, dir);
    assert.equal(readFileSync(doc, 'utf8'), around('| x |\n|---|\n| 1 |'), 'publishing the same results again changes nothing');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a doc without the section\'s markers, or with them twice, is refused with the doc and the markers named, and left as it was', () => {
  assert.throws(() => replaceSection('# Benchmarks\n', 'pools', 'table', 'docs/benchmarks.md'), {
    message: 'docs/benchmarks.md: no section <!-- bench:pools:begin --> ... <!-- bench:pools:end -->: put both markers, each on a line of its own, where the figures belong',
  });
  const { begin, end } = markers('pools');
  assert.throws(() => replaceSection(`${end}\n${begin}\n`, 'pools', 'table', 'docs/x.md'), /docs\/x\.md: no section <!-- bench:pools:begin -->/);
  assert.throws(() => replaceSection(`${begin}\na\n${end}\n${begin}\nb\n${end}\n`, 'pools', 'table', 'docs/x.md'), { message: 'docs/x.md: the markers of the section bench:pools appear more than once' });
  // Another bench's section is not this one's.
  assert.throws(() => replaceSection('<!-- bench:pool:begin -->\n<!-- bench:pool:end -->\n', 'pools', 'table', 'docs/x.md'), /no section/);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-publish-'));
  try {
    mkdirSync(path.join(dir, 'docs'));
    writeFileSync(path.join(dir, 'docs', 'scaling.md'), '# Scaling\n');
    assert.throws(() => publish({ name: 'lifecycle', doc: 'docs/scaling.md', results: { kept: true }, section: 'table' }, dir), /docs\/scaling\.md: no section <!-- bench:lifecycle:begin -->/);
    assert.equal(readFileSync(path.join(dir, 'docs', 'scaling.md'), 'utf8'), '# Scaling\n');
    // The measured results are kept to publish again once the markers are in place.
    assert.deepEqual(JSON.parse(readFileSync(path.join(dir, 'bench', 'results', 'lifecycle.json'), 'utf8')), { kept: true });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
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
