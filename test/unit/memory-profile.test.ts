/**
 * The fleet run's memory profile (bench/memory-profile.ts): smaps mappings sorted into the main malloc arena, the other
 * arenas (64 MiB-aligned 64 MiB regions), other anonymous memory and files; each phase's peak with the worker's memory
 * line nearest to it, and the memory outside V8 derived from both.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { memoryLines, parseSmaps, phasePeaks, type SmapsSample } from '../../bench/memory-profile';

const MIB = 2 ** 20;
/** One smaps entry: its address range, name and resident size. */
const entry = (start: number, sizeMiB: number, perms: string, name: string, rssMiB: number) =>
  `${start.toString(16)}-${(start + sizeMiB * MIB).toString(16)} ${perms} 00000000 00:00 0${name ? `          ${name}` : ''}\nSize:            ${sizeMiB * 1024} kB\nRss:             ${rssMiB * 1024} kB\nPss:             ${rssMiB * 1024} kB\n`;

test('smaps: [heap] is the main arena, an aligned 64 MiB pair of anonymous mappings an arena, the rest anonymous or files', () => {
  const arena = 0x7f0000000000; // 64 MiB-aligned
  const text = [
    entry(0x400000, 90, 'r-xp', '/usr/bin/node', 40),
    entry(0x6000000, 12, 'rw-p', '[heap]', 10),
    entry(arena, 20, 'rw-p', '', 18), // an arena's used part ...
    entry(arena + 20 * MIB, 44, '---p', '', 0), // ... and its reserve: 64 MiB in all
    entry(arena + 64 * MIB, 64, 'rw-p', '', 30), // a second arena, one mapping
    entry(arena + 200 * MIB + 4096, 64, 'rw-p', '', 50), // 64 MiB but not aligned: a V8 or mmap'd region
    entry(arena + 300 * MIB, 8, 'rw-p', '[stack]', 1),
    entry(arena + 400 * MIB, 2, 'r--p', '/usr/lib/libc.so.6', 2),
  ].join('');
  assert.deepEqual(parseSmaps(text), { rssMiB: 151, brkMiB: 10, arenas: 2, arenasMiB: 48, otherAnonMiB: 51, fileMiB: 42 });
});

test('each phase peak is its highest RSS sample with the nearest worker line; outside V8 = brk + arenas + other anonymous - both heaps', () => {
  const s = (t: number, rssMiB: number): SmapsSample => ({ t, rssMiB, brkMiB: 50, arenas: 2, arenasMiB: 60, otherAnonMiB: rssMiB - 170, fileMiB: 60 });
  const samples = [s(1000, 500), s(2000, 700), s(3000, 600), s(4000, 900), s(5000, 800)];
  const lines = memoryLines(
    [
      'other output',
      'memory {"t":1900,"rss":690,"heapUsed":90,"heapTotal":150,"external":5,"arrayBuffers":2,"workflowHeapUsed":200,"workflowHeapTotal":300}',
      'memory {"t":4100,"rss":880,"heapUsed":80,"heapTotal":180,"external":5,"arrayBuffers":2,"workflowHeapUsed":250,"workflowHeapTotal":400}',
      'memory {cut',
    ].join('\n'),
  );
  assert.equal(lines.length, 2);
  const peaks = phasePeaks(samples, lines, [
    { name: 'apply', startedAt: 0 },
    { name: 'delete', startedAt: 3500 },
  ]);
  assert.deepEqual(
    peaks.map((p) => [p.phase, p.peak?.rssMiB, p.worker?.t, p.workflowHeapMaxMiB, p.nativeMiB]),
    [
      // apply: 700 MiB at t=2000; 50 + 60 + 530 - 150 - 300 = 190
      ['apply', 700, 1900, 300, 190],
      // delete: 900 MiB at t=4000; 50 + 60 + 730 - 180 - 400 = 260
      ['delete', 900, 4100, 400, 260],
    ],
  );
});
