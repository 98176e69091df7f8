/** Turning the measurements into the summary line, a table on stdout, docs/benchmarks.md and its SVG chart. */
import type { CoreRun, Mode, ModeName } from './core';
import { CORE_DEPLOY_MS } from './core';
import type { ThroughputResult } from './throughput';
import { int, median, mib, ratio, secs, spread, sum } from './util';
import { CORE_SHAPE } from './workload';

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryBytes: number;
  node: string;
  os: string;
  temporalCli: string;
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
}

export const TARGETS = { convergenceVsBound: 1.25, convergenceVsWaves: 0.6, requestsVsWaves: 0.6, noopWrites: 0 } as const;

export interface Target {
  name: string;
  key: string;
  measured: number;
  target: number;
  /** Lower is better for all of them. */
  met: boolean;
  text: string;
}

export interface Summary {
  convergenceVsBound: number;
  convergenceVsWaves: number;
  requestsVsWaves: number;
  noopWrites: number;
  targets: Target[];
  line: string;
}

const runsOf = (r: BenchResult, mode: ModeName) => r.core.filter((c) => c.mode === mode).sort((a, b) => a.rep - b.rep);

/** Per repetition, `f(mode run) / f(other mode run)`, paired by repetition. */
function paired(r: BenchResult, a: ModeName, b: ModeName, f: (c: CoreRun) => number): number[] {
  const bs = new Map(runsOf(r, b).map((c) => [c.rep, c]));
  return runsOf(r, a).flatMap((c) => {
    const other = bs.get(c.rep);
    return other ? [f(c) / f(other)] : [];
  });
}

const boundRatio = (c: CoreRun) => c.apply.wallMs / c.serviceBoundMs;

export function summarize(r: BenchResult): Summary {
  const product = runsOf(r, 'heartbeat');
  const convergenceVsBound = median(product.map(boundRatio));
  const convergenceVsWaves = median(paired(r, 'heartbeat', 'waves', (c) => c.apply.wallMs));
  const requestsVsWaves = median(paired(r, 'heartbeat', 'waves', (c) => c.apply.requests));
  const noopWrites = r.throughput.noop.mutations + sum(product.map((c) => c.noop.mutations));
  const t = (name: string, key: string, measured: number, target: number, digits = 2): Target => {
    const met = measured <= target;
    const by = target === 0 ? `${measured} instead of 0` : `${((measured / target - 1) * 100).toFixed(0)} % over the target (${measured.toFixed(digits)} vs ${target})`;
    return { name, key, measured, target, met, text: met ? 'met' : `missed: ${by}` };
  };
  const targets = [
    t('convergence time / lower bound', 'convergence_vs_bound', convergenceVsBound, TARGETS.convergenceVsBound),
    t('convergence time / waves baseline', 'convergence_vs_waves', convergenceVsWaves, TARGETS.convergenceVsWaves),
    t('Engine requests / waves baseline', 'requests_vs_waves', requestsVsWaves, TARGETS.requestsVsWaves),
    t('writes on a no-op resync', 'noop_writes', noopWrites, TARGETS.noopWrites, 0),
  ];
  const line = `summary: convergence_vs_bound=${ratio(convergenceVsBound)} convergence_vs_waves=${ratio(convergenceVsWaves)} requests_vs_waves=${ratio(requestsVsWaves)} noop_writes=${noopWrites}`;
  return { convergenceVsBound, convergenceVsWaves, requestsVsWaves, noopWrites, targets, line };
}

// --- per-mode aggregates ---------------------------------------------------------------------------------------

interface ModeFigures {
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
  latency: number[];
}

function modeFigures(r: BenchResult, mode: Mode): ModeFigures {
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
    latency: runs.map((c) => c.apply.latencyMedianMs),
  };
}

/** Mean of a per-key count over runs, sorted by count. */
function meanCounts(maps: Record<string, number>[]): [string, number][] {
  const total = new Map<string, number>();
  for (const m of maps) for (const [k, v] of Object.entries(m)) total.set(k, (total.get(k) ?? 0) + v);
  return [...total.entries()].map(([k, v]) => [k, v / Math.max(1, maps.length)] as [string, number]).sort((a, b) => b[1] - a[1]);
}

