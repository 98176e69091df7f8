/**
 * The same-run A/B of the latency mechanisms (bench/report-ab.ts): differences are paired by repetition, judged by an
 * exact sign test, and the `bench:ab` section of docs/benchmarks.md is the run and those figures in one table.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AB_MECHANISMS, type CoreRun, type ModeName } from '../../bench/core';
import { abRows, abSection, abSummary, recommendation, signTestP } from '../../bench/report-ab';

/** One run: `wallMs` against a 4 s bound, `requests`, readiness GETs per object as given, 70 history events per LB. */
function run(mode: ModeName, rep: number, wallMs: number, requests: number, polls: number[]): CoreRun {
  const phase = { wallMs, requests, mutations: 28, byRoute: {}, byPurpose: {}, latencyMedianMs: 2, pollGaps: [], pollsPerObject: polls, events: { service: 20, perLoadBalancer: { a: 70, b: 70 } } };
  return { mode, rep, seed: 100 + rep, serviceUid: `u-${mode}-${rep}`, apply: phase, noop: { ...phase, requests: 29, mutations: 0 }, loadBalancers: [], serviceBoundMs: 4000 };
}

test('the sign test: all of n pairs one way gives 2/2^n, an even split 1, ties are dropped', () => {
  assert.equal(signTestP([1, 1, 1, 1, 1]), 2 / 32);
  assert.equal(signTestP([3, 2, 1, 4, 5, 6]), 2 / 64);
  assert.equal(signTestP([1, -1, 0, 0]), 1);
  assert.equal(signTestP([0, 0]), 1);
  // 7 up, 1 down: 2 * (C(8,0) + C(8,1)) / 256.
  assert.equal(signTestP([1, 1, 1, 1, 1, 1, 1, -1]), (2 * 9) / 256);
});

test('rows pair each mechanism-off mode with the default by repetition; a clear difference buys, a coin-flip one is noise', () => {
  const core: CoreRun[] = [];
  for (let rep = 0; rep < 8; rep++) {
    // The default converges in 4.4 s with 150 requests; without learned quantiles every repetition costs 80 requests
    // more, and convergence is 0.4 s slower or faster by turns (noise).
    core.push(run('heartbeat', rep, 4400, 150, [2, 3]));
    core.push(run('prior', rep, rep % 2 === 0 ? 4800 : 4000, 230, [5, 6]));
  }
  // A mode that did not run has no row; a run of a repetition the default lacks is not paired.
  core.push(run('no-recent-reads', 99, 4400, 170, [2, 3]));
  const rows = abRows(core);
  assert.deepEqual(
    rows.map((r) => [r.mode, r.pairs]),
    [['prior', 8]],
  );
  const [row] = rows;
  const cell = (name: string) => row?.cells.find((c) => c.metric.startsWith(name));
  assert.deepEqual({ ...cell('Engine requests') }, { metric: 'Engine requests', on: 150, off: 230, diff: { median: 80, min: 80, max: 80 }, worse: 8, better: 0, p: 2 / 256, digits: 0 });
  assert.equal(cell('readiness GETs')?.diff.median, 3);
  const ratio = cell('convergence');
  assert.equal(ratio?.worse, 4);
  assert.equal(ratio?.better, 4);
  assert.equal(ratio?.p, 1);
  assert.equal(cell('history events')?.p, 1, 'all ties');
  assert.equal(recommendation(row as NonNullable<typeof row>), 'keep: it buys Engine requests, readiness GETs per object (mean)');
  assert.equal(abSummary(rows), 'ab: prior off_minus_default bound_ratio=0.00 requests=+80 gets_per_object=+3.00 events_per_lb=0');
  const md = abSection(rows, { command: 'npm run bench -- --core --reps 8', revision: 'abc1234', reps: 8, seed: 42, date: '2026-11-26 19:20 UTC', machine: '2 CPUs', load: { start: [3.9, 4.1, 7.1], end: [0.1, 0.8, 4.1] } });
  assert.ok(md.startsWith('| run |  |\n|---|---|\n| command | `npm run bench -- --core --reps 8` |\n| commit | abc1234 |\n| date | 2026-11-26 19:20 UTC |\n'));
  assert.ok(md.includes('| load average | 3.9/4.1/7.1 at start, 0.1/0.8/4.1 at end |\n| seed, repetitions (pairs) | 42, 8 |\n'));
  assert.ok(md.includes('| learned deploy-time quantiles (activities/deploy-times.ts) (`prior`) | every deploy polled on the fixed prior schedule: 250 ms, then gaps x 1.25 up to 500 ms | convergence / bound | 1.10 | 1.10 | 0.00 (-0.10 to +0.10) | 4 / 4 | 1.000 | within noise |\n'));
  assert.ok(md.includes('\n|  |  | Engine requests | 150 | 230 | +80 (+80 to +80) | 8 / 0 | 0.008 | buys |\n'));
  // Figures only: the verdicts are the table's last column, no sentence follows it.
  assert.deepEqual(md.split('\n').filter((l) => l !== '' && !l.startsWith('|')), []);
  assert.deepEqual(AB_MECHANISMS.map((m) => m.mode), ['prior', 'no-recent-reads']);
});
