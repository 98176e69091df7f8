#!/usr/bin/env node
'use strict';
// `npm test`: runs Node's test runner over the everyday suite's directories of dist/test (NPM_TEST below), or the
// files and directories given as arguments (`npm run test:ops`, `npm run test:faults`), several files at a time. Unit and contract files need nothing outside themselves. For the others it makes sure the
// Temporal CLI is installed (installing it on first use), starts one Temporal dev server that they share, each file
// in a namespace of its own (test/helpers/namespace.ts: workflow ids, the schedule and lists never meet), and
// bundles the workflow code once for all of them (LBAAS_TEST_WORKFLOW_BUNDLE) instead of once per file.
//
// LBAAS_TEST_CONCURRENCY: files run at once. Default four times the CPUs (at least 4): most of a workflow test is
// spent waiting (the simulator's deploys, Temporal's round trips and timers, a killed worker's heartbeat timeout), not
// computing. Measured on a quiet 2-core machine when npm test also ran today's ops/, faults/ and chaos/ files
// (docs/benchmarks.md, "Test suite time"): 8 at a time left the CPUs
// partly idle in the first 80 s (222-239 s of test files), 12 kept them busy (190-193 s), 16 gained nothing more. 12
// is not the default: two fresh-clone CI runs at 12 each lost one race on Node 24 (both fixed), and races are likelier
// at 12 than at 8, where CI has passed.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

/**
 * `npm test`'s directories: the product's behaviour on the real stack (the workflows on a dev server with the
 * simulator over HTTP, the CLI as a process) and its fast and unit layers. A quiet 2-core machine runs them in about
 * 2 minutes (docs/benchmarks.md, "Test suite time").
 */
const NPM_TEST = ['unit', 'contract', 'fast', 'workflow', 'cli'];
/** Directories whose files run without Temporal. */
const SERVERLESS = ['unit', 'contract'];
/**
 * Processes the serverless files share. A process of its own per file cost about 0.3 CPU-s of Node start-up and as
 * much again of loading the same modules (the Temporal SDK, the simulator) each time: 37 CPU-s for the 90 files, 15
 * in one process (a loaded 2-core machine, Node 20). Several, not one, so that their waits (the simulator's delays,
 * child processes) still overlap; each runs its files one after another, in name order, every file in a suite named
 * after it (see groupEntries).
 */
const SERVERLESS_PROCESSES = 4;
/**
 * Serverless files that keep a process of their own: what they prove is about the whole process.
 * unit/tracing-off: that nothing of OpenTelemetry is in require.cache, which unit/tracing loads in the same process.
 */
const OWN_PROCESS = ['unit/tracing-off.test.js'];
/**
 * Directories whose files start Temporal's time-skipping test server of their own (test/helpers/time-skipping.ts),
 * one per file since its clock is the whole server's: they need the test server installed (dev/test-server.ts) and
 * the workflow bundle, not the dev server.
 */
const TIME_SKIPPING = ['fast'];
/**
 * Longest first, so the long files do not start last and stretch the run: these files (below dist/test) in this order,
 * then the rest by directory in ORDER. A file missing here only starts later; nothing else depends on the list.
 * Each run writes every file's time to dist/test-times.json (scripts/test-times.js: the sum of its top-level tests,
 * its before/after hooks not included); the list is every file of 10 s or more there, by the median of four
 * fresh-clone CI runs (Node 20, 2 CPUs), longest first. Derive it again the same way when files change.
 * Node 20's `node --test` sorts the files it is given by path, which undoes this order (checked on 20.20.2; `run()` of
 * node:test keeps it): there the workflow files start last.
 */
const LONGEST = [
  // Mostly waiting: the CLI's warnings 30 s apart, a stopped worker's poll going stale after 70 s.
  'cli/waits.test.js',
  // Mostly waiting too: a stopped worker's poll going stale after 70 s.
  'workflow/pickup.test.js',
  'faults/reconcile-crash.test.js',
  'chaos/chaos-realistic.test.js',
  // Mostly waiting: a killed worker's Engine calls are retried after their 15 s heartbeat timeout.
  'faults/pool-delta-crash.test.js',
  'chaos/chaos.test.js',
  'faults/realistic-defaults.test.js',
  'cli/service.test.js',
  'faults/realistic-limits.test.js',
  'faults/reconcile-faults.test.js',
  'faults/stranded.test.js',
  'ops/metrics.test.js',
  'faults/pools-crash.test.js',
  'faults/workers.test.js',
  'ops/first-install.test.js',
  'workflow/realistic-engine.test.js',
  'ops/devserver-start.test.js',
  'cli/scripting.test.js',
  'workflow/reconcile-core.test.js',
  'workflow/pools.test.js',
  'workflow/realistic-workers.test.js',
  'workflow/reconcile-failures.test.js',
  'ops/controller.test.js',
  'workflow/pool-delta.test.js',
  'ops/dev-tracing.test.js',
  'workflow/superseded-creates.test.js',
  'cli/pools.test.js',
  'workflow/bad-input.test.js',
  'faults/drain.test.js',
  'fast/controller.test.js',
  'cli/input.test.js',
  'ops/dev-interrupt.test.js',
  'ops/webui.test.js',
  'workflow/replay.test.js',
  'chaos/chaos-found.test.js',
  'workflow/reconcile-scope.test.js',
  'fast/pools.test.js',
  'cli/bad-input.test.js',
  'ops/tracing.test.js',
];
const ORDER = ['chaos', 'faults', 'ops', 'cli', 'workflow', 'fast', 'contract', 'unit'];