const s = (ms: number) => `${secs(ms)} s`;
const pad = (text: string, n: number) => (text.length >= n ? text : text + ' '.repeat(n - text.length));

// --- stdout ----------------------------------------------------------------------------------------------------

export function textReport(r: BenchResult, sum_: Summary): string {
  const out: string[] = [];
  const figs = r.modes.map((m) => modeFigures(r, m));
  out.push('');
  out.push(`lbaas-orchestrator benchmark (${r.quick ? 'quick' : 'full'}), seed ${r.seed}, ${r.reps} repetition(s) per mode`);
  out.push(`machine: ${r.machine.cpus} CPUs (${r.machine.cpuModel}), ${mib(r.machine.memoryBytes)}, Node ${r.machine.node}, load ${r.machine.loadAvgStart.map((x) => x.toFixed(1)).join('/')} at start`);
  out.push(`core workload: 1 service, ${CORE_SHAPE.ports} ports x ${CORE_SHAPE.addresses} addresses x ${CORE_SHAPE.servers} servers on 2 load balancers (${CORE_SHAPE.objectsPerLoadBalancer} objects each), deploy ${CORE_DEPLOY_MS.min}-${CORE_DEPLOY_MS.max} ms`);
  out.push('values: median (min-max) over repetitions');
  out.push('');
  const header = ['mode', 'converge', 'bound', 'ratio', 'requests', 'writes', 'no-op wall', 'no-op req', 'no-op writes', 'events/LB run (apply, no-op)'];
  const rows = figs.map((f) => [
    f.mode.name,
    spread(f.wall, s),
    spread(f.bound, s),
    spread(f.boundRatio, (x) => ratio(x)),
    spread(f.requests, int),
    spread(f.writes, int),
    spread(f.noopWall, s),
    spread(f.noopRequests, int),
    spread(f.noopWrites, int),
    f.eventsApply.length ? `${spread(f.eventsApply, int)}, ${spread(f.eventsNoop, int)}` : '-',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)) + 2);
  for (const row of [header, ...rows]) out.push(row.map((c, i) => pad(c, widths[i] ?? 0)).join('').trimEnd());
  out.push('');
  out.push('per repetition (service wall / bound; per LB converged / bound):');
  for (const c of r.core) {
    const lbs = c.loadBalancers.map((l) => `${s(l.convergedMs)}/${s(l.boundMs)}`).join(', ');
    out.push(`  rep ${c.rep} seed ${c.seed} ${pad(c.mode, 10)} ${s(c.apply.wallMs)} / ${s(c.serviceBoundMs)} = ${ratio(boundRatio(c))}  [${lbs}]  requests ${c.apply.requests}, no-op ${c.noop.requests}`);
  }
  const t = r.throughput;
  out.push('');
  out.push(`throughput: ${t.services} services x ${t.loadBalancers} load balancers (${t.objects} objects), deploy ${t.deployMs.min}-${t.deployMs.max} ms, one worker process${r.quick ? ' (scaled down for --quick; the full run uses 200)' : ''}`);
  out.push(`  converged in ${s(t.apply.wallMs)}: ${t.servicesPerMinute.toFixed(0)} services/min; per service p50 ${s(t.apply.serviceP50Ms)}, p95 ${s(t.apply.serviceP95Ms)}; ${t.apply.requests} Engine requests`);
  out.push(`  worker peak RSS ${mib(t.workerPeakRssBytes)} (idle ${mib(t.workerIdleRssBytes)}; after the resync ${mib(t.workerPeakRssAfterResyncBytes)})`);
  out.push(`  no-op full resync: ${s(t.noop.wallMs)}, ${t.noop.requests} Engine requests (${(t.noop.requests / t.services).toFixed(1)} per service), ${t.noop.mutations} writes`);
  out.push('');
  out.push('targets:');
  for (const x of sum_.targets) out.push(`  ${pad(x.key, 22)} ${pad(x.key === 'noop_writes' ? String(x.measured) : ratio(x.measured), 6)} target <= ${x.target}: ${x.text}`);
  out.push('');
  return out.join('\n');
}

// --- markdown --------------------------------------------------------------------------------------------------

