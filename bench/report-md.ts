/**
 * The `bench:core` section of docs/benchmarks.md: the tables of one `npm run bench` run, figures only. What the
 * workloads and modes are, against which baseline, and what the figures mean is the hand-written text around the
 * section (bench/publish.ts).
 */
import { fleetPhases, meanCounts, modeFigures, paired, pollGapsOf, type BenchResult, type ModeFigures, type Summary } from './figures';
import { factTable, loadText, mdTable } from './publish';
import { realisticRows } from './realistic';
import { int, mib, quantile, ratio, secs, spread } from './util';
import { isDefault } from './defaults';

const s = (ms: number) => `${secs(ms)} s`;
const ms = (x: number) => `${x.toFixed(1)} ms`;
const quantiles = (xs: readonly number[], qs: readonly number[]) => (xs.length === 0 ? '-' : qs.map((q) => s(quantile(xs, q))).join(' / '));

/** The command that reproduces a run: `npm run bench` with the options that differ from the defaults. */
export function commandOf(r: Pick<BenchResult, 'quick' | 'seed' | 'reps' | 'fleet' | 'budget'> & { throughput: Pick<BenchResult['throughput'], 'services'> }): string {
  const opts = [
    r.quick ? '--quick' : '',
    r.seed !== 42 ? `--seed ${r.seed}` : '',
    r.reps !== (r.quick ? 2 : 5) ? `--reps ${r.reps}` : '',
    r.throughput.services !== (r.quick ? 40 : 200) ? `--services ${r.throughput.services}` : '',
    r.fleet ? `--fleet ${r.fleet.services}` : '',
    r.budget ? `--budget ${r.budget.services}` : '',
  ].filter(Boolean);
  return `npm run bench${opts.length ? ` -- ${opts.join(' ')}` : ''}`;
}