async function main() {
  const progress = (line) => process.stderr.write(`[test] ${line}\n`);
  // Node 20 would run every .js below a directory named test (helpers and the chaos runner included): pass the
  // *.test.js files explicitly.
  const targets = process.argv.slice(2);
  // Without arguments, the everyday suite: NPM_TEST's directories. The others run by name (package.json):
  // `npm run test:ops` (dist/test/ops: lbaas dev, worker processes, telemetry, the Web UI), `npm run test:faults`
  // (dist/test/faults and dist/test/chaos: the Engine's faults, killed and stopped workers), `npm run test:cluster`
  // (its own Temporal cluster and minutes of faults), `npm run test:kube` (its own etcd and kube-apiserver),
  // `npm run test:upgrade` (builds a previous commit and runs both builds), `npm run test:limits` (thousands of
  // objects for minutes), `npm run test:image` (builds the container image with buildah as root). CI runs them all.
  const all = () => testFiles(path.join('dist', 'test')).filter((f) => NPM_TEST.includes(dirOf(f)));
  const files = (targets.length > 0 ? targets.flatMap(testFiles) : all()).sort(byOrder);
  if (files.length === 0) throw new Error(`no *.test.js files in ${targets.join(' ') || 'dist/test'}`);
  const concurrency = Number(process.env.LBAAS_TEST_CONCURRENCY) || Math.max(4, 4 * os.availableParallelism());

  const needServer = files.filter((f) => !SERVERLESS.includes(dirOf(f)) && !TIME_SKIPPING.includes(dirOf(f)));
  const needTestServer = files.some((f) => TIME_SKIPPING.includes(dirOf(f)));
  const env = { ...process.env };
  let server = null;
  let bundleDir = null;
  if (needTestServer) {
    const { ensureTestServer } = require('../dist/dev/test-server.js');
    const testServer = await ensureTestServer({ progress });
    progress(`time-skipping test server: ${testServer}`);
    env.LBAAS_TEST_SERVER_PATH = testServer;
  }
  if (needServer.length > 0 || needTestServer) {
    bundleDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lbaas-test-bundle-'));
    const bundling = bundle(bundleDir);
    if (needServer.length > 0) {
      const { ensureTemporalCli } = require('../dist/dev/temporal-path.js');
      const { startDevServer } = require('../dist/dev/devserver.js');
      const { namespaceOfTestFile } = require('../dist/test/helpers/namespace.js');
      // The CLI is for the tests that run `temporal` commands (TEMPORAL_CLI_PATH); the dev server is the bare server.
      const temporalPath = await ensureTemporalCli({ progress });
      progress(`Temporal CLI: ${temporalPath}`);
      const { ensureTemporalServer } = require('../dist/dev/temporal-server.js');
      const { server: serverPath } = await ensureTemporalServer({ which: ['server'], progress });
      const namespaces = needServer.map((f) => namespaceOfTestFile(f)).filter((n) => n !== null);
      server = await startDevServer({ serverPath, extraNamespaces: namespaces, progress });
      progress(`Temporal dev server: ${server.address} (${namespaces.length} namespaces)`);
      Object.assign(env, { TEMPORAL_CLI_PATH: temporalPath, LBAAS_TEST_TEMPORAL_ADDRESS: server.address });
    }
    env.LBAAS_TEST_WORKFLOW_BUNDLE = await bundling;
    progress(`workflow bundle: ${env.LBAAS_TEST_WORKFLOW_BUNDLE}`);
  }
  const groupDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lbaas-test-groups-'));
  const runFiles = groupEntries(files, groupDir);
  const cleanup = async () => {
    fs.rmSync(groupDir, { recursive: true, force: true });
    await server?.stop();
    if (bundleDir) fs.rmSync(bundleDir, { recursive: true, force: true });
  };
  // Interrupted (Ctrl-C, a CI timeout): stop the server too, or it outlives the run.
  let child = null;
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      child?.kill(signal);
      void cleanup().finally(() => process.exit(130));
    });
  }
  const shared = runFiles.filter((f) => f.startsWith(groupDir)).length;
  progress(`${files.length} files, ${concurrency} at a time${shared > 0 ? `; the serverless ones in ${shared} processes, ${runFiles.length - shared} other processes` : ''}`);
  const started = Date.now();
  const code = await new Promise((resolve) => {
    // scripts/run-files.js, not `node --test`, which on Node 20 would run the files sorted by path.
    child = spawn(process.execPath, [path.join(__dirname, 'run-files.js'), ...runFiles], { stdio: 'inherit', env: { ...env, LBAAS_TEST_FILES_AT_ONCE: String(concurrency) } });
    child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
  });
  progress(`test files took ${((Date.now() - started) / 1000).toFixed(1)} s`);
  await cleanup();
  process.exitCode = code;
}

