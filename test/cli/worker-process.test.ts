/**
 * `lbaas worker` as an operator starts it: `node bin/lbaas.js worker` with nothing but its environment. The process
 * that runs the worker has the heap limit on its node command line (the supported way to bound the SDK's workflow
 * thread: worker/heap.ts), says so in its start line, polls under the identity of the process we started, and ends
 * with it: drained on SIGTERM, at once on SIGKILL.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { Connection } from '@temporalio/client';
import { after, test } from 'node:test';
import { cliEnv, LBAAS_BIN, REPO_ROOT } from '../helpers/cli';
import { stopTemporalServer, temporalServer } from '../helpers/stack';
import { until } from '../helpers/workflows';

after(async () => {
  await stopTemporalServer();
});

/** The node arguments of a running process (Linux /proc). */
const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
/** Direct children of a running process (Linux /proc). */
const children = (pid: number) =>
  existsSync(`/proc/${pid}/task/${pid}/children`) ? readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number) : [];

/** Starts `node bin/lbaas.js worker` on a task queue of its own; resolves once it printed its start line. */
async function startLbaasWorker(taskQueue: string) {
  const srv = await temporalServer();
  const env = cliEnv(
    { address: srv.address, namespace: srv.namespace, taskQueue },
    {
      ANEXIA_TOKEN: 'test-token-not-used',
      ANEXIA_ENGINE_URL: 'http://127.0.0.1:9',
      LBAAS_WORKFLOW_HEAP_MIB: '256',
      ...(process.env.LBAAS_TEST_WORKFLOW_BUNDLE ? { LBAAS_WORKFLOW_BUNDLE: process.env.LBAAS_TEST_WORKFLOW_BUNDLE } : {}),
    },
  );
  delete env.NODE_OPTIONS;
  delete env.MALLOC_ARENA_MAX;
  const child = spawn(process.execPath, [LBAAS_BIN, 'worker'], { env, cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stderr: '' };
  child.stderr.on('data', (d: Buffer) => (out.stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await until('the worker start line', async () => /lbaas worker: task queue /.test(out.stderr) || child.exitCode !== null, 120_000, 100);
  const pid = child.pid as number;
  // Node 20 runs the worker in our child's child; a node with process.execve replaces our child in place.
  const runner = cmdline(pid).includes('--max-old-space-size=256') ? pid : children(pid).find((c) => cmdline(c).includes('--max-old-space-size=256'));
  return { srv, child, out, exited, pid, runner };
}

test('lbaas worker runs its worker in a node started with --max-old-space-size=LBAAS_WORKFLOW_HEAP_MIB and MALLOC_ARENA_MAX=2, says so, polls as <pid>@<host> of the process started, and ends on SIGTERM with exit 0', { skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
  const taskQueue = `worker-process-${randomUUID()}`;
  const w = await startLbaasWorker(taskQueue);
  const connection = await Connection.connect({ address: w.srv.address });
  try {
    const line = w.out.stderr.split('\n').find((l) => l.startsWith('lbaas worker: task queue ')) as string;
    // 3 cached runs per MiB of the heap limit (worker/main.ts, CACHED_WORKFLOWS_PER_HEAP_MIB).
    assert.match(line, /, V8 heap limit 256 MiB \(main and workflow threads\), 768 cached workflows/);
    assert.ok(w.runner !== undefined, `a process running the worker with the heap flag (child ${w.pid}: ${cmdline(w.pid).join(' ')}; its children: ${children(w.pid).join(' ')})`);
    assert.deepEqual(cmdline(w.runner).slice(-2), [LBAAS_BIN, 'worker']);
    // Started with the malloc arena bound too (worker/heap.ts), which the C library reads only at start.
    assert.ok(readFileSync(`/proc/${w.runner}/environ`, 'utf8').split('\0').includes('MALLOC_ARENA_MAX=2'), 'MALLOC_ARENA_MAX=2 in the worker\'s environment');
    const pollers = await until(
      'the worker to poll',
      async () => {
        const r = await connection.workflowService.describeTaskQueue({ namespace: w.srv.namespace, taskQueue: { name: taskQueue }, taskQueueType: 1 });
        return (r.pollers ?? []).length > 0 && (r.pollers ?? []).map((p) => p.identity);
      },
      30_000,
      100,
    );
    assert.deepEqual(pollers, [`${w.pid}@${os.hostname()}`]);
    w.child.kill('SIGTERM');
    assert.equal(await w.exited, 0, w.out.stderr);
    assert.equal(existsSync(`/proc/${w.runner}`), false, 'the worker process has ended too');
  } finally {
    await connection.close();
    if (w.child.exitCode === null) w.child.kill('SIGKILL');
  }
});

test('a SIGKILL to the process started kills the worker too, within a second', { skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
  const w = await startLbaasWorker(`worker-process-${randomUUID()}`);
  assert.ok(w.runner !== undefined, 'the worker runs');
  w.child.kill('SIGKILL');
  await w.exited;
  await until('the worker process to be gone', async () => !existsSync(`/proc/${w.runner}`) || readFileSync(`/proc/${w.runner}/stat`, 'utf8').split(' ')[2] === 'Z', 1_000, 20);
});
