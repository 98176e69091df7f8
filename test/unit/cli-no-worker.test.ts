/**
 * The CLI's no-worker warning (cli/connect.ts, warnIfNoWorker) against a scripted DescribeTaskQueue: pollers that
 * show up within the grace (a worker just started) give no warning; none by its end does; a server that cannot say
 * is no reason to warn. The real CLI against a real server: test/cli/scripting.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { warnIfNoWorker, type Temporal } from '../../cli/connect';

/** A Temporal whose DescribeTaskQueue answers from `answer(call, type)` (pollers per call and task queue type). */
function fakeTemporal(answer: (call: number, taskQueueType: number) => number | Error) {
  const asked: { call: number; type: number; queue: string }[] = [];
  let calls = 0;
  let round = 0;
  const t = {
    settings: { namespace: 'ns', taskQueue: 'lbaas' },
    client: {
      workflowService: {
        describeTaskQueue: async (req: { taskQueue: { name: string }; taskQueueType: number }) => {
          calls++;
          // Workflow and activity queues are asked together: one round per pair.
          if (req.taskQueueType === 1) round++;
          asked.push({ call: round, type: req.taskQueueType, queue: req.taskQueue.name });
          const n = answer(round, req.taskQueueType);
          if (n instanceof Error) throw n;
          return { pollers: Array.from({ length: n }, () => ({ identity: 'w' })) };
        },
      },
    },
  } as unknown as Temporal;
  return { t, asked, calls: () => calls };
}

test('a worker that starts polling within the grace gives no warning; asking stops at the first answer that lists one', async () => {
  const f = fakeTemporal((round) => (round >= 3 ? 1 : 0));
  const printed: string[] = [];
  assert.equal(await warnIfNoWorker(f.t, (s) => printed.push(s), 'q1', 3_000), true);
  assert.deepEqual(printed, []);
  assert.equal(Math.max(...f.asked.map((a) => a.call)), 3);
  assert.deepEqual([...new Set(f.asked.map((a) => a.queue))], ['q1']);
});

test('a worker polling only for activities counts as a worker', async () => {
  const f = fakeTemporal((_, type) => (type === 2 ? 1 : 0));
  const printed: string[] = [];
  assert.equal(await warnIfNoWorker(f.t, (s) => printed.push(s)), true);
  assert.deepEqual(printed, []);
  assert.equal(f.calls(), 2);
});

test('no pollers by the end of the grace: one warning naming the task queue, after asking about every 250 ms', async () => {
  const f = fakeTemporal(() => 0);
  const printed: string[] = [];
  const started = Date.now();
  assert.equal(await warnIfNoWorker(f.t, (s) => printed.push(s), 'q2', 1_000), false);
  assert.ok(Date.now() - started >= 1_000, 'waited out the grace');
  assert.deepEqual(printed, ['warning: no worker has polled task queue q2 recently; nothing happens until one runs (lbaas worker)\n']);
  const rounds = Math.max(...f.asked.map((a) => a.call));
  // Asked again during the grace, and about every 250 ms, not in a busy loop (5 rounds in 1 s, one more if a timer
  // fires a millisecond before the grace ends).
  assert.ok(rounds >= 2 && rounds <= 6, `${rounds} rounds in 1 s`);
});

test('a server that cannot answer the question gives no warning', async () => {
  const f = fakeTemporal(() => new Error('PERMISSION_DENIED'));
  const printed: string[] = [];
  assert.equal(await warnIfNoWorker(f.t, (s) => printed.push(s), 'q3', 1_000), true);
  assert.deepEqual(printed, []);
});
