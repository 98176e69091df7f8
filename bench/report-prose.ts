/**
 * The sentences of docs/benchmarks.md. Each one states numbers of the run (figures.ts) and what follows from comparing
 * them; none describes how the code works (settings, algorithms), which the code and its comments say and which
 * would go stale here. A mode's settings are its title in core.ts MODES, printed in the Setup section.
 */
import type { ModeName } from './core';
import { overheadParts, paired, perPurpose, pollGapsOf, type BenchResult, type ModeFigures, type Summary, type Target } from './figures';
import { int, median, quantile, ratio, secs, spread } from './util';

const s = (ms: number) => `${secs(ms)} s`;
const pct = (x: number) => `${(x * 100).toFixed(0)} %`;
const gapsText = (f: ModeFigures) => pollGapsOf(f).map((g) => (g / 1000).toFixed(2)).join(', ') || 'n/a';

function head(t: Target): string {
  return t.met ? `**\`${t.key}\`: met** (${t.key === 'noop_writes' ? t.measured : ratio(t.measured)}).` : `**\`${t.key}\`: ${t.text}.**`;
}

/** The product's time above its bound, split into start, reactions along the longest chain, and tail. */
function boundSentence(t: Target, hb: ModeFigures): string {
  const p = overheadParts(hb);
  const largest = (
    [
      ['the start', p.start],
      ['the reactions along the chain', p.reactions],
      ['the tail', p.tail],
    ] as const
  ).reduce((a, b) => (b[1] > a[1] ? b : a));
  return `- ${head(t)} The product needed ${s(p.overhead)} above its lower bound (medians). Per load balancer it spent ${s(p.start)} before its first create, ${s(p.reaction)} per chain level between a parent's deploy and its child's create (p10 ${s(quantile(hb.reactions, 0.1))}, p90 ${s(quantile(hb.reactions, 0.9))}) over ${int(p.levels)} levels, and ${s(p.tail)} after the last deploy; the largest part is ${largest[0]}.`;
}

/**
 * The product against `unwatched` (the same worker polling every kind on the median-aimed schedule) in the same
 * repetitions: what watching the deploys that children wait for bought, and what it cost.
 */
function watchSentence(hb: ModeFigures, un: ModeFigures): string {
  const ms = (xs: number[]) => (xs.length === 0 ? 'n/a' : s(quantile(xs, 0.5)));
  return (
    `  Against \`unwatched\` in the same repetitions: time / bound ${spread(hb.boundRatio, ratio)} against ${spread(un.boundRatio, ratio)}; per chain level the parent's deploy was noticed after ${ms(hb.notices)} against ${ms(un.notices)} and the child created ${ms(hb.handoffs)} against ${ms(un.handoffs)} after that (medians); ` +
    `${spread(hb.requests, int)} Engine requests per run against ${spread(un.requests, int)}, of which readiness GETs ${spread(hb.readinessGets, int)} against ${spread(un.readinessGets, int)}.`
  );
}

/** Time against the waves, and what an instant reconciler would reach against them on this workload. */
function wavesTimeSentence(r: BenchResult, t: Target, hb: ModeFigures, waves: ModeFigures, jitter: ModeFigures | undefined): string {
  const ideal = median(paired(r, 'heartbeat', 'waves', (c) => (c.mode === 'heartbeat' ? c.serviceBoundMs : c.apply.wallMs)));
  const room = median(hb.bound) * (t.target / ideal - 1);
  const jitterRatio = jitter ? spread(paired(r, 'heartbeat', 'waves-jitter', (c) => c.apply.wallMs), (x) => ratio(x)) : null;
  return (
    `- ${head(t)} The waves baseline reacted ${s(quantile(waves.reactions, 0.5))} per level (median, p90 ${s(quantile(waves.reactions, 0.9))}) against the product's ${s(quantile(hb.reactions, 0.5))}. ` +
    `A reconciler that reacted instantly would reach ${ratio(ideal)} of the waves' time (the product's lower bound over the waves' convergence, per repetition), so the target ${t.target} leaves ${s(room)} above the bound; the product used ${s(median(hb.wall) - median(hb.bound))}.` +
    (jitterRatio ? ` Against the waves with jitter (\`waves-jitter\`, ${spread(jitter?.wall ?? [], s)}) the product measured ${jitterRatio}.` : '')
  );
}

