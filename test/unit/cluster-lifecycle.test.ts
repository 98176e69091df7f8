/**
 * The cluster lifecycle benchmark's report (bench/cluster-lifecycle-report.ts) from a synthetic run: the summary line's
 * figures, the projections derived from the per-service costs, its results and tables published into the
 * `bench:lifecycle` section of a copy of docs/scaling.md with the rest of the file untouched; and its arguments
 * (bench/cluster-lifecycle.ts) refused with the flag named.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { lifecycleSection, summaryLine, type LifecyclePhase, type LifecycleResult } from '../../bench/cluster-lifecycle-report';
import { publish } from '../../bench/publish';
import { parseLifecycle } from '../../bench/cluster-lifecycle';

const MIB = 2 ** 20;
const phase = (name: string, wallS: number, requests: number, temporalCpuS: number, workerCpuS: number, events: number): LifecyclePhase => ({
  name,
  wallMs: wallS * 1000,
  requests,
  writes: 0,
  temporalCpuS,
  workerCpuS,
  machineBusyS: 0,
  workerPeakRssBytes: [300 * MIB, 320 * MIB],
  historyEventsPerService: events,
});

/** 100 services: apply 60 s, 17,000 requests; resync 3,000 requests; pool change 1,200; delete. */
const run: LifecycleResult = {
  backend: 'cluster',
  services: 100,
  workers: 2,
  historySample: 10,
  phases: [phase('apply', 60, 17_000, 40, 20, 200), phase('no-op full resync', 10, 3000, 5, 3, 28), phase('pool change', 12, 1200, 6, 4, 60), phase('delete', 50, 13_000, 30, 12, 70)],
  workerRunPeakRssBytes: [410 * MIB, 455 * MIB],
  revision: 'abc1234',
  loadStart: [0.5, 0.5, 0.5],
  loadEnd: [2, 2, 2],
  cpus: 2,
};

test('the summary line: the apply rate, Temporal and worker CPU of all four phases per service, the highest worker peak', () => {
  // 100 services in 60 s = 100/min; CPU (40+20+5+3+6+4+30+12) / 100 = 1.2 s per service; peaks 410 and 455 MiB.
  assert.equal(summaryLine(run), 'summary: cluster_services=100 cluster_workers=2 cluster_services_per_min=100 cluster_cpu_s_per_service=1.200 cluster_worker_peak_rss_mib=455');
});

test('the section states the command and commit, each phase per service, and projections derived from those costs', () => {
  const md = lifecycleSection(run);
  assert.ok(md.startsWith('| run |  |\n|---|---|\n| command | `npm run bench:cluster -- --lifecycle --services 100 --workers 2` |\n| commit | abc1234 |\n'));
  assert.match(md, /\| each worker's peak RSS over the run \(VmHWM\) \| 410 MiB, 455 MiB \|/);
  assert.match(md, /\| apply \| 60\.0 s \| 100 \| 170\.0 \(0\.0\) \| 0\.400 \/ 0\.200 \| 300, 320 \| 200 \|/);
  // Resync: 30 requests per service -> 30 x 10,000 / 3600 = 83 requests/s; 833 at 100,000.
  assert.match(md, /\| Engine requests\/s, no-op resync every hour \(30\.0 x N \/ 3600 s\) \| 83 \| 833 \|/);
  // Rollout: 170 x 10,000 = 1.70 M requests = 23.6 h at 20/s.
  assert.match(md, /\| rollout from empty: 170\.0 x N requests, at 20 requests\/s per token \| 1\.70 M: 23\.6 h \| 17\.00 M: 236\.1 h \|/);
  assert.match(md, /\| Temporal CPUs, no-op resync every hour \(0\.050 s x N \/ 3600 s\) \| 0\.14 \| 1\.39 \|/);
  assert.match(md, /\| history events written over the whole life \(358 x N\) \| 3\.6 M \| 35\.8 M \|/);
  assert.ok(md.endsWith(`\`${summaryLine(run)}\``));
  // Figures only: tables, the blank lines between them, and the summary line.
  assert.deepEqual(md.split('\n').filter((l) => l !== '' && !l.startsWith('|') && !l.startsWith('`summary: ')), []);
});

test('publishing writes the results file and replaces only the marked section of scaling.md, again and again', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lifecycle-doc-'));
  try {
    mkdirSync(path.join(dir, 'docs'));
    const file = path.join(dir, 'docs', 'scaling.md');
    writeFileSync(file, '# Scaling\n\nbefore, by hand\n\n<!-- bench:lifecycle:begin -->\nold figures\n<!-- bench:lifecycle:end -->\n\n## After\n');
    const publishRun = (r: LifecycleResult) => publish({ name: 'lifecycle', doc: 'docs/scaling.md', results: r, section: lifecycleSection(r) }, dir);
    assert.deepEqual(publishRun(run), ['bench/results/lifecycle.json', 'docs/scaling.md']);
    const later = { ...run, revision: 'def5678' };
    publishRun(later);
    const text = readFileSync(file, 'utf8');
    assert.equal(text, `# Scaling\n\nbefore, by hand\n\n<!-- bench:lifecycle:begin -->\n${lifecycleSection(later)}\n<!-- bench:lifecycle:end -->\n\n## After\n`);
    assert.deepEqual(JSON.parse(readFileSync(path.join(dir, 'bench', 'results', 'lifecycle.json'), 'utf8')), later);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('arguments: 5,000 services on 2 workers on the cluster by default; a bad value names its flag', () => {
  assert.deepEqual(parseLifecycle(['--lifecycle']), { services: 5000, workers: 2, seed: 42, backend: 'cluster', write: true, saveJson: null });
  assert.deepEqual(parseLifecycle(['--lifecycle', '--services', '50', '--workers', '1', '--only', 'dev', '--no-write']), { services: 50, workers: 1, seed: 42, backend: 'dev', write: false, saveJson: null });
  assert.throws(() => parseLifecycle(['--lifecycle', '--services', '0']), /--services: expected an integer 1-60000, got 0/);
  assert.throws(() => parseLifecycle(['--lifecycle', '--workers', 'x']), /--workers: expected an integer 1-16, got x/);
  assert.throws(() => parseLifecycle(['--lifecycle', '--only', 'k8s']), /--only: expected dev or cluster, got k8s/);
  assert.throws(() => parseLifecycle(['--lifecycle', '--fleet', '3']), /unknown argument --fleet/);
});
