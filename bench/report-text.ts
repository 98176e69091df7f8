/** The report on stdout: a table per mode, where the time goes, each repetition, the throughput run, the targets. */
import { CORE_DEPLOY_MS, type CoreRun } from './core';
import { boundRatio, fleetPhases, modeFigures, type BenchResult, type Summary } from './figures';
import { int, median, mib, quantile, ratio, secs, spread } from './util';
import { realisticRows, textTable } from './realistic';
import { CORE_SHAPE } from './workload';

const s = (ms: number) => `${secs(ms)} s`;
const per = (n: number, of: number) => `${n} (${(n / of).toFixed(1)})`;
const pad = (text: string, n: number) => (text.length >= n ? text : text + ' '.repeat(n - text.length));

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
  const fleet = fleetText(r);
  if (fleet.length > 0) out.push('', ...fleet);
  out.push('');
  out.push('targets:');
  for (const x of sum_.targets) out.push(`  ${pad(x.key, 22)} ${pad(x.key === 'noop_writes' ? String(x.measured) : ratio(x.measured), 6)} target ${x.higher ? '>=' : '<='} ${x.target}: ${x.text}`);
  out.push('');
  return out.join('\n');
}

/**
 * `--core-only`: per mode, the convergence against the bound and where the time above it went (medians over runs and
 * load balancers, ms), for an A/B of workers in one run.
 */
export function coreOnlyReport(core: readonly CoreRun[]): string {
  const modes = [...new Set(core.map((c) => c.mode))];
  const rows = modes.map((mode) => {
    const runs = core.filter((c) => c.mode === mode);
    const lbs = runs.flatMap((c) => c.loadBalancers);
    const ratios = runs.map((c) => c.apply.wallMs / c.serviceBoundMs);
    const ms = (xs: number[]) => (xs.length === 0 ? 'n/a' : String(Math.round(median(xs))));
    return [
      mode,
      `${ratio(median(ratios))} (${ratio(Math.min(...ratios))}-${ratio(Math.max(...ratios))})`,
      int(median(runs.map((c) => c.apply.requests))),
      int(median(runs.map((c) => c.apply.readinessGets ?? 0))),
      ms(lbs.map((l) => l.firstCreateMs)),
      ms(lbs.flatMap((l) => l.reactionsMs)),
      ms(lbs.flatMap((l) => l.noticesMs ?? [])),
      ms(lbs.flatMap((l) => l.handoffsMs ?? [])),
      ms(lbs.map((l) => l.convergedMs - l.engineDoneMs)),
      ms(lbs.flatMap((l) => (Number.isFinite(l.lastNoticeMs) ? [l.lastNoticeMs as number] : []))),
    ];
  });
  const head = ['mode', 'time/bound median (min-max)', 'requests', 'readiness GETs', 'start ms', 'reaction ms', 'notice ms', 'handoff ms', 'tail ms', 'tail notice ms'];
  const table = [head, ...rows];
  const widths = head.map((_, i) => Math.max(...table.map((r) => (r[i] as string).length)));
  return table.map((r) => r.map((c, i) => c.padEnd(widths[i] as number)).join('  ')).join('\n');
}

/** The controller fleet and the Engine budget run, one line per phase. */
function fleetText(r: BenchResult): string[] {
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
