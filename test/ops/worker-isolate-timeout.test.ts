/**
 * The worker's workflow activation timeout is the one docs/operations.md states: the SDK's 5 s default aborts the
 * whole worker process on a starved machine (worker/main.ts WORKFLOW_ISOLATE_TIMEOUT says why).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { startStack, stopTemporalServer, type Stack } from '../helpers/stack';

let stack: Stack | undefined;

after(async () => {
  await stack?.stop();
  await stopTemporalServer();
});

test('lbaas worker runs with the workflow activation timeout docs/operations.md states (60 s, not the SDK default 5 s)', async () => {
  const doc = readFileSync(path.join(__dirname, '../../../docs/operations.md'), 'utf8');
  const stated = /lets one workflow activation run up to (\d+) s \(`WORKFLOW_ISOLATE_TIMEOUT`/.exec(doc);
  assert.ok(stated, 'docs/operations.md states the workflow activation timeout');
  stack = await startStack({ worker: false });
  const worker = await stack.startWorker();
  assert.equal(worker.options.isolateExecutionTimeoutMs, Number(stated[1]) * 1000);
  assert.equal(worker.options.isolateExecutionTimeoutMs, 60_000);
});
