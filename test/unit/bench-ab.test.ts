/**
 * The same-run A/B of the latency mechanisms (bench/report-ab.ts): differences are paired by repetition, judged by an
 * exact sign test, and the section it writes into docs/benchmarks.md replaces its previous version and survives a
 * full benchmark's rewrite (bench/kept-sections.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AB_MECHANISMS, type CoreRun, type ModeName } from '../../bench/core';
import { AB_MARK, REMOVED_MARK, SUITE_TIME_MARK, withKeptSections, withSection } from '../../bench/kept-sections';
import { abMarkdown, abRows, abSummary, recommendation, signTestP } from '../../bench/report-ab';

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
  const md = abMarkdown(rows, { command: 'npm run bench -- --core --reps 8', revision: 'abc1234', reps: 8, seed: 42, date: '2026-11-26 19:20 UTC', machine: '2 CPUs', busy: true });
  assert.ok(md.startsWith(AB_MARK.begin) && md.endsWith(AB_MARK.end));
  assert.match(md, /`npm run bench -- --core --reps 8` at abc1234, 8 repetitions, seed 42/);
  assert.match(md, /\nOther work shared the machine \(load above its CPU count\)/);
  assert.match(md, /\nThe default worker in this run: 1\.10x the lower bound and 150 Engine requests \(medians; targets: at most 1\.10x and 170\)\.\n/);
  assert.doesNotMatch(abMarkdown(rows, { command: 'c', revision: 'r', reps: 8, seed: 42, date: 'd', machine: 'm', busy: false }), /Other work/);
  assert.ok(md.includes('| learned deploy-time quantiles (activities/deploy-times.ts) (`prior`) | every deploy polled on the fixed prior schedule: 250 ms, then gaps x 1.25 up to 500 ms | convergence / bound | 1.10 | 1.10 | 0.00 (-0.10 to +0.10) | 4 / 4 | 1.000 | within noise |\n'));
  assert.ok(md.includes('\n|  |  | Engine requests | 150 | 230 | +80 (+80 to +80) | 8 / 0 | 0.008 | buys |\n'));
  assert.ok(md.includes('- learned deploy-time quantiles (activities/deploy-times.ts): keep: it buys Engine requests, readiness GETs per object (mean).'));
  assert.deepEqual(AB_MECHANISMS.map((m) => m.mode), ['prior', 'no-recent-reads']);
});

test('the A/B section replaces its previous version, goes before the test suite section, and a full rewrite keeps it', () => {
  const section = (n: number) => `${AB_MARK.begin}\nrun ${n}\n${AB_MARK.end}`;
  const suite = `${SUITE_TIME_MARK.begin}\nsuite\n${SUITE_TIME_MARK.end}`;
  const doc = `# Benchmarks\n\nbody\n\n${suite}\n`;
  const once = withSection(doc, AB_MARK, section(1));
  assert.equal(once, `# Benchmarks\n\nbody\n\n${section(1)}\n\n${suite}\n`);
  const twice = withSection(once, AB_MARK, section(2));
  assert.equal(twice, `# Benchmarks\n\nbody\n\n${section(2)}\n\n${suite}\n`);
  assert.equal(withSection('# B\n', AB_MARK, section(3)), `# B\n\n${section(3)}\n`);
  // `npm run bench` renders the file anew: both kept sections come back, in order, once.
  const rewritten = withKeptSections('# Benchmarks\n\nnew body\n', twice);
  assert.equal(rewritten, `# Benchmarks\n\nnew body\n\n${section(2)}\n\n${suite}\n`);
  assert.equal(withKeptSections(rewritten, rewritten), rewritten);
});

test('a full rewrite keeps the hand-written removed mechanisms between the A/B and the test suite sections', () => {
  const ab = `${AB_MARK.begin}\nab\n${AB_MARK.end}`;
  const removed = `${REMOVED_MARK.begin}\nremoved by hand\n${REMOVED_MARK.end}`;
  const suite = `${SUITE_TIME_MARK.begin}\nsuite\n${SUITE_TIME_MARK.end}`;
  const previous = `# Benchmarks\n\nold body\n\n${ab}\n\n${removed}\n\n${suite}\n`;
  const rewritten = withKeptSections('# Benchmarks\n\nnew body\n', previous);
  assert.equal(rewritten, `# Benchmarks\n\nnew body\n\n${ab}\n\n${removed}\n\n${suite}\n`);
  // A --core run replaces only the A/B section; the hand-written one stays where it was.
  assert.equal(withSection(rewritten, AB_MARK, `${AB_MARK.begin}\nab 2\n${AB_MARK.end}`), rewritten.replace('\nab\n', '\nab 2\n'));
});
