/**
 * The memory profile of a fleet run (`node dist/bench/fleet-run.js --memory-profile FILE`): every second, where the
 * worker process's resident memory is, read from /proc/<pid>/smaps, beside the worker's own `memory` lines
 * (dev/memory-probe.ts: the main thread's and the workflow thread's V8 heaps). The smaps mappings are sorted into:
 *
 * - `brk`: the `[heap]` mapping, the C library's main malloc arena;
 * - `arenas`: anonymous mappings that make up a 64 MiB-aligned 64 MiB region, the C library's other malloc arenas
 *   (one per thread that allocated while the others were busy, up to 8 per CPU unless MALLOC_ARENA_MAX says less);
 * - `otherAnon`: every other anonymous mapping: the V8 heaps of both threads, large allocations malloc maps on their
 *   own, thread stacks;
 * - `file`: mapped files (node, the SDK's native library, other libraries).
 *
 * Native memory outside V8 (the SDK's Rust core, buffers, the C library's free lists) is then about
 * brk + arenas + otherAnon - the two V8 heaps' committed sizes.
 */
import { readFileSync } from 'node:fs';

const ARENA_BYTES = 64 * 2 ** 20;

export interface SmapsSample {
  t: number;
  rssMiB: number;
  brkMiB: number;
  arenas: number;
  arenasMiB: number;
  otherAnonMiB: number;
  fileMiB: number;
}

/** The resident memory of `pid` by kind of mapping, or null when it cannot be read. */
export function smapsSample(pid: number): SmapsSample | null {
  try {
    return { t: Date.now(), ...parseSmaps(readFileSync(`/proc/${pid}/smaps`, 'utf8')) };
  } catch {
    return null;
  }
}

/** Resident memory by kind of mapping in the text of a /proc/<pid>/smaps file, in MiB. */
export function parseSmaps(text: string): Omit<SmapsSample, 't'> {
  const maps: { start: number; end: number; name: string; rss: number }[] = [];
  for (const line of text.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      maps.push({ start: parseInt(head[1] as string, 16), end: parseInt(head[2] as string, 16), name: (head[3] ?? '').trim(), rss: 0 });
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    const last = maps[maps.length - 1];
    if (rss && last) last.rss = Number(rss[1]) * 1024;
  }
  let brk = 0;
  let file = 0;
  let anon = 0;
  let arenas = 0;
  let arenaRss = 0;
  for (let i = 0; i < maps.length; i++) {
    const m = maps[i] as (typeof maps)[number];
    if (m.name === '[heap]') brk += m.rss;
    else if (m.name.startsWith('/')) file += m.rss;
    else if (m.name === '') {
      // An arena: anonymous mappings from a 64 MiB-aligned start, adjacent, 64 MiB in all (the used part and its reserve).
      if (m.start % ARENA_BYTES === 0) {
        let j = i;
        let rss = 0;
        while (j < maps.length && (maps[j] as (typeof maps)[number]).name === '' && (j === i || (maps[j] as (typeof maps)[number]).start === (maps[j - 1] as (typeof maps)[number]).end)) {
          rss += (maps[j] as (typeof maps)[number]).rss;
          if ((maps[j] as (typeof maps)[number]).end - m.start >= ARENA_BYTES) break;
          j++;
        }
        const last = maps[Math.min(j, maps.length - 1)] as (typeof maps)[number];
        if (last.end - m.start === ARENA_BYTES) {
          arenas++;
          arenaRss += rss;
          i = j;
          continue;
        }
      }
      anon += m.rss;
    } else anon += m.rss; // [stack], [anon:...] and the like
  }
  const mib = (n: number) => Math.round(n / 2 ** 20);
  return { rssMiB: mib(brk + file + anon + arenaRss), brkMiB: mib(brk), arenas, arenasMiB: mib(arenaRss), otherAnonMiB: mib(anon), fileMiB: mib(file) };
}

/** A worker's `memory {...}` lines (dev/memory-probe.ts) in its output, oldest first. */
export function memoryLines(output: string): Record<string, number>[] {
  const lines: Record<string, number>[] = [];
  for (const m of output.matchAll(/^memory (\{.*\})$/gm)) {
    try {
      lines.push(JSON.parse(m[1] as string) as Record<string, number>);
    } catch {
      // A line cut by another process's output: skipped.
    }
  }
  return lines;
}

export interface PhaseMemory {
  phase: string;
  /** The smaps sample of the phase's highest RSS, and the worker's memory line closest to it in time. */
  peak: SmapsSample | null;
  worker: Record<string, number> | null;
  /** The workflow thread's highest committed heap in the phase, MiB. */
  workflowHeapMaxMiB: number;
  /** brk + arenas + otherAnon - both V8 heaps' committed size at the peak: memory outside V8, MiB. */
  nativeMiB: number;
}

/** Each phase's peak, from samples and memory lines and the phases' start times (the last phase ends at the last sample). */
export function phasePeaks(samples: SmapsSample[], lines: Record<string, number>[], phases: { name: string; startedAt: number }[]): PhaseMemory[] {
  return phases.map((p, i) => {
    const end = phases[i + 1]?.startedAt ?? Infinity;
    const inPhase = samples.filter((s) => s.t >= p.startedAt && s.t < end);
    const peak = inPhase.reduce<SmapsSample | null>((a, s) => (a === null || s.rssMiB > a.rssMiB ? s : a), null);
    const wl = lines.filter((l) => (l.t ?? 0) >= p.startedAt && (l.t ?? 0) < end);
    const near = peak ? wl.reduce<Record<string, number> | null>((a, l) => (a === null || Math.abs((l.t ?? 0) - peak.t) < Math.abs((a.t ?? 0) - peak.t) ? l : a), null) : null;
    const native = peak && near ? peak.brkMiB + peak.arenasMiB + peak.otherAnonMiB - (near.heapTotal ?? 0) - (near.workflowHeapTotal ?? 0) : NaN;
    return { phase: p.name, peak, worker: near, workflowHeapMaxMiB: Math.max(0, ...wl.map((l) => l.workflowHeapTotal ?? 0)), nativeMiB: Math.round(native) };
  });
}

/** One line per phase: the peak and what it was made of. */
export function phaseMemoryText(p: PhaseMemory): string {
  const s = p.peak;
  const w = p.worker;
  if (!s) return `${p.phase}: no sample`;
  return (
    `${p.phase}: peak RSS ${s.rssMiB} MiB = brk ${s.brkMiB} + ${s.arenas} malloc arenas ${s.arenasMiB} + other anonymous ${s.otherAnonMiB} + files ${s.fileMiB}; ` +
    `V8 committed: main ${w?.heapTotal ?? '?'} (used ${w?.heapUsed ?? '?'}), workflow thread ${w?.workflowHeapTotal ?? '?'} (used ${w?.workflowHeapUsed ?? '?'}, phase max ${p.workflowHeapMaxMiB}); ` +
    `external ${w?.external ?? '?'} (array buffers ${w?.arrayBuffers ?? '?'}); outside V8 about ${p.nativeMiB} MiB`
  );
}
