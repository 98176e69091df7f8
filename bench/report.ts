/** Turning the measurements into the summary line, a table on stdout, docs/benchmarks.md and its SVG chart. */
import type { CoreRun, Mode, ModeName } from './core';
import { CORE_DEPLOY_MS } from './core';
import { realistic429Share, realisticMarkdown, realisticRows, REALISTIC_429_TARGET, textTable, type RealisticRun } from './realistic';
import type { ThroughputResult } from './throughput';
import { int, mean, median, mib, quantile, ratio, secs, spread, sum } from './util';
import { CORE_SHAPE } from './workload';

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryBytes: number;
  node: string;
  os: string;
  temporalCli: string;
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
  /** The core workload on the ideal and the realistic simulator profile (realistic.ts); absent in older saved runs. */
  realistic?: RealisticRun[];
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
  const share = realistic429Share(r.realistic ?? []);
  if (share !== null) targets.push(t('requests answered 429, realistic Engine', 'realistic_429_share', share, REALISTIC_429_TARGET, 3));
  const line = `summary: convergence_vs_bound=${ratio(convergenceVsBound)} convergence_vs_waves=${ratio(convergenceVsWaves)} requests_vs_waves=${ratio(requestsVsWaves)} noop_writes=${noopWrites}${share === null ? '' : ` realistic_429_share=${share.toFixed(3)}`}`;
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
  /** Per load balancer: from the start to the first create. */
  startup: number[];
  /** Per object with a parent: from the parent's deploy to the child's create. */
  reactions: number[];
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
    startup: lbs.map((l) => l.firstCreateMs),
    reactions: lbs.flatMap((l) => l.reactionsMs),
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
  out.push(`code: ${r.machine.revision}${r.machine.uncommitted.length ? ` + uncommitted changes in ${r.machine.uncommitted.join(', ')}` : ''}`);
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
  out.push('where the time goes per load balancer (medians): start = start to first create; reaction = parent deployed to child created; tail = last deploy to done');
  for (const f of figs) {
    out.push(`  ${pad(f.mode.name, 13)} start ${s(median(f.startup))}, reaction ${s(quantile(f.reactions, 0.5))} (p90 ${s(quantile(f.reactions, 0.9))}), tail ${s(median(f.tailLag))}, request latency ${median(f.latency).toFixed(1)} ms`);
  }
  out.push('');
  out.push('per repetition (service wall / bound; per LB converged / bound):');
  for (const c of r.core) {
    const lbs = c.loadBalancers.map((l) => `${s(l.convergedMs)}/${s(l.boundMs)}`).join(', ');
    out.push(`  rep ${c.rep} seed ${c.seed} ${pad(c.mode, 13)} ${s(c.apply.wallMs)} / ${s(c.serviceBoundMs)} = ${ratio(boundRatio(c))}  [${lbs}]  requests ${c.apply.requests}, no-op ${c.noop.requests}`);
  }
  const t = r.throughput;
  out.push('');
  out.push(`throughput: ${t.services} services x ${t.loadBalancers} load balancers (${t.objects} objects), deploy ${t.deployMs.min}-${t.deployMs.max} ms, one worker process${r.quick ? ' (scaled down for --quick; the full run uses 200)' : ''}`);
  out.push(`  converged in ${s(t.apply.wallMs)}: ${t.servicesPerMinute.toFixed(0)} services/min; per service p50 ${s(t.apply.serviceP50Ms)}, p95 ${s(t.apply.serviceP95Ms)}; ${t.apply.requests} Engine requests`);
  out.push(`  worker peak RSS ${mib(t.workerPeakRssBytes)} (idle ${mib(t.workerIdleRssBytes)}; after the resync ${mib(t.workerPeakRssAfterResyncBytes)})`);
  out.push(`  no-op full resync: ${s(t.noop.wallMs)}, ${t.noop.requests} Engine requests (${(t.noop.requests / t.services).toFixed(1)} per service), ${t.noop.mutations} writes`);
  out.push(`  CPU seconds during the apply: ${Object.entries(t.apply.cpuSeconds).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')}; machine ${t.apply.machineBusySeconds.toFixed(1)} of ${(r.machine.cpus * t.apply.wallMs / 1000).toFixed(1)}`);
  if (r.realistic?.length) {
    out.push('');
    out.push('the core workload on the ideal and the realistic Engine (apply, drop a port, delete):');
    out.push(textTable(realisticRows(r.realistic)));
  }
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
  L.push(
    `- Code measured: commit ${r.machine.revision}${r.machine.uncommitted.length ? `, built with uncommitted changes (work in progress of others) in ${r.machine.uncommitted.map((f) => `\`${f}\``).join(', ')}` : ' (clean working tree)'}.`,
  );
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
  L.push(
    'Where the time goes, per load balancer (median, min-max over load balancers and repetitions). *Start*: from the start request to the first create (workflow and child start, first observation). *Reaction*: per Frontend, Bind and Server, from its parent\'s deploy finishing to its own create: the readiness-poll overshoot plus getting the next create going; paid once per chain level. *Engine done - chain*: how much later than the bare chain of deploy delays the Engine finished the last object here (start + reactions along the chain). *Tail*: from that last deploy to the end of this load balancer\'s reconciliation (noticing it, the final observation, completing the workflows).',
  );
  L.push('');
  L.push(
    mdTable(
      ['mode', 'chain of deploy delays', 'start', 'reaction per level: median / p90 / max', 'Engine done - chain', 'tail', 'request latency'],
      figs.map((f) => {
        const chains = f.runs.flatMap((c) => c.loadBalancers.map((l) => l.deployChainMs));
        const re = f.reactions;
        return [
          `\`${f.mode.name}\``,
          spread(chains, s),
          spread(f.startup, s),
          `${s(quantile(re, 0.5))} / ${s(quantile(re, 0.9))} / ${s(Math.max(...re))}`,
          spread(f.chainSlack, s),
          spread(f.tailLag, s),
          spread(f.latency, (x) => `${x.toFixed(1)} ms`),
        ];
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
  L.push(`CPU seconds used during each phase (the machine has ${r.machine.cpus} CPUs, i.e. ${r.machine.cpus} CPU seconds per second; "machine" counts every process, including work of others):`);
  L.push('');
  L.push(
    mdTable(
      ['phase', 'wall', ...Object.keys(t.apply.cpuSeconds), 'machine'],
      [
        ['apply', s(t.apply.wallMs), ...Object.values(t.apply.cpuSeconds).map((x) => x.toFixed(1)), t.apply.machineBusySeconds.toFixed(1)],
        ['no-op resync', s(t.noop.wallMs), ...Object.values(t.noop.cpuSeconds).map((x) => x.toFixed(1)), t.noop.machineBusySeconds.toFixed(1)],
      ],
    ),
  );
  L.push('');
  L.push(throughputNote(r));
  L.push('');
  if (r.realistic?.length) L.push(realisticMarkdown(r.realistic));
  L.push('## Where targets are missed, and why');
  L.push('');
  L.push(analysis(r, sm, hb, waves, figs));
  L.push('');
  return L.join('\n');
}

function throughputNote(r: BenchResult): string {
  const t = r.throughput;
  const cap = r.machine.cpus * (t.apply.wallMs / 1000);
  const busy = t.apply.machineBusySeconds / cap;
  const top = Object.entries(t.apply.cpuSeconds).sort((a, b) => b[1] - a[1])[0];
  return `During the apply the machine's CPUs were ${(busy * 100).toFixed(0)} % busy${top ? `; the largest single consumer was ${top[0]} (${top[1].toFixed(1)} CPU s, ${((top[1] / cap) * 100).toFixed(0)} % of the machine)` : ''}. ${
    busy > 0.85 ? 'Throughput on this machine is CPU-bound: the Temporal dev server, the worker and the simulator share 2 CPUs (with other work), so services per minute measure this box, not a limit of the orchestrator.' : ''
  }`;
}

/** Median over runs of the n-th readiness poll gap. */
function pollGapsOf(f: ModeFigures): number[] {
  const out: number[] = [];
  for (let i = 0; i < 6; i++) {
    const gaps = f.runs.flatMap((c) => {
      const g = c.apply.pollGaps[i];
      return g && g.count > 0 ? [g.medianMs] : [];
    });
    if (gaps.length === 0) break;
    out.push(median(gaps));
  }
  return out;
}

function pollingComparison(r: BenchResult, figs: ModeFigures[]): string {
  const rows = figs
    .filter((f) => f.mode.worker)
    .map((f) => [
      `\`${f.mode.name}\``,
      spread(f.wall, s),
      spread(f.boundRatio, (x) => ratio(x)),
      `${s(quantile(f.reactions, 0.5))} / ${s(median(f.tailLag))}`,
      spread(f.requests, int),
      spread(
        f.runs.map((c) => c.apply.byPurpose.awaitReady ?? 0),
        int,
      ),
      pollGapsOf(f)
        .map((g) => (g / 1000).toFixed(2))
        .join(', '),
      spread(f.eventsApply, int),
      spread(paired(r, f.mode.name, 'heartbeat', (c) => c.apply.wallMs), (x) => ratio(x)),
    ]);
  return [
    "The product polls readiness inside one heartbeating `awaitReady` attempt (250 ms x 1.25 up to 500 ms between GETs, the first GET after a create skipped, for up to 30 s per attempt). The alternative is one GET per attempt with Temporal's retry policy doing the polling. Both run the same worker code: `createActivities(engine, { readiness })` already takes awaitReady options, so the retry modes use `{ windowMs: 0 }` (every attempt gives up after its single GET) and no product change was needed. `retry` keeps the spec's default readiness policy (1 s x 1.5, the upstream schedule); `retry-fast` sets the spec's readiness to the heartbeat schedule (250ms x 1.25, max 1s); `heartbeat-500` sets `pollMaxMs: 500` explicitly (now the product default as well).",
    '',
    "*Poll gaps* are measured in the worker: the median time between the 1st and 2nd, 2nd and 3rd, ... GET of the same awaitReady activity (across its attempts), in seconds.",
    '',
    mdTable(['mode', 'convergence', 'time / bound', 'reaction / tail (median)', 'Engine requests', 'readiness GETs', 'poll gaps (s)', 'history events per reconcileLoadBalancer', 'time / heartbeat'], rows),
  ].join('\n');
}

function analysis(r: BenchResult, sm: Summary, hb: ModeFigures, waves: ModeFigures, figs: ModeFigures[]): string {
  const out: string[] = [];
  const get = (n: ModeName) => figs.find((f) => f.mode.name === n);
  const target = (key: string) => sm.targets.find((x) => x.key === key) as Target;
  const head = (key: string) => {
    const x = target(key);
    return x.met ? `**\`${key}\`: met** (${key === 'noop_writes' ? x.measured : ratio(x.measured)}).` : `**\`${key}\`: ${x.text}.**`;
  };
  const per = (f: ModeFigures, k: string) => mean(f.runs.map((c) => c.apply.byPurpose[k] ?? 0));
  const route = (f: ModeFigures, k: string) => mean(f.runs.map((c) => c.apply.byRoute[k] ?? 0));

  // Time against the bound.
  const re = hb.reactions;
  out.push(
    `- ${head('convergence_vs_bound')} The product spends, per load balancer (medians), ${s(median(hb.startup))} before its first create (starting the workflows, the first observation), ${s(quantile(re, 0.5))} per chain level between a parent's deploy and its child's create (p10 ${s(quantile(re, 0.1))}, p90 ${s(quantile(re, 0.9))}), paid 3 times along the longest chain, and ${s(median(hb.tailLag))} after the last deploy (tail). The reaction's floor (p10) is Temporal's own cost per level: awaitReady completes, a workflow task schedules createObject, which POSTs and tags. Everything above the floor is readiness-poll overshoot: polls 250 ms x 1.25 up to 500 ms overshoot a deploy of 1-3 s (uniform) by about a quarter of a second on average. The tail is the last object's overshoot, the final observation and completing both workflows.`,
  );
  const h500 = get('heartbeat-500');
  if (h500) {
    out.push(
      `  Capping the poll interval at 500 ms (\`heartbeat-500\`, an existing awaitReady option) measured ${spread(h500.boundRatio, (x) => ratio(x))} of the bound (reaction ${s(quantile(h500.reactions, 0.5))}) for ${spread(h500.requests, int)} requests, against ${spread(hb.boundRatio, (x) => ratio(x))} and ${spread(hb.requests, int)} for the default.`,
    );
  }

  // Time against the waves.
  const ideal = median(paired(r, 'heartbeat', 'waves', (c) => (c.mode === 'heartbeat' ? c.serviceBoundMs : c.apply.wallMs)));
  const jit = get('waves-jitter');
  out.push(
    `- ${head('convergence_vs_waves')} The waves baseline waits for the slowest object of each wave and then for its next poll (1 s, 2.5 s, 4.75 s, ... after the wave's creates), so its reaction per level is ${s(quantile(waves.reactions, 0.5))} median (p90 ${s(quantile(waves.reactions, 0.9))}). But on this workload even a reconciler that reacted instantly would reach only ${ratio(ideal)} of the waves' time (the product's lower bound over the waves' convergence, per repetition): with 2 ports the longest per-port chain is close to the sum of the per-wave maxima. 0.6 leaves ${s(median(hb.bound) * (0.6 / ideal - 1))} of overhead above the bound for start, three reactions and the tail; the product needs ${s(median(hb.wall) - median(hb.bound))}.${jit ? ` Against the baseline with upstream's jitter (\`waves-jitter\`, ${spread(jit.wall, s)}) the product measured ${spread(paired(r, 'heartbeat', 'waves-jitter', (c) => c.apply.wallMs), (x) => ratio(x))}.` : ''}`,
  );

  // Requests against the waves.
  const lists = route(hb, 'GET /api/core/v1/resource.json') - per(hb, 'listTagged');
  const resourceGets = route(hb, 'GET /api/core/v1/resource.json/{id}');
  const typedObserve = per(hb, 'retrieveState') - lists - resourceGets;
  const lbCount = 2;
  const otherLb = (typedObserve * (lbCount - 1)) / lbCount;
  // One awaitReady per created object; its first GET comes right after the create.
  const created = mean(hb.runs.map((c) => sum(Object.entries(c.apply.byRoute).filter(([k]) => /^POST \/api\/LBaaS\/v1\/\w+\.json$/.test(k)).map(([, v]) => v))));
  const firstGets = created;
  const projected = mean(hb.requests) - resourceGets - otherLb;
  const projected2 = projected - firstGets;
  const wavesMean = mean(waves.requests);
  out.push(
    `- ${head('requests_vs_waves')} Per run the product made ${per(hb, 'awaitReady').toFixed(0)} readiness GETs, ${per(hb, 'retrieveState').toFixed(0)} requests observing (retrieveState), ${per(hb, 'createObject').toFixed(0)} in createObject (${(per(hb, 'createObject') / created).toFixed(1)} per created object: POST, tag${per(hb, 'createObject') / created > 2.05 ? ', and a list of look-alikes before the POST' : ''}) and ${per(hb, 'listTagged').toFixed(0)} listTagged; the waves baseline ${per(waves, 'poll').toFixed(0)} polls, ${per(waves, 'observe').toFixed(0)} observing (5 full reads of the service per load balancer, each reading every object's Core resource and typed object), ${(per(waves, 'create') + per(waves, 'tag')).toFixed(0)} creating and tagging. The product observes far less but polls about twice as often. Two avoidable costs are visible in the product's observation: ${resourceGets.toFixed(0)} Core resource GETs (the final observation does not know the kinds of the objects it just created, because createObject does not record them in the worker's kind cache), and ${otherLb.toFixed(0)} typed GETs of objects on the other load balancer (each load balancer's retrieveState reads every object tagged for the service and only then filters by load balancer). Without both, the same run would need about ${projected.toFixed(0)} requests, ${ratio(projected / wavesMean)} of the waves' (arithmetic on the measured counts, not measured); skipping the first readiness GET, which comes right after the create and can only find NewlyCreated, would save ${firstGets.toFixed(0)} more (${ratio(projected2 / wavesMean)}).`,
  );
  out.push(`- ${head('noop_writes')} A no-op re-apply made ${spread(hb.noopRequests, int)} requests (every object read once, kinds cached) and no writes; the no-op full resync of the fleet ${r.throughput.noop.requests} requests (${(r.throughput.noop.requests / r.throughput.services).toFixed(1)} per service) and ${r.throughput.noop.mutations} writes. The waves baseline needs ${spread(waves.noopRequests, int)} requests for the same no-op.`);

  const retry = get('retry');
  const fast = get('retry-fast');
  if (retry && fast) {
    const gaps = (f: ModeFigures) => pollGapsOf(f).map((g) => (g / 1000).toFixed(2)).join(', ');
    out.push('');
    out.push('### The polling choice');
    out.push('');
    const fastRatio = median(paired(r, 'retry-fast', 'heartbeat', (c) => c.apply.wallMs));
    const slowRatio = median(paired(r, 'retry', 'heartbeat', (c) => c.apply.wallMs));
    const readinessGets = (f: ModeFigures) => f.runs.map((c) => c.apply.byPurpose.awaitReady ?? 0);
    const getShare = median(readinessGets(fast)) / median(readinessGets(hb));
    const floor = median(pollGapsOf(fast).slice(0, 3));
    out.push(
      [
        `Measured on the core workload (medians, min-max): \`heartbeat\` ${spread(hb.wall, s)}, ${spread(hb.requests, int)} Engine requests of which ${spread(readinessGets(hb), int)} readiness GETs; \`retry\` (1 s x 1.5) ${spread(retry.wall, s)}, ${spread(retry.requests, int)} requests, ${spread(readinessGets(retry), int)} readiness GETs; \`retry-fast\` ${spread(fast.wall, s)}, ${spread(fast.requests, int)} requests, ${spread(readinessGets(fast), int)} readiness GETs. Per repetition, retry-based polling took ${ratio(fastRatio)}x the heartbeat's time at its fastest and ${ratio(slowRatio)}x on the spec's default policy; the median reaction per level was ${s(median(fast.reactions))} and ${s(median(retry.reactions))} against the heartbeat's ${s(median(hb.reactions))}.`,
        `History events per reconcileLoadBalancer are the same for all three (${spread(hb.eventsApply, int)} / ${spread(retry.eventsApply, int)} / ${spread(fast.eventsApply, int)}): Temporal does not write failed attempts to history, and the heartbeat mode needs one attempt per wait.`,
        `The poll gaps explain the rest. \`retry-fast\` asked for 250 ms x 1.25 but its GETs came ${gaps(fast)} s apart${floor > 700 ? ': Temporal\'s retry timers on this dev server do not fire faster than about once a second, so retry-based polling cannot react sooner than that' : ''}; the heartbeat schedule measured ${gaps(hb)} s. For deploys of 1-3 s the heartbeat's gaps have grown to 0.5 s by the time the deploy ends, which is why the two end up close on this workload, and why retries need only ${(getShare * 100).toFixed(0)} % of the heartbeat's readiness GETs: the heartbeat spends its extra GETs early (250, 312, 390 ms apart), when a 1-3 s deploy cannot be done yet, and polls twice a second after that.`,
        `Verdict: keep polling inside the heartbeating activity. ${fastRatio >= 1 ? `Retry-based polling took ${((fastRatio - 1) * 100).toFixed(0)} % longer at its fastest and ${((slowRatio - 1) * 100).toFixed(0)} % longer on the spec's policy` : 'The heartbeat was not faster than retry-based polling at its fastest in this run'}. The heartbeat reacts within 250 ms to deploys that finish quickly, which the retry timer floor rules out, and it leaves the spec's readiness policy to do one job, bounding the whole wait (polling by retries would tie the poll interval to that policy: 30 attempts at about 1 s give up after about 30 s). Its cost is GETs; the early ones are the cheapest to drop (see below).`,
      ].join('\n\n'),
    );
  }
  out.push('');
  out.push('### What would meet the missed targets');
  out.push('');
  const jitRatio = jit ? median(paired(r, 'heartbeat', 'waves-jitter', (c) => c.apply.wallMs)) : NaN;
  const advice = [
    `- Requests: record the kind (and load balancer) of every object createObject makes in the worker's kind cache, and let retrieveState read typed objects only for its own load balancer (the load balancer of a Backend or Frontend never changes; cache it with the kind). Both are changes in \`activities/state.ts\` and \`activities/objects.ts\`; by the arithmetic above they bring the product to about ${ratio(projected / wavesMean)} of the waves' requests with the default polling.`,
    "- Requests: start polling a just-created object later: its first GET comes right after the create and can only find NewlyCreated, and the next ones come while no deploy of 1-3 s can be done. An optional `initialDelayMs` in `AwaitReadyOptions` (default 0, so nothing changes unless set) would allow it; not measured here.",
    h500 && median(h500.reactions) < median(hb.reactions) - 0.03 * 1000
      ? `- Time: a lower poll cap (\`pollMaxMs: 500\`) cut the median reaction from ${s(median(hb.reactions))} to ${s(median(h500.reactions))} per level; with the request savings above there is room for its extra GETs. A combined create-and-await activity would save one Temporal round trip per level (the reaction floor).`
      : `- Time: ${h500 ? `a lower poll cap (\`pollMaxMs: 500\`) did not measurably help in this run (median reaction ${s(median(h500.reactions))} against ${s(median(hb.reactions))}): on this loaded machine Temporal's round trip per level weighs as much as the overshoot.` : 'a lower poll cap trades GETs for overshoot (run without --quick to measure `pollMaxMs: 500`).'} A combined create-and-await activity would save one Temporal round trip per level (the reaction floor).`,
  ];
  if (!target('convergence_vs_waves').met) {
    advice.push(
      `- \`convergence_vs_waves\` <= 0.6 needs the product within ${ratio(0.6 / ideal)}x of its lower bound on this workload (an instant reconciler reaches ${ratio(ideal)}).${Number.isFinite(jitRatio) ? ` Against upstream's real schedule with jitter it measured ${ratio(jitRatio)}${jitRatio <= 0.6 ? ', within the target' : ''}.` : ''}`,
    );
  }
  out.push(advice.join('\n'));
  return out.join('\n');
}

// --- SVG -------------------------------------------------------------------------------------------------------

const COLORS: Record<ModeName, string> = {
  heartbeat: '#1f77b4',
  'heartbeat-500': '#17becf',
  retry: '#ff7f0e',
  'retry-fast': '#2ca02c',
  waves: '#d62728',
  'waves-jitter': '#9467bd',
};

function marker(mode: ModeName, x: number, y: number): string {
  const c = COLORS[mode];
  const f = (n: number) => n.toFixed(1);
  switch (mode) {
    case 'heartbeat':
      return `<circle cx="${f(x)}" cy="${f(y)}" r="4.5" fill="${c}" fill-opacity="0.85"/>`;
    case 'heartbeat-500':
      return `<circle cx="${f(x)}" cy="${f(y)}" r="4" fill="none" stroke="${c}" stroke-width="2"/>`;
    case 'retry':
      return `<rect x="${f(x - 4)}" y="${f(y - 4)}" width="8" height="8" fill="${c}" fill-opacity="0.85"/>`;
    case 'retry-fast':
      return `<path d="M${f(x)} ${f(y - 5)} L${f(x + 5)} ${f(y + 4)} L${f(x - 5)} ${f(y + 4)} Z" fill="${c}" fill-opacity="0.85"/>`;
    case 'waves':
      return `<path d="M${f(x)} ${f(y - 5.5)} L${f(x + 5.5)} ${f(y)} L${f(x)} ${f(y + 5.5)} L${f(x - 5.5)} ${f(y)} Z" fill="${c}" fill-opacity="0.85"/>`;
    case 'waves-jitter':
      return `<path d="M${f(x)} ${f(y - 5)} L${f(x + 5)} ${f(y)} L${f(x)} ${f(y + 5)} L${f(x - 5)} ${f(y)} Z" fill="none" stroke="${c}" stroke-width="2"/>`;
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
    o.push(`<text x="${X(x2) - 4}" y="${Y(x2 * k) - 6}" text-anchor="end" fill="#444" stroke="white" stroke-width="3" paint-order="stroke">${label}</text>`);
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