/** Requests against the waves, by what made them. */
function wavesRequestsSentence(t: Target, hb: ModeFigures, waves: ModeFigures): string {
  const by = (f: ModeFigures) =>
    [...new Set(f.runs.flatMap((c) => Object.keys(c.apply.byPurpose)))]
      .map((k) => [k, perPurpose(f, k)] as const)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${v.toFixed(0)}`)
      .join(', ');
  return `- ${head(t)} Per run the product made ${spread(hb.requests, int)} requests (${by(hb)}); the waves baseline ${spread(waves.requests, int)} (${by(waves)}).`;
}

function noopSentence(r: BenchResult, t: Target, hb: ModeFigures, waves: ModeFigures): string {
  const n = r.throughput.noop;
  return `- ${head(t)} A no-op re-apply made ${spread(hb.noopRequests, int)} requests and ${spread(hb.noopWrites, int)} writes; the no-op full resync of the fleet ${n.requests} requests (${(n.requests / r.throughput.services).toFixed(1)} per service) and ${n.mutations} writes. The waves baseline needed ${spread(waves.noopRequests, int)} requests for the same no-op.`;
}

/** One bullet per target, each stating the measured figures behind it. */
export function targetsProse(r: BenchResult, sm: Summary, figs: readonly ModeFigures[]): string {
  const get = (n: ModeName) => figs.find((f) => f.mode.name === n);
  const hb = get('heartbeat') as ModeFigures;
  const waves = get('waves') as ModeFigures;
  const target = (key: string) => sm.targets.find((x) => x.key === key) as Target;
  const unwatched = get('unwatched');
  return [
    boundSentence(target('convergence_vs_bound'), hb) + (unwatched ? `\n${watchSentence(hb, unwatched)}` : ''),
    wavesTimeSentence(r, target('convergence_vs_waves'), hb, waves, get('waves-jitter')),
    wavesRequestsSentence(target('requests_vs_waves'), hb, waves),
    noopSentence(r, target('noop_writes'), hb, waves),
  ].join('\n');
}

/** Heartbeat polling against retry-based polling: what was measured and which was faster. Empty without both. */
export function pollingVerdict(r: BenchResult, figs: readonly ModeFigures[]): string {
  const get = (n: ModeName) => figs.find((f) => f.mode.name === n);
  const hb = get('heartbeat');
  const retry = get('retry');
  const fast = get('retry-fast');
  if (!hb || !retry || !fast) return '';
  const fastRatio = median(paired(r, 'retry-fast', 'heartbeat', (c) => c.apply.wallMs));
  const slowRatio = median(paired(r, 'retry', 'heartbeat', (c) => c.apply.wallMs));
  const getShare = median(fast.readinessGets) / median(hb.readinessGets);
  const modes = [hb, retry, fast];
  const sameEvents = new Set(modes.map((f) => median(f.eventsApply))).size === 1;
  const verdict =
    fastRatio >= 1
      ? `Polling inside the heartbeating activity was the fastest: retry-based polling took ${pct(fastRatio - 1)} longer at its fastest schedule and ${pct(slowRatio - 1)} longer on the spec's default policy, for ${pct(getShare)} of the heartbeat's readiness GETs.`
      : `Retry-based polling at its fastest schedule was faster than the heartbeat in this run (${ratio(fastRatio)}x its time, ${pct(getShare)} of its readiness GETs): the choice of polling inside the heartbeating activity should be measured again.`;
  return [
    `Measured on the core workload (medians, min-max): ${modes.map((f) => `\`${f.mode.name}\` ${spread(f.wall, s)}, ${spread(f.requests, int)} Engine requests of which ${spread(f.readinessGets, int)} readiness GETs, reaction per level ${s(median(f.reactions))}`).join('; ')}.`,
    `History events per reconcileLoadBalancer: ${modes.map((f) => `${spread(f.eventsApply, int)}`).join(' / ')}${sameEvents ? ' (the same for all three)' : ''}. Poll gaps (s): \`heartbeat\` ${gapsText(hb)}; \`retry-fast\` ${gapsText(fast)}; \`retry\` ${gapsText(retry)}.`,
    verdict,
  ].join('\n\n');
}

/** How busy the machine was during the throughput apply, and whether the figure measures the box or the code. */
export function throughputNote(r: BenchResult): string {
  const t = r.throughput;
  const cap = r.machine.cpus * (t.apply.wallMs / 1000);
  const busy = t.apply.machineBusySeconds / cap;
  const top = Object.entries(t.apply.cpuSeconds).sort((a, b) => b[1] - a[1])[0];
  // Above this share of all CPUs the run waited for CPU more than for anything else.
  const cpuBound = busy > 0.85;
  return `During the apply the machine's CPUs were ${pct(busy)} busy${top ? `; the largest single consumer was ${top[0]} (${top[1].toFixed(1)} CPU s, ${pct(top[1] / cap)} of the machine)` : ''}.${
    cpuBound ? ` The run was CPU-bound: the Temporal dev server, the worker and the simulator shared ${r.machine.cpus} CPUs (with any other work), so services per minute measure this machine, not a limit of the orchestrator.` : ''
  }`;
}