/** The workflow code bundled once into `dir`; test workers load it with `workflowBundle: { codePath }`. */
async function bundle(dir) {
  const { bundleWorkflowCode } = require('@temporalio/worker');
  const { workflowsPath } = require('../dist/worker/main.js');
  const quiet = { info() {}, warn() {}, debug() {}, trace() {}, log() {}, error: (...a) => console.error(...a) };
  const { code } = await bundleWorkflowCode({ workflowsPath, logger: quiet });
  const file = path.join(dir, 'workflow-bundle.js');
  fs.writeFileSync(file, code);
  return file;
}

/**
 * `files` with the serverless ones (but OWN_PROCESS) replaced by SERVERLESS_PROCESSES entry files written to `dir`,
 * in their place in the order. An entry requires its files one after another, each inside a describe() named after
 * the file (its path below dist/test), so a file's tests, its top-level hooks and a failure to load it are reported
 * under its name, and its before/after hooks run around its own tests only. The runner sees the entry as the file;
 * scripts/test-times.js knows entries by their name (*.group.js) and counts each describe as its file. The files go to
 * the processes by their times in the last run (dist/test-times.json; 1 s if unknown), longest first, each to the
 * process with the least so far.
 */
function groupEntries(files, dir) {
  const rel = (f) => path.relative(path.resolve('dist', 'test'), path.resolve(f)).split(path.sep).join('/');
  const shareable = files.filter((f) => SERVERLESS.includes(dirOf(f)) && !OWN_PROCESS.includes(rel(f)));
  const n = Math.min(SERVERLESS_PROCESSES, Math.floor(shareable.length / 2));
  if (n < 1) return files;
  let last = {};
  try {
    last = JSON.parse(fs.readFileSync(path.join('dist', 'test-times.json'), 'utf8'));
  } catch {
    // No earlier run (or an unreadable record): every file counts the same.
  }
  const groups = Array.from({ length: n }, () => ({ ms: 0, files: [] }));
  for (const f of [...shareable].sort((a, b) => (last[rel(b)] ?? 1000) - (last[rel(a)] ?? 1000) || a.localeCompare(b))) {
    const g = groups.reduce((min, x) => (x.ms < min.ms ? x : min));
    g.ms += last[rel(f)] ?? 1000;
    g.files.push(f);
  }
  const entries = groups.map((g, i) => {
    const entry = path.join(dir, `serverless-${i + 1}.group.js`);
    const lines = g.files
      .sort()
      .map((f) => `describe(${JSON.stringify(rel(f))}, () => {\n  require(${JSON.stringify(path.resolve(f))});\n});\n`);
    fs.writeFileSync(entry, `'use strict';\nconst { describe } = require('node:test');\n${lines.join('')}`);
    return entry;
  });
  const first = files.findIndex((f) => shareable.includes(f));
  const rest = files.filter((f) => !shareable.includes(f));
  rest.splice(first, 0, ...entries);
  return rest;
}

/** The directory below dist/test that a test file is in ('' for none). */
function dirOf(file) {
  const parts = path.relative(path.resolve('dist', 'test'), path.resolve(file)).split(path.sep);
  return parts.length > 1 && parts[0] !== '..' ? parts[0] : '';
}

function byOrder(a, b) {
  const rank = (f) => {
    const long = LONGEST.indexOf(path.relative(path.resolve('dist', 'test'), path.resolve(f)).split(path.sep).join('/'));
    if (long >= 0) return long;
    const i = ORDER.indexOf(dirOf(f));
    return LONGEST.length + (i < 0 ? ORDER.length : i);
  };
  return rank(a) - rank(b) || a.localeCompare(b);
}

function testFiles(target) {
  if (!fs.statSync(target).isDirectory()) return [target];
  return fs
    .readdirSync(target, { recursive: true })
    .filter((f) => f.endsWith('.test.js'))
    .sort()
    .map((f) => path.join(target, f));
}

main().catch((err) => {
  process.stderr.write(`[test] ${err.stack || err.message}\n`);
  process.exitCode = 1;
});
