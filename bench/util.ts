/** Small helpers shared by the benchmark: statistics, formatting, process memory. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Linear-interpolated quantile; NaN for no values. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const a = s[lo] as number;
  const b = s[hi] as number;
  return a + (b - a) * (pos - lo);
}

export const median = (values: readonly number[]) => quantile(values, 0.5);
export const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);
export const mean = (values: readonly number[]) => (values.length === 0 ? NaN : sum(values) / values.length);

/** Seconds with `digits` decimals. */
export const secs = (ms: number, digits = 2) => (Number.isFinite(ms) ? (ms / 1000).toFixed(digits) : 'n/a');
export const ratio = (x: number, digits = 2) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');
export const mib = (bytes: number) => (Number.isFinite(bytes) ? `${(bytes / 2 ** 20).toFixed(0)} MiB` : 'n/a');
export const int = (x: number) => (Number.isFinite(x) ? String(Math.round(x)) : 'n/a');

/** "min-max (median m)" of a list, in the given unit formatter. */
export function spread(values: readonly number[], fmt: (x: number) => string): string {
  if (values.length === 0) return 'n/a';
  if (values.length === 1) return fmt(values[0] as number);
  return `${fmt(median(values))} (${fmt(Math.min(...values))}-${fmt(Math.max(...values))})`;
}

export interface ProcMemory {
  /** Current resident set. */
  rssBytes: number;
  /** Peak resident set since the process started (VmHWM). */
  hwmBytes: number;
}

/** Resident and peak resident memory of a process, from /proc (Linux); null where /proc is not available. */
export function procMemory(pid: number): ProcMemory | null {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => {
      const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text);
      return m ? Number(m[1]) * 1024 : NaN;
    };
    return { rssBytes: kb('VmRSS'), hwmBytes: kb('VmHWM') };
  } catch {
    return null;
  }
}

/** Runs `fn` over `items` with at most `limit` in flight; results keep the input order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const run = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
  return results;
}

let clockTicks: number | null = null;
function ticksPerSecond(): number {
  if (clockTicks === null) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** CPU seconds (user + system) a process has used so far; NaN where /proc is not available. */
export function procCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of proc(5) (utime, stime) are 11 and 12 after the command name.
    return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond();
  } catch {
    return NaN;
  }
}

/** Busy and total CPU seconds of the whole machine so far (all processes, all CPUs), from /proc/stat. */
export function machineCpuSeconds(): { busy: number; total: number } {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    const total = sum(v.slice(0, 8));
    const idle = (v[3] ?? 0) + (v[4] ?? 0);
    return { busy: (total - idle) / ticksPerSecond(), total: total / ticksPerSecond() };
  } catch {
    return { busy: NaN, total: NaN };
  }
}

/** The rooms whose code a benchmark measures: uncommitted changes in them are named in its report. */
export const PRODUCT_ROOMS = ['activities', 'workflows', 'worker', 'client', 'common', 'domain', 'dev', 'cli', 'simulator', 'bench'];

/**
 * The paths of `git status --porcelain` output (`XY path`, or `XY old -> new` for a rename: the new path). The status
 * columns may start with a space, so the output must not be trimmed at the front.
 */
export function porcelainPaths(output: string): string[] {
  return output
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => l.slice(3).split(' -> ').pop() as string);
}
