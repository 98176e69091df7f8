/**
 * What each latency mechanism buys (`npm run bench -- --core`): the default worker against the same worker with one
 * mechanism off (AB_MECHANISMS in bench/core.ts), both run in every repetition on the same seed. A difference is taken
 * per repetition (off minus default, same seed) and reported as its median with its range over the repetitions; a
 * mechanism buys something on a metric only where an exact sign test of those differences says the split between
 * worse and better repetitions is not chance (p < SIGNIFICANCE).
 */
import { AB_MECHANISMS, type CoreRun, type ModeName } from './core';
import { factTable, loadText, mdTable } from './publish';
import { mean, median } from './util';

interface Metric {
  name: string;
  /** Lower is better for every metric here. */
  of(c: CoreRun): number;
  digits: number;
}

export const AB_METRICS: readonly Metric[] = [
  { name: 'convergence / bound', of: (c) => c.apply.wallMs / c.serviceBoundMs, digits: 2 },
  { name: 'Engine requests', of: (c) => c.apply.requests, digits: 0 },
  { name: 'readiness GETs per object (mean)', of: (c) => mean(c.apply.pollsPerObject ?? []), digits: 2 },
  { name: 'history events per LB run', of: (c) => median(Object.values(c.apply.events?.perLoadBalancer ?? {})), digits: 0 },
];

export interface AbCell {
  metric: string;
  /** Medians over the repetitions. */
  on: number;
  off: number;
  /** Per repetition off minus on: median, min, max. */
  diff: { median: number; min: number; max: number };
  /** Pairs where turning the mechanism off made the metric worse (higher), better (lower). */
  worse: number;
  better: number;
  /** signTestP of the differences. */
  p: number;
  digits: number;
}

export interface AbRow {
  mechanism: string;
  mode: ModeName;
  off: string;
  pairs: number;
  cells: AbCell[];
}

/** One row per mechanism whose mode ran beside `heartbeat`, paired by repetition. */
export function abRows(core: readonly CoreRun[]): AbRow[] {
  const on = new Map(core.filter((c) => c.mode === 'heartbeat').map((c) => [c.rep, c]));
  return AB_MECHANISMS.flatMap((m) => {
    const pairs = core.filter((c) => c.mode === m.mode && on.has(c.rep)).map((c) => [on.get(c.rep) as CoreRun, c] as const);
    if (pairs.length === 0) return [];
    const cells = AB_METRICS.map((metric) => {
      const diffs = pairs.map(([a, b]) => metric.of(b) - metric.of(a));
      return {
        metric: metric.name,
        on: median(pairs.map(([a]) => metric.of(a))),
        off: median(pairs.map(([, b]) => metric.of(b))),
        diff: { median: median(diffs), min: Math.min(...diffs), max: Math.max(...diffs) },
        worse: diffs.filter((d) => d > 0).length,
        better: diffs.filter((d) => d < 0).length,
        p: signTestP(diffs),
        digits: metric.digits,
      };
    });
    return [{ mechanism: m.mechanism, mode: m.mode, off: m.off, pairs: pairs.length, cells }];
  });
}

/** Fixed digits; a value that rounds to zero prints without a sign (a float median of +-0.05 is not "-0.00"). */
const num = (x: number, digits: number) => (!Number.isFinite(x) ? 'n/a' : Number(x.toFixed(digits)) === 0 ? (0).toFixed(digits) : x.toFixed(digits));
const pText = (p: number) => (p < 0.001 ? '<0.001' : p.toFixed(3));
const signed = (x: number, digits: number) => (Number(num(x, digits)) > 0 ? `+${num(x, digits)}` : num(x, digits));

/**
 * Two-sided exact sign test of paired differences (ties dropped): the probability of a split at least this uneven
 * between worse and better repetitions if the mechanism changed nothing. No assumption about the noise's shape.
 */
export function signTestP(diffs: readonly number[]): number {
  const up = diffs.filter((d) => d > 0).length;
  const down = diffs.filter((d) => d < 0).length;
  const n = up + down;
  if (n === 0) return 1;
  let tail = 0;
  let c = 1; // C(n, 0)
  for (let i = 0; i <= Math.min(up, down); i++) {
    tail += c;
    c = (c * (n - i)) / (i + 1);
  }
  return Math.min(1, (2 * tail) / 2 ** n);
}

