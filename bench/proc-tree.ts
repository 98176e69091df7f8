/**
 * CPU time of process trees, for the cluster benchmarks (bench/cluster.ts, bench/cluster-lifecycle.ts): PostgreSQL
 * works in backends that are children of its postmaster, so a server's CPU is its whole tree's.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { procCpuSeconds } from './util';

/** A process and all its descendants (PostgreSQL's work happens in its backends, children of the postmaster). */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // Gone in between.
    }
  }
  const out: number[] = [];
  const walk = (pid: number) => {
    out.push(pid);
    for (const c of children.get(pid) ?? []) walk(c);
  };
  walk(root);
  return out;
}

/**
 * CPU seconds of a set of processes and their descendants. A backend that exits during the run takes its CPU time
 * with it unless its parent reaped it (then it is in the parent's cutime, which /proc/<pid>/stat fields 16-17 hold).
 */
export function treeCpuSeconds(roots: number[]): number {
  let total = 0;
  for (const root of roots) for (const pid of processTree(root)) total += procCpuSeconds(pid) + reapedChildrenCpu(pid);
  return total;
}

let ticks = 0;
function clockTicks(): number {
  if (!ticks) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

function reapedChildrenCpu(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[13]) + Number(f[14])) / clockTicks();
  } catch {
    return 0;
  }
}