function mdTable(header: string[], rows: string[][]): string {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

export function markdown(r: BenchResult, sm: Summary, svgName: string, command: string): string {
  const figs = r.modes.map((m) => modeFigures(r, m));
  const by = (name: ModeName) => figs.find((f) => f.mode.name === name) as ModeFigures;
  const hb = by('heartbeat');
  const waves = by('waves');
  const t = r.throughput;
  const L: string[] = [];
  L.push('# Benchmarks');
  L.push('');
  L.push(`Generated by \`${command}\` (${r.quick ? '**quick** run: fewer repetitions and a smaller fleet' : 'full run'}) on ${r.startedAt.toISOString()}, in ${secs(r.durationMs, 0)} s. Every figure below comes from that run; re-running rewrites this file and [${svgName}](${svgName}).`);
  L.push('');
  L.push('## Setup');
  L.push('');
  L.push(`- Machine: ${r.machine.cpus} CPUs (${r.machine.cpuModel}), ${mib(r.machine.memoryBytes)} memory, ${r.machine.os}, Node ${r.machine.node}. Load average ${r.machine.loadAvgStart.map((x) => x.toFixed(2)).join(' / ')} at the start and ${r.machine.loadAvgEnd.map((x) => x.toFixed(2)).join(' / ')} at the end: other work shared the machine, so single figures are noisy; the spread over repetitions is shown as min-max.`);
  L.push(`- Everything on loopback: a Temporal dev server (\`temporal server start-dev\`, CLI ${r.machine.temporalCli}, in-memory SQLite), the Engine simulator in its own process (\`node dist/simulator/main.js --seed ${r.seed}\`), and each worker in its own process built by \`createLbaasWorker\` (the same worker \`lbaas worker\` runs) on a prebuilt workflow bundle. The waves baseline runs in the benchmark process.`);
  L.push(`- Seed ${r.seed}; repetition *k* reseeds the simulator's delay draws with seed ${r.seed} + *k* before every mode, so all modes of a repetition draw from the same stream (which object gets which draw depends on the order of creates, so the lower bound is computed per run from the delays actually drawn).`);
  L.push(`- Core workload: one service with ${CORE_SHAPE.ports} ports, ${CORE_SHAPE.addresses} external addresses (IPv4 + IPv6) and ${CORE_SHAPE.servers} servers on 2 load balancers: per load balancer 2 Backends, 2 Frontends, 4 Binds, 6 Servers (${CORE_SHAPE.objectsPerLoadBalancer} objects, ${CORE_SHAPE.objectsPerLoadBalancer * 2} per service). Simulator deploy delay ${CORE_DEPLOY_MS.min}-${CORE_DEPLOY_MS.max} ms (uniform), no faults. Converged from empty, then re-applied unchanged (no-op). ${r.reps} repetition(s) per mode.`);
  L.push(`- Modes:`);
  for (const m of r.modes) L.push(`  - \`${m.name}\`: ${m.title}.`);
  L.push(`- Lower bound per load balancer: the longest dependency chain of the deploy delays the simulator drew in that run (per port: Backend + max(Frontend + max(Binds), max(Servers))), plus one Engine request latency per chain level (the median request latency the reconciler measured during that run, client side: ${spread(hb.latency, (x) => `${x.toFixed(1)} ms`)} for \`heartbeat\`). Service bound: the maximum over its load balancers. Convergence time: from the start request until the reconcileService result (waves: until every load balancer's final status read).`);
  L.push(`- Engine requests and writes: \`/_sim/stats\` (\`total\`, \`mutations\`), reset before every phase.`);
  L.push('');
  L.push('## Targets');
  L.push('');
  L.push(
    mdTable(
      ['figure', 'target', 'measured', 'result'],
      sm.targets.map((x) => [`${x.name} (\`${x.key}\`)`, x.key === 'noop_writes' ? '0' : `<= ${x.target}`, x.key === 'noop_writes' ? String(x.measured) : ratio(x.measured), x.met ? 'met' : `**${x.text}**`]),
    ),
  );
  L.push('');
  L.push(`Summary line: \`${sm.line}\``);
  L.push('');
  L.push(`\`convergence_vs_bound\` is the median over repetitions of the product mode's service convergence time over its lower bound; \`convergence_vs_waves\` and \`requests_vs_waves\` the medians of the per-repetition ratios product / waves (one converged service per run, so requests per converged service is requests per run); \`noop_writes\` the Engine writes during the no-op full resync of the throughput fleet plus those of the core no-op re-applies.`);
  L.push('');
  L.push('## Convergence from empty and no-op re-apply (core workload)');
  L.push('');
  L.push('Median (min-max) over repetitions.');
  L.push('');
  L.push(
    mdTable(
      ['mode', 'convergence', 'lower bound', 'time / bound', 'time / waves', 'Engine requests', 'requests / waves', 'writes', 'no-op: time', 'no-op: requests', 'no-op: writes'],
      figs.map((f) => [
        `\`${f.mode.name}\``,
        spread(f.wall, s),
        spread(f.bound, s),
        spread(f.boundRatio, (x) => ratio(x)),
        spread(paired(r, f.mode.name, 'waves', (c) => c.apply.wallMs), (x) => ratio(x)),
        spread(f.requests, int),
        spread(paired(r, f.mode.name, 'waves', (c) => c.apply.requests), (x) => ratio(x)),
        spread(f.writes, int),
        spread(f.noopWall, s),
        spread(f.noopRequests, int),
        spread(f.noopWrites, int),
      ]),
    ),
  );
  L.push('');
  L.push(`![Convergence time against the lower bound, per load balancer and run](${svgName})`);
  L.push('');
  L.push('Where the time goes, per load balancer (median over load balancers and repetitions): *chain slack* is how much later than the bare chain of deploy delays the Engine finished the last object (time lost between levels: noticing that a parent is ready, then creating the child); *tail* is the time from that last deploy to the end of the reconciliation (noticing the last object, the final observation, finishing the workflows).');
  L.push('');
  L.push(
    mdTable(
      ['mode', 'chain of deploy delays', 'chain slack', 'tail', 'request latency (median)'],
      figs.map((f) => {
        const chains = f.runs.flatMap((c) => c.loadBalancers.map((l) => l.deployChainMs));
        return [`\`${f.mode.name}\``, spread(chains, s), spread(f.chainSlack, s), spread(f.tailLag, s), spread(f.latency, (x) => `${x.toFixed(1)} ms`)];
      }),
    ),
  );
  L.push('');
  L.push('### Engine requests by purpose (from empty, mean per run)');
  L.push('');
  L.push('Temporal modes: by the activity that made the request (counted in the worker); waves: by purpose.');
  L.push('');
  for (const f of figs) {
    const counts = meanCounts(f.runs.map((c) => c.apply.byPurpose));
    L.push(`- \`${f.mode.name}\`: ${counts.map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ')} (total ${spread(f.requests, int)})`);
  }
  L.push('');
  L.push('By route (from empty, mean per run):');
  L.push('');
  const routes = [...new Set(figs.flatMap((f) => f.runs.flatMap((c) => Object.keys(c.apply.byRoute))))].sort();
  L.push(mdTable(['route', ...figs.map((f) => `\`${f.mode.name}\``)], routes.map((route) => [`\`${route}\``, ...figs.map((f) => (sum(f.runs.map((c) => c.apply.byRoute[route] ?? 0)) / Math.max(1, f.runs.length)).toFixed(0))])));
  L.push('');
  L.push('No-op re-apply by route (mean per run):');
  L.push('');
  const noopRoutes = [...new Set(figs.flatMap((f) => f.runs.flatMap((c) => Object.keys(c.noop.byRoute))))].sort();
  L.push(mdTable(['route', ...figs.map((f) => `\`${f.mode.name}\``)], noopRoutes.map((route) => [`\`${route}\``, ...figs.map((f) => (sum(f.runs.map((c) => c.noop.byRoute[route] ?? 0)) / Math.max(1, f.runs.length)).toFixed(0))])));
  L.push('');
  L.push('## Workflow history per load-balancer reconciliation');
  L.push('');
  L.push('History events of each `reconcileLoadBalancer` run (`lbaas/<uid>/lb/<lb>`, run ids from the parent\'s ChildWorkflowExecutionStarted events, `fetchHistory()`), over both load balancers and all repetitions; and of the parent `reconcileService` run.');
  L.push('');
  L.push(
    mdTable(
      ['mode', 'reconcileLoadBalancer from empty', 'reconcileLoadBalancer no-op', 'reconcileService from empty'],
      figs.filter((f) => f.eventsApply.length > 0).map((f) => [`\`${f.mode.name}\``, spread(f.eventsApply, int), spread(f.eventsNoop, int), spread(f.serviceEventsApply, int)]),
    ),
  );
  L.push('');
  L.push('## Readiness polling: heartbeating activity or Temporal retries');
  L.push('');
  L.push(pollingComparison(r, figs));
  L.push('');
  L.push('## Throughput and no-op full resync');
  L.push('');
  L.push(`${t.services} services (the core shape, each with addresses of its own) x ${t.loadBalancers} load balancers = ${t.objects} Engine objects, deploy delay ${t.deployMs.min}-${t.deployMs.max} ms, all applied at once (one \`reconcileService\` each, started ${32} at a time) to one worker process with the product defaults (200 activity slots).${r.quick ? ' **Scaled down for `--quick`**; the full run uses 200 services.' : ''} Then the no-op full resync: \`reconcileService\` again for every service, nothing changed in between.`);
  L.push('');
  L.push(
    mdTable(
      ['figure', 'value'],
      [
        ['convergence of all services', s(t.apply.wallMs)],
        ['services per minute', t.servicesPerMinute.toFixed(0)],
        ['per service, start to result: p50 / p95', `${s(t.apply.serviceP50Ms)} / ${s(t.apply.serviceP95Ms)}`],
        ['Engine requests (per service)', `${t.apply.requests} (${(t.apply.requests / t.services).toFixed(1)})`],
        ['Engine writes', String(t.apply.mutations)],
        ['worker peak RSS (VmHWM, after the apply)', mib(t.workerPeakRssBytes)],
        ['worker RSS when idle, before the apply', mib(t.workerIdleRssBytes)],
        ['worker peak RSS after the resync as well', mib(t.workerPeakRssAfterResyncBytes)],
        ['no-op full resync: wall time', s(t.noop.wallMs)],
        ['no-op full resync: Engine requests (per service)', `${t.noop.requests} (${(t.noop.requests / t.services).toFixed(1)})`],
        ['no-op full resync: Engine writes', String(t.noop.mutations)],
      ],
    ),
  );
  L.push('');
  L.push('## Where targets are missed, and why');
  L.push('');
  L.push(analysis(r, sm, hb, waves, figs));
  L.push('');
  return L.join('\n');
}

function pollingComparison(r: BenchResult, figs: ModeFigures[]): string {
  const get = (n: ModeName) => figs.find((f) => f.mode.name === n);
  const hb = get('heartbeat');
  const rows = figs
    .filter((f) => f.mode.worker)
    .map((f) => [
      `\`${f.mode.name}\``,
      spread(f.wall, s),
      spread(f.boundRatio, (x) => ratio(x)),
      spread(f.requests, int),
      spread(
        f.runs.map((c) => c.apply.byPurpose.awaitReady ?? 0),
        int,
      ),
      spread(f.eventsApply, int),
      hb ? spread(paired(r, f.mode.name, 'heartbeat', (c) => c.apply.wallMs), (x) => ratio(x)) : '-',
    ]);
  const lines = [
    'The product polls readiness inside one heartbeating `awaitReady` attempt (first GET at once, then 250 ms x 1.25 up to 1 s, 30 s per attempt). The alternative, each attempt a single GET and Temporal\'s retry policy doing the polling, is measured with the same worker built with awaitReady options `{ windowMs: 0 }` (no product change: `createActivities(engine, { readiness })` already takes them): `retry` keeps the spec\'s default readiness policy (1 s x 1.5, the upstream schedule), `retry-fast` sets the spec\'s readiness to the heartbeat schedule (250ms x 1.25, max 1s).',
    '',
    mdTable(['mode', 'convergence', 'time / bound', 'Engine requests', 'of which readiness GETs', 'events per reconcileLoadBalancer (from empty)', 'time / heartbeat'], rows),
  ];
  return lines.join('\n');
}

function analysis(r: BenchResult, sm: Summary, hb: ModeFigures, waves: ModeFigures, figs: ModeFigures[]): string {
  const out: string[] = [];
  const missed = sm.targets.filter((x) => !x.met);
  if (missed.length === 0) out.push('All targets are met in this run.');
  const reqs = meanCounts(hb.runs.map((c) => c.apply.byPurpose));
  const reqOf = (k: string) => reqs.find(([n]) => n === k)?.[1] ?? 0;
  const wavesReq = meanCounts(waves.runs.map((c) => c.apply.byPurpose));
  const wOf = (k: string) => wavesReq.find(([n]) => n === k)?.[1] ?? 0;
  for (const x of missed) {
    if (x.key === 'convergence_vs_bound') {
      out.push(
        `- **${x.key}** ${x.text}. Per load balancer the product lost a median ${s(median(hb.chainSlack))} between levels (chain slack) and ${s(median(hb.tailLag))} after the last deploy (tail). The chain slack is mostly readiness-polling overshoot: a poll interval of up to 1 s overshoots a deploy by up to that much at each of the 3 levels; plus one Temporal round trip per object (createObject and awaitReady are separate activities, each scheduled by a workflow task). The tail is the last poll's overshoot plus the final observation (which reads every object of the service) and the workflow completions.`,
      );
    }
    if (x.key === 'convergence_vs_waves') {
      out.push(`- **${x.key}** ${x.text}. The waves baseline waits for the slowest object of each wave and polls 1 s x 1.5; the product follows the dependency graph per port and polls faster, so the ratio is bounded below by (per-port chain) / (sum of the wave maxima), which for 1-3 s uniform delays and 2 ports leaves little room below ~0.6 even with zero overhead.`);
    }
    if (x.key === 'requests_vs_waves') {
      out.push(
        `- **${x.key}** ${x.text}. Mean per run, the product spent ${reqOf('awaitReady').toFixed(0)} requests on readiness polls, ${reqOf('retrieveState').toFixed(0)} on observing (retrieveState), ${reqOf('createObject').toFixed(0)} on create + tag and ${reqOf('listTagged').toFixed(0)} on listTagged; the waves baseline ${wOf('poll').toFixed(0)} on polls, ${wOf('observe').toFixed(0)} on observing, ${(wOf('create') + wOf('tag')).toFixed(0)} on create + tag. Create + tag is the same for both (one POST and one tag per object); what differs is polling (fast polls cost GETs) and observing.`,
      );
    }
    if (x.key === 'noop_writes') out.push(`- **${x.key}** ${x.text}: a no-op must not write; see the no-op by-route table for which routes wrote.`);
  }
  const retry = figs.find((f) => f.mode.name === 'retry');
  const fast = figs.find((f) => f.mode.name === 'retry-fast');
  if (retry && fast) {
    out.push('');
    out.push(
      `Polling choice, measured: \`heartbeat\` converged in ${spread(hb.wall, s)} with ${spread(hb.requests, int)} requests; \`retry\` (1 s x 1.5) in ${spread(retry.wall, s)} with ${spread(retry.requests, int)}; \`retry-fast\` (heartbeat schedule via retries) in ${spread(fast.wall, s)} with ${spread(fast.requests, int)}. History events per reconcileLoadBalancer: ${spread(hb.eventsApply, int)} / ${spread(retry.eventsApply, int)} / ${spread(fast.eventsApply, int)} (failed attempts are not written to history, so retries cost no events).`,
    );
  }
  return out.join('\n');
}

// --- SVG -------------------------------------------------------------------------------------------------------

const COLORS: Record<ModeName, string> = { heartbeat: '#1f77b4', retry: '#ff7f0e', 'retry-fast': '#2ca02c', waves: '#d62728' };

function marker(mode: ModeName, x: number, y: number): string {
  const c = COLORS[mode];
  const f = (n: number) => n.toFixed(1);
  switch (mode) {
    case 'heartbeat':
      return `<circle cx="${f(x)}" cy="${f(y)}" r="4.5" fill="${c}" fill-opacity="0.85"/>`;
    case 'retry':
      return `<rect x="${f(x - 4)}" y="${f(y - 4)}" width="8" height="8" fill="${c}" fill-opacity="0.85"/>`;
    case 'retry-fast':
      return `<path d="M${f(x)} ${f(y - 5)} L${f(x + 5)} ${f(y + 4)} L${f(x - 5)} ${f(y + 4)} Z" fill="${c}" fill-opacity="0.85"/>`;
    case 'waves':
      return `<path d="M${f(x)} ${f(y - 5.5)} L${f(x + 5.5)} ${f(y)} L${f(x)} ${f(y + 5.5)} L${f(x - 5.5)} ${f(y)} Z" fill="${c}" fill-opacity="0.85"/>`;
  }
}

const esc = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Scatter plot: per load balancer and run, convergence time (y) against its lower bound (x), with y = x and y = 1.25 x. */
export function svgChart(r: BenchResult): string {
  const W = 720;
  const H = 500;
  const m = { left: 64, right: 200, top: 48, bottom: 56 };
  const pts = r.core.flatMap((c) => c.loadBalancers.map((l) => ({ mode: c.mode, x: l.boundMs / 1000, y: l.convergedMs / 1000 })));
  const maxX = Math.ceil(Math.max(1, ...pts.map((p) => p.x)) + 0.5);
  const maxY = Math.ceil(Math.max(1, ...pts.map((p) => p.y)) * 1.05);
  const minX = Math.max(0, Math.floor(Math.min(...pts.map((p) => p.x)) - 1));
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom;
  const X = (v: number) => m.left + ((v - minX) / (maxX - minX)) * pw;
  const Y = (v: number) => m.top + ph - (v / maxY) * ph;
  const o: string[] = [];
  o.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif" font-size="12">`);
  o.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  o.push(`<text x="${m.left}" y="22" font-size="15" font-weight="bold">Convergence time against the lower bound, per load balancer</text>`);
  o.push(
    `<text x="${m.left}" y="38" fill="#555">${esc(`${CORE_SHAPE.objectsPerLoadBalancer} objects per load balancer, deploy ${CORE_DEPLOY_MS.min}-${CORE_DEPLOY_MS.max} ms, seed ${r.seed}, ${r.reps} repetition(s)${r.quick ? ' (quick)' : ''}`)}</text>`,
  );
  const stepX = maxX - minX > 12 ? 2 : 1;
  for (let v = minX; v <= maxX; v += stepX) {
    o.push(`<line x1="${X(v)}" y1="${m.top}" x2="${X(v)}" y2="${m.top + ph}" stroke="#eee"/>`);
    o.push(`<text x="${X(v)}" y="${m.top + ph + 16}" text-anchor="middle">${v}</text>`);
  }
  const stepY = maxY > 16 ? 2 : 1;
  for (let v = 0; v <= maxY; v += stepY) {
    o.push(`<line x1="${m.left}" y1="${Y(v)}" x2="${m.left + pw}" y2="${Y(v)}" stroke="#eee"/>`);
    o.push(`<text x="${m.left - 8}" y="${Y(v) + 4}" text-anchor="end">${v}</text>`);
  }
  o.push(`<rect x="${m.left}" y="${m.top}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`);
  o.push(`<text x="${m.left + pw / 2}" y="${H - 14}" text-anchor="middle">lower bound (s): longest chain of drawn deploy delays + request latency</text>`);
  o.push(`<text transform="translate(18 ${m.top + ph / 2}) rotate(-90)" text-anchor="middle">convergence time (s)</text>`);
  const line = (k: number, dash: string, label: string) => {
    const x2 = Math.min(maxX, maxY / k);
    o.push(`<line x1="${X(minX)}" y1="${Y(minX * k)}" x2="${X(x2)}" y2="${Y(x2 * k)}" stroke="#444" stroke-dasharray="${dash}"/>`);
    o.push(`<text x="${X(x2) - 4}" y="${Y(x2 * k) - 6}" text-anchor="end" fill="#444">${label}</text>`);
  };
  line(1, '2 3', 'y = bound');
  line(1.25, '6 4', 'y = 1.25 x bound (target)');
  for (const p of pts) o.push(marker(p.mode, X(p.x), Y(p.y)));
  const lx = m.left + pw + 16;
  r.modes.forEach((mode, i) => {
    const y = m.top + 14 + i * 22;
    o.push(marker(mode.name, lx + 6, y - 4));
    o.push(`<text x="${lx + 18}" y="${y}">${esc(mode.name)}</text>`);
  });
  o.push(`<text x="${lx}" y="${m.top + 14 + r.modes.length * 22 + 8}" fill="#555" font-size="11">one mark per load balancer</text>`);
  o.push(`<text x="${lx}" y="${m.top + 14 + r.modes.length * 22 + 22}" fill="#555" font-size="11">and run</text>`);
  o.push('</svg>');
  return o.join('\n') + '\n';
}
