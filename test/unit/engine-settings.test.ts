/**
 * The worker's Engine budget and task-queue rate, as `lbaas worker` reads them from its environment: stated defaults,
 * the old LBAAS_ENGINE_RPS still working with a deprecation warning, bad values refused naming the variable; and the
 * prebuilt workflow bundle it may load (LBAAS_WORKFLOW_BUNDLE); the heap limit it starts node with (worker/heap.ts).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { execFileSync } from 'node:child_process';
import { DEFAULT_BACKOFF_CAP_MS, DEFAULT_BACKOFF_START_MS, DEFAULT_BURST, DEFAULT_INITIAL_REQUESTS_PER_SECOND, DEFAULT_MAX_REQUESTS_PER_SECOND } from '../../activities/engine';
import { engineBudgetFromEnv } from '../../worker/engine-settings';
import { relaunchArgs } from '../../cli/relaunch';
import { nativeMemoryEnv, processHeapMiB } from '../../worker/heap';
import { workerEnv } from '../../worker/start';

test('defaults: an adaptive budget from 10 up to 1,000 requests/s, burst 10, backoff 1 s to 60 s, no task-queue rate, no warnings', () => {
  assert.deepEqual(engineBudgetFromEnv({}), {
    pacing: {
      requestsPerSecond: DEFAULT_MAX_REQUESTS_PER_SECOND,
      initialRequestsPerSecond: DEFAULT_INITIAL_REQUESTS_PER_SECOND,
      burst: DEFAULT_BURST,
      backoffStartMs: DEFAULT_BACKOFF_START_MS,
      backoffCapMs: DEFAULT_BACKOFF_CAP_MS,
    },
    warnings: [],
  });
  assert.deepEqual([DEFAULT_INITIAL_REQUESTS_PER_SECOND, DEFAULT_MAX_REQUESTS_PER_SECOND, DEFAULT_BURST, DEFAULT_BACKOFF_START_MS, DEFAULT_BACKOFF_CAP_MS], [10, 1_000, 10, 1_000, 60_000]);
});

test('LBAAS_ENGINE_MAX_REQUESTS_PER_SECOND sets the adaptive ceiling (a ceiling below 10 is also where it starts); with LBAAS_ENGINE_REQUESTS_PER_SECOND it is refused', () => {
  assert.deepEqual(engineBudgetFromEnv({ LBAAS_ENGINE_MAX_REQUESTS_PER_SECOND: '200' }).pacing, {
    requestsPerSecond: 200,
    initialRequestsPerSecond: 10,
    burst: 10,
    backoffStartMs: 1_000,
    backoffCapMs: 60_000,
  });
  const low = engineBudgetFromEnv({ LBAAS_ENGINE_MAX_REQUESTS_PER_SECOND: '4' }).pacing;
  assert.deepEqual([low.requestsPerSecond, low.initialRequestsPerSecond], [4, 4]);
  assert.throws(
    () => engineBudgetFromEnv({ LBAAS_ENGINE_MAX_REQUESTS_PER_SECOND: '200', LBAAS_ENGINE_REQUESTS_PER_SECOND: '20' }),
    (err: unknown) =>
      (err as Error).message ===
      'LBAAS_ENGINE_MAX_REQUESTS_PER_SECOND: the ceiling of the adaptive budget, while LBAAS_ENGINE_REQUESTS_PER_SECOND sets a fixed budget: set one of them',
  );
  assert.throws(() => engineBudgetFromEnv({ LBAAS_ENGINE_MAX_REQUESTS_PER_SECOND: 'fast' }), (err: unknown) => (err as Error).message === 'LBAAS_ENGINE_MAX_REQUESTS_PER_SECOND: must be a positive number, got "fast"');
});

test('every setting is read under its own name; LBAAS_ENGINE_REQUESTS_PER_SECOND makes the budget fixed (no initial rate to grow from)', () => {
  const s = engineBudgetFromEnv({
    LBAAS_ENGINE_REQUESTS_PER_SECOND: '2.5',
    LBAAS_ENGINE_BURST: '4',
    LBAAS_ENGINE_BACKOFF_START_SECONDS: '0.5',
    LBAAS_ENGINE_BACKOFF_MAX_SECONDS: '30',
    LBAAS_TASK_QUEUE_ACTIVITIES_PER_SECOND: '50',
  });
  assert.deepEqual(s, { pacing: { requestsPerSecond: 2.5, burst: 4, backoffStartMs: 500, backoffCapMs: 30_000 }, taskQueueActivitiesPerSecond: 50, warnings: [] });
});

test('LBAAS_ENGINE_RPS still sets the task-queue rate, with a warning that names what it is; the new name wins when both are set', () => {
  const old = engineBudgetFromEnv({ LBAAS_ENGINE_RPS: '20' });
  assert.equal(old.taskQueueActivitiesPerSecond, 20);
  assert.deepEqual(old.pacing, engineBudgetFromEnv({}).pacing, 'the old name never set an Engine request budget, and still does not');
  assert.deepEqual(old.warnings, [
    'LBAAS_ENGINE_RPS is deprecated: it limits activity starts per second on the task queue, not Engine requests; set LBAAS_TASK_QUEUE_ACTIVITIES_PER_SECOND instead (and LBAAS_ENGINE_REQUESTS_PER_SECOND for the Engine budget)',
  ]);
  const both = engineBudgetFromEnv({ LBAAS_ENGINE_RPS: '20', LBAAS_TASK_QUEUE_ACTIVITIES_PER_SECOND: '5' });
  assert.equal(both.taskQueueActivitiesPerSecond, 5);
  assert.deepEqual(both.warnings, ['LBAAS_ENGINE_RPS is deprecated and ignored: LBAAS_TASK_QUEUE_ACTIVITIES_PER_SECOND is set']);
});

test('bad values are refused, naming the variable', () => {
  const refused = (env: NodeJS.ProcessEnv, message: string) => assert.throws(() => engineBudgetFromEnv(env), (err: unknown) => (err as Error).message === message);
  refused({ LBAAS_ENGINE_REQUESTS_PER_SECOND: '0' }, 'LBAAS_ENGINE_REQUESTS_PER_SECOND: must be a positive number, got "0"');
  refused({ LBAAS_ENGINE_BURST: 'many' }, 'LBAAS_ENGINE_BURST: must be a positive number, got "many"');
  refused({ LBAAS_ENGINE_RPS: '-1' }, 'LBAAS_ENGINE_RPS: must be a positive number, got "-1"');
  refused(
    { LBAAS_ENGINE_BACKOFF_START_SECONDS: '10', LBAAS_ENGINE_BACKOFF_MAX_SECONDS: '5' },
    'LBAAS_ENGINE_BACKOFF_MAX_SECONDS: must not be below LBAAS_ENGINE_BACKOFF_START_SECONDS (10)',
  );
});

test('LBAAS_WORKFLOW_BUNDLE names a prebuilt bundle file for the worker to load; left out, the worker bundles at start; a path that is not a file is refused naming the variable', () => {
  const base = { ANEXIA_TOKEN: 't', TEMPORAL_CONFIG_FILE: path.join(os.tmpdir(), 'does-not-exist', 'temporal.toml') };
  assert.equal(workerEnv(base).workflowBundlePath, undefined);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lbaas-bundle-env-'));
  try {
    const file = path.join(dir, 'workflow-bundle.js');
    writeFileSync(file, '// bundle\n');
    assert.equal(workerEnv({ ...base, LBAAS_WORKFLOW_BUNDLE: file }).workflowBundlePath, file);
    for (const bad of [path.join(dir, 'missing.js'), dir]) {
      assert.throws(() => workerEnv({ ...base, LBAAS_WORKFLOW_BUNDLE: bad }), (err: Error) => {
        assert.equal(err.message, `LBAAS_WORKFLOW_BUNDLE: ${bad} is not a file`);
        return true;
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('LBAAS_MAX_CACHED_WORKFLOWS bounds the workflow runs the worker caches; left out, the worker derives it from the workflow heap; anything but an integer of at least 2 is refused naming the variable', () => {
  const base = { ANEXIA_TOKEN: 't', TEMPORAL_CONFIG_FILE: path.join(os.tmpdir(), 'does-not-exist', 'temporal.toml') };
  assert.equal(workerEnv(base).maxCachedWorkflows, undefined);
  assert.equal(workerEnv({ ...base, LBAAS_MAX_CACHED_WORKFLOWS: '800' }).maxCachedWorkflows, 800);
  for (const bad of ['1', '0', '-5', '2.5', 'many']) {
    assert.throws(() => workerEnv({ ...base, LBAAS_MAX_CACHED_WORKFLOWS: bad }), (err: Error) => {
      assert.equal(err.message, `LBAAS_MAX_CACHED_WORKFLOWS: must be an integer of at least 2, got "${bad}"`);
      return true;
    });
  }
});

test('LBAAS_WORKFLOW_HEAP_MIB is the workflow thread\'s heap limit; left out, the default; anything but an integer of at least 128 is refused naming the variable', () => {
  const base = { ANEXIA_TOKEN: 't', TEMPORAL_CONFIG_FILE: path.join(os.tmpdir(), 'does-not-exist', 'temporal.toml') };
  assert.equal(workerEnv(base).workflowHeapMiB, undefined);
  assert.equal(workerEnv({ ...base, LBAAS_WORKFLOW_HEAP_MIB: '768' }).workflowHeapMiB, 768);
  for (const bad of ['127', '0', '-512', '512.5', 'big']) {
    assert.throws(() => workerEnv({ ...base, LBAAS_WORKFLOW_HEAP_MIB: bad }), (err: Error) => {
      assert.equal(err.message, `LBAAS_WORKFLOW_HEAP_MIB: must be an integer of at least 128 (MiB), got "${bad}"`);
      return true;
    });
  }
});

test('a thread started without resource limits, as the SDK starts its workflow thread, takes the heap limit of the process\'s --max-old-space-size', () => {
  const script =
    "const v8 = require('node:v8'); const { Worker } = require('node:worker_threads');" +
    "const t = new Worker(\"require('node:worker_threads').parentPort.postMessage(require('node:v8').getHeapStatistics().heap_size_limit)\", { eval: true });" +
    "t.once('message', (n) => { console.log(JSON.stringify({ main: v8.getHeapStatistics().heap_size_limit, thread: n })); process.exit(0); });";
  const limits = (args: string[]) => JSON.parse(execFileSync(process.execPath, [...args, '-e', script], { encoding: 'utf8', env: { PATH: process.env.PATH } })) as { main: number; thread: number };
  const bounded = limits(['--max-old-space-size=256']);
  const unbounded = limits([]);
  // The old generation's limit plus the young generation's, which V8 sizes itself (about 48 MiB on Node 20 for this
  // limit, more on Node 24): far below the default of several GiB either way.
  assert.equal(bounded.thread, bounded.main);
  assert.ok(bounded.thread >= 256 * 2 ** 20 && bounded.thread <= 512 * 2 ** 20, `thread heap limit ${bounded.thread / 2 ** 20} MiB`);
  assert.ok(bounded.thread < unbounded.thread / 2, `bounded ${bounded.thread / 2 ** 20} MiB against Node's default ${unbounded.thread / 2 ** 20} MiB`);
});

test('lbaas worker and lbaas dev start node again with --max-old-space-size from LBAAS_WORKFLOW_HEAP_MIB (default 448) and MALLOC_ARENA_MAX=2, unless the process already has both', () => {
  const argv = (...a: string[]) => ['/usr/bin/node', '/opt/lbaas/bin/lbaas.js', ...a];
  assert.deepEqual(relaunchArgs(argv('worker'), {}, []), ['--max-old-space-size=448', '/opt/lbaas/bin/lbaas.js', 'worker']);
  assert.deepEqual(relaunchArgs(argv('dev', '--port', '7233'), { LBAAS_WORKFLOW_HEAP_MIB: '768' }, ['--enable-source-maps']), [
    '--enable-source-maps',
    '--max-old-space-size=768',
    '/opt/lbaas/bin/lbaas.js',
    'dev',
    '--port',
    '7233',
  ]);
  // Already set, by the command line or NODE_OPTIONS, with MALLOC_ARENA_MAX: the operator's settings win, and the
  // relaunched node (which has both) does not loop.
  assert.equal(relaunchArgs(argv('worker'), { MALLOC_ARENA_MAX: '2' }, ['--max-old-space-size=300']), null);
  assert.equal(relaunchArgs(argv('worker'), { NODE_OPTIONS: '--trace-warnings --max_old_space_size=300', MALLOC_ARENA_MAX: '8' }, []), null);
  // The heap flag set but not MALLOC_ARENA_MAX: node starts again with its own arguments, for the variable alone.
  assert.deepEqual(relaunchArgs(argv('worker'), {}, ['--max-old-space-size=300']), ['--max-old-space-size=300', '/opt/lbaas/bin/lbaas.js', 'worker']);
  assert.deepEqual(relaunchArgs(argv('worker'), { NODE_OPTIONS: '--max-old-space-size=300' }, []), ['/opt/lbaas/bin/lbaas.js', 'worker']);
  // Other commands, help, and a bad LBAAS_WORKFLOW_HEAP_MIB (the worker refuses it, naming the variable) run as they are.
  assert.equal(relaunchArgs(argv('apply', '-f', 'x.yaml'), {}, []), null);
  assert.equal(relaunchArgs(argv('worker', '--help'), {}, []), null);
  assert.equal(relaunchArgs(argv('worker'), { LBAAS_WORKFLOW_HEAP_MIB: '64' }, []), null);
  // The environment the worker's node starts with: MALLOC_ARENA_MAX=2 unless the operator set one.
  assert.deepEqual([nativeMemoryEnv({}), nativeMemoryEnv({ MALLOC_ARENA_MAX: '' }), nativeMemoryEnv({ MALLOC_ARENA_MAX: '4' })], [{ MALLOC_ARENA_MAX: '2' }, { MALLOC_ARENA_MAX: '2' }, {}]);
  assert.equal(processHeapMiB(['--max-old-space-size=300', '--max-old-space-size=400'], { NODE_OPTIONS: '--max-old-space-size=500' }), 400);
  assert.equal(processHeapMiB([], { NODE_OPTIONS: '--max-old-space-size=500' }), 500);
});