/** Above this p the difference is within the run's noise. */
export const SIGNIFICANCE = 0.05;

/** Whether the mechanism's effect on a metric is above the noise: off worse in significantly many pairs, or better. */
export function verdict(c: AbCell): 'buys' | 'costs' | 'within noise' {
  if (c.p >= SIGNIFICANCE) return 'within noise';
  return c.diff.median > 0 ? 'buys' : c.diff.median < 0 ? 'costs' : 'within noise';
}

/** From the verdicts: keep what buys and costs nothing, weigh a trade-off, and name what buys nothing measurable. */
export function recommendation(r: AbRow): string {
  const buys = r.cells.filter((c) => verdict(c) === 'buys').map((c) => c.metric);
  const costs = r.cells.filter((c) => verdict(c) === 'costs').map((c) => c.metric);
  if (buys.length === 0 && costs.length === 0) return "remove: no gain above this run's noise";
  if (buys.length === 0) return `remove: it only costs (${costs.join(', ')})`;
  if (costs.length === 0) return `keep: it buys ${buys.join(', ')}`;
  return `trade-off: buys ${buys.join(', ')}; costs ${costs.join(', ')}`;
}

function cellText(c: AbCell): string {
  return `${num(c.on, c.digits)} vs ${num(c.off, c.digits)}: ${signed(c.diff.median, c.digits)} (${signed(c.diff.min, c.digits)} to ${signed(c.diff.max, c.digits)}), off worse in ${c.worse}/${c.worse + c.better} pairs, p ${pText(c.p)}: ${verdict(c)}`;
}

/** The table on stdout. */
export function abText(rows: readonly AbRow[]): string {
  const out = ['what each mechanism buys: default vs mechanism off, median; off minus default per repetition: median (min to max)'];
  for (const r of rows) {
    out.push(`  ${r.mechanism} [mode ${r.mode}, ${r.pairs} pairs]: ${recommendation(r)}`);
    for (const c of r.cells) out.push(`    ${c.metric.padEnd(34)} ${cellText(c)}`);
  }
  return out.join('\n');
}

/** One summary line per mechanism: the median differences (off minus default). */
export function abSummary(rows: readonly AbRow[]): string {
  return rows
    .map((r) => {
      const [ratio, requests, gets, events] = r.cells.map((c) => signed(c.diff.median, c.digits));
      return `ab: ${r.mode} off_minus_default bound_ratio=${ratio} requests=${requests} gets_per_object=${gets} events_per_lb=${events}`;
    })
    .join('\n');
}

export interface AbRunInfo {
  command: string;
  revision: string;
  reps: number;
  seed: number;
  date: string;
  machine: string;
  load: { start: number[]; end: number[] };
}

/** The `bench:ab` section of docs/benchmarks.md: the run, then per mechanism and metric the paired differences. */
export function abSection(rows: readonly AbRow[], info: AbRunInfo): string {
  const run = factTable([
    ['command', `\`${info.command}\``],
    ['commit', info.revision],
    ['date', info.date],
    ['machine', info.machine],
    ['load average', loadText(info.load.start, info.load.end)],
    ['seed, repetitions (pairs)', `${info.seed}, ${info.reps}`],
  ]);
  const table = mdTable(
    ['mechanism (mode with it off)', 'what off means', 'metric', 'default', 'off', 'off minus default: median (min to max)', 'off worse / better (pairs)', 'sign test p', 'verdict'],
    rows.flatMap((r) =>
      r.cells.map((c, i) => [
        ...(i === 0 ? [`${r.mechanism} (\`${r.mode}\`)`, r.off] : ['', '']),
        c.metric,
        num(c.on, c.digits),
        num(c.off, c.digits),
        `${signed(c.diff.median, c.digits)} (${signed(c.diff.min, c.digits)} to ${signed(c.diff.max, c.digits)})`,
        `${c.worse} / ${c.better}`,
        pText(c.p),
        verdict(c),
      ]),
    ),
  );
  return `${run}\n\n${table}`;
}