export function coreSection(r: BenchResult, sm: Summary, svgName: string): string {
  const figs = r.modes.map((m) => modeFigures(r, m));
  const m = r.machine;
  const parts: string[] = [];
  parts.push(
    factTable([
      ['command', `\`${commandOf(r)}\``],
      ['commit', `${m.revision}${m.uncommitted.length ? ` with uncommitted changes in ${m.uncommitted.map((f) => `\`${f}\``).join(', ')}` : ''}`],
      ['started', `${r.startedAt.toISOString()}, ${secs(r.durationMs, 0)} s`],
      ['machine', `${m.cpus} CPUs (${m.cpuModel}), ${mib(m.memoryBytes)}, ${m.os}, Node ${m.node}, ${m.temporalServer === undefined ? `Temporal CLI ${m.temporalCli}` : `Temporal server ${m.temporalServer} (SQLite, in memory), Temporal CLI ${m.temporalCli}`}`],
      ['load average', loadText(m.loadAvgStart, m.loadAvgEnd)],
      ['seed, repetitions per mode', `${r.seed}, ${r.reps}`],
      ['workers at the settings of `lbaas worker`', r.workers === undefined ? 'not recorded' : sm.defaults ? 'yes' : 'no'],
    ]),
  );
  parts.push(
    mdTable(
      ['figure', 'key', 'target', 'measured', 'met'],
      sm.targets.map((x) => [x.name, `\`${x.key}\``, x.key === 'noop_writes' ? '0' : `${x.higher ? '>=' : '<='} ${x.target}`, x.key === 'noop_writes' ? String(x.measured) : ratio(x.measured), x.met ? 'yes' : `**${x.text}**`]),
    ),
    `\`${sm.line}\``,
  );
  parts.push(
    'Core workload, from empty and the no-op re-apply; median (min-max) over repetitions:',
    mdTable(
      ['mode', 'convergence', 'lower bound', 'time / bound', 'time / waves', 'Engine requests', 'requests / waves', 'readiness GETs', 'writes', 'no-op: time', 'no-op: requests', 'no-op: writes'],
      figs.map((f) => [
        `\`${f.mode.name}\``,
        spread(f.wall, s),
        spread(f.bound, s),
        spread(f.boundRatio, (x) => ratio(x)),
        spread(paired(r, f.mode.name, 'waves', (c) => c.apply.wallMs), (x) => ratio(x)),
        spread(f.requests, int),
        spread(paired(r, f.mode.name, 'waves', (c) => c.apply.requests), (x) => ratio(x)),
        f.mode.worker ? spread(f.readinessGets, int) : '-',
        spread(f.writes, int),
        spread(f.noopWall, s),
        spread(f.noopRequests, int),
        spread(f.noopWrites, int),
      ]),
    ),
    `![Convergence time against the lower bound, per load balancer and run](${svgName})`,
  );
  parts.push(
    'Where the time goes, per load balancer: median (min-max) over load balancers and repetitions:',
    mdTable(
      ['mode', 'chain of deploy delays', 'start', 'reaction per level: median / p90 / max', 'notice: median / p90', 'handoff: median / p90', 'Engine done - chain', 'tail', 'request latency', 'poll gaps (s)'],
      figs.map((f) => [
        `\`${f.mode.name}\``,
        spread(f.runs.flatMap((c) => c.loadBalancers.map((l) => l.deployChainMs)), s),
        spread(f.startup, s),
        f.reactions.length === 0 ? '-' : `${quantiles(f.reactions, [0.5, 0.9])} / ${s(Math.max(...f.reactions))}`,
        quantiles(f.notices, [0.5, 0.9]),
        quantiles(f.handoffs, [0.5, 0.9]),
        spread(f.chainSlack, s),
        spread(f.tailLag, s),
        spread(f.latency, ms),
        (f.mode.worker && pollGapsOf(f).map((g) => (g / 1000).toFixed(2)).join(', ')) || '-',
      ]),
    ),
  );
  parts.push(
    'Engine requests from empty by what made them (mean per run), and history events (median, min-max):',
    mdTable(
      ['mode', 'requests by activity (Temporal modes) or purpose (waves)', 'events per reconcileLoadBalancer', 'events per reconcileService'],
      figs.map((f: ModeFigures) => [
        `\`${f.mode.name}\``,
        meanCounts(f.runs.map((c) => c.apply.byPurpose)).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', '),
        f.eventsApply.length ? spread(f.eventsApply, int) : '-',
        f.serviceEventsApply.length ? spread(f.serviceEventsApply, int) : '-',
      ]),
    ),
  );
  const t = r.throughput;
  const cpuKeys = Object.keys(t.apply.cpuSeconds);
  parts.push(
    `Throughput: ${t.services} services x ${t.loadBalancers} load balancers (${t.objects} objects), deploys ${t.deployMs.min}-${t.deployMs.max} ms, one worker:`,
    mdTable(
      ['phase', 'wall', 'services/min', 'per service p50 / p95', 'Engine requests (per service)', 'writes', ...cpuKeys.map((k) => `CPU s ${k}`), 'CPU s machine'],
      [
        ['apply', s(t.apply.wallMs), t.servicesPerMinute.toFixed(0), `${s(t.apply.serviceP50Ms)} / ${s(t.apply.serviceP95Ms)}`, `${t.apply.requests} (${(t.apply.requests / t.services).toFixed(1)})`, t.apply.mutations, ...cpuKeys.map((k) => (t.apply.cpuSeconds[k] ?? NaN).toFixed(1)), t.apply.machineBusySeconds.toFixed(1)],
        ['no-op full resync', s(t.noop.wallMs), '', '', `${t.noop.requests} (${(t.noop.requests / t.services).toFixed(1)})`, t.noop.mutations, ...cpuKeys.map((k) => (t.noop.cpuSeconds[k] ?? NaN).toFixed(1)), t.noop.machineBusySeconds.toFixed(1)],
      ],
    ),
    mdTable(['worker RSS', ''], [['idle, before the apply', mib(t.workerIdleRssBytes)], ['peak after the apply (VmHWM)', mib(t.workerPeakRssBytes)], ['peak after the resync', mib(t.workerPeakRssAfterResyncBytes)]]),
  );
  const f = r.fleet;
  if (f) {
    const procs = Object.keys(f.apply.cpuSeconds);
    parts.push(
      `Controller fleet: ${f.services} services x ${f.loadBalancers} load balancers (${f.objects} objects), deploys ${f.deployMs.min}-${f.deployMs.max} ms, one worker${f.workerNodeHeapMiB ? ` (\`--max-old-space-size=${f.workerNodeHeapMiB}\`)` : ''}${r.workers ? `, at the settings of \`lbaas worker\`: ${isDefault(r.workers.fleet) ? 'yes' : 'no'}` : ''}:`,
      mdTable(
        ['phase', 'wall', 'Engine requests (per service)', 'writes', '429', ...procs.map((k) => `CPU s ${k}`), 'CPU s machine'],
        fleetPhases(f).map(([name, p]) => [name, `${secs(p.wallMs, 1)} s`, `${p.requests} (${(p.requests / f.services).toFixed(1)})`, p.mutations, p.throttled, ...procs.map((k) => (p.cpuSeconds[k] ?? NaN).toFixed(1)), p.machineBusySeconds.toFixed(1)]),
      ),
      mdTable(
        ['fleet', ''],
        [
          ['services converged per minute', f.servicesPerMinute.toFixed(0)],
          ['per service from its apply: p50 / p95', `${secs(f.serviceP50Ms, 1)} s / ${secs(f.serviceP95Ms, 1)} s`],
          ['worker RSS: idle / apply peak / whole-run peak', `${mib(f.workerIdleRssBytes)} / ${mib(f.workerPeakRssBytes)} / ${mib(f.workerRunPeakRssBytes ?? NaN)}`],
          ['history events: one controller after the apply and the resync / the fullResync run', `${f.controllerEvents} / ${f.fullResyncEvents}`],
          ['controllers signalled by the resync; tagged objects left after the delete', `${f.resyncSignalled}; ${f.leftAfterDelete}`],
        ],
      ),
    );
  }
  const b = r.budget;
  if (b) {
    parts.push(
      mdTable(
        ['Engine budget run', ''],
        [
          ['services x 2 load balancers, applied at once', b.services],
          ['budget (worker and simulator), requests/s', b.requestsPerSecond],
          ['wall', `${secs(b.wallMs, 1)} s`],
          ['requests (answered 429)', `${b.requests} (${b.throttled})`],
          ['goodput', `${(b.goodput * 100).toFixed(0)} %`],
        ],
      ),
    );
  }
  if (r.realistic?.length) {
    const [header, ...rows] = realisticRows(r.realistic) as [string[], ...string[][]];
    parts.push('The core workload on the ideal and the realistic simulator profile (apply, drop a port, delete):', mdTable(header, rows));
  }
  return parts.join('\n\n');
}
