/**
 * `lbaas worker` as an operator starts it: `node bin/lbaas.js worker` with nothing but its environment. The process
 * that runs the worker has the heap limit on its node command line (the supported way to bound the SDK's workflow
 * thread: worker/heap.ts), says so in its start line, and a SIGTERM to the process we started drains and ends it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
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

test('lbaas worker runs its worker in a node started with --max-old-space-size=LBAAS_WORKFLOW_HEAP_MIB, says so, and ends on SIGTERM with exit 0', { skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
  const srv = await temporalServer();
  const env = cliEnv(
    { address: srv.address, namespace: srv.namespace, taskQueue: `worker-process-${randomUUID()}` },
    {
      ANEXIA_TOKEN: 'test-token-not-used',
      ANEXIA_ENGINE_URL: 'http://127.0.0.1:9',
      LBAAS_WORKFLOW_HEAP_MIB: '256',
      ...(process.env.LBAAS_TEST_WORKFLOW_BUNDLE ? { LBAAS_WORKFLOW_BUNDLE: process.env.LBAAS_TEST_WORKFLOW_BUNDLE } : {}),
    },
  );
  delete env.NODE_OPTIONS;
  const child = spawn(process.execPath, [LBAAS_BIN, 'worker'], { env, cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    await until('the worker start line', async () => /lbaas worker: task queue /.test(stderr), 120_000, 100);
    const line = stderr.split('\n').find((l) => l.startsWith('lbaas worker: task queue ')) as string;
    assert.match(line, /, V8 heap limit 256 MiB \(main and workflow threads\), 1024 cached workflows/);
    // Node 20 starts the worker as our child's child; a node with process.execve replaces our child in place.
    const pid = child.pid as number;
    const runner = cmdline(pid).includes('--max-old-space-size=256') ? pid : children(pid).find((c) => cmdline(c).includes('--max-old-space-size=256'));
    assert.ok(runner !== undefined, `a process running the worker with the heap flag (child ${pid}: ${cmdline(pid).join(' ')}; its children: ${children(pid).join(' ')})`);
    assert.deepEqual(cmdline(runner).slice(-2), [LBAAS_BIN, 'worker']);
    child.kill('SIGTERM');
    assert.equal(await exited, 0, stderr);
    assert.equal(existsSync(`/proc/${runner}`), false, 'the worker process has ended too');
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});
