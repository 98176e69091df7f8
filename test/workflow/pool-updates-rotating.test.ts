/**
 * A pool change sent while the pool rotates its history under a stream of signals is applied exactly once and
 * answered. Temporal refuses a workflow task that completes the run (continue-as-new) when a signal arrived while it
 * ran (cause UnhandledCommand), and aborts an update that task had already delivered with a non-retryable
 * "unexpected workflow task failure"; nothing of the update is recorded, so the client sends it again under the
 * same update id (client/update.ts). A 5,000-service run on the local cluster lost its pool change this way, with
 * every controller reporting to the pool at once.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { LbaasClient } from '../../client/service-client';
import { isAbortedByWorkflowTask, untilAnswered } from '../../client/update';
import { poolAddUpdate, poolReportSignal, workflowIds, workflowTypes } from '../../contract';
import type { serverPool } from '../../workflows/pool';
import { startStack, stopTemporalServer, type Stack } from '../helpers/stack';

let stack: Stack;
before(async () => {
  stack = await startStack({ worker: true });
});
after(async () => {
  await stack?.stop();
  await stopTemporalServer();
});

test('pool changes sent while the pool continues as new under a stream of report signals: sends the server aborted are sent again; each change applied once and answered', async (t) => {
  const lbaas = new LbaasClient(stack.client, stack.taskQueue);
  const name = 'rotating';
  const id = workflowIds.pool(name);
  // The smallest history limit the pool accepts: it continues as new every few signals.
  await stack.client.workflow.start<typeof serverPool>(workflowTypes.serverPool, { workflowId: id, taskQueue: stack.taskQueue, args: [{ v: 2, name, historyLimit: 20 }] });

  let storming = true;
  let signals = 0;
  const storm = Array.from({ length: 3 }, async () => {
    while (storming) {
      // A report from a service that is not subscribed: the pool ignores it, but it is an event the running task
      // did not see.
      await stack.client.workflow
        .getHandle(id)
        .signal(poolReportSignal, { v: 2, serviceUid: 'not-subscribed', revision: 0, converged: true })
        .then(() => signals++)
        .catch(() => {});
    }
  });

  // Each change through untilAnswered (what pools.add sends), counting the sends the server aborted: changes go on
  // until one was aborted (the race happened; 1 in 4 to 1 in 40 sends in the runs measured) and at least 20 were
  // made; at most 400 or 90 s (a change takes 0.1-6 s, depending on how the storm starves the pool's tasks).
  let aborted = 0;
  const revisions: number[] = [];
  try {
    const t0 = Date.now();
    for (let i = 1; i <= 400 && Date.now() - t0 < 90_000 && (i <= 20 || aborted < 1); i++) {
      const updateId = `add-node-${i}`;
      const r = await untilAnswered(async () => {
        try {
          return await stack.client.workflow.getHandle(id).executeUpdate(poolAddUpdate, { args: [[{ name: `node-${i}`, address: `10.1.${i >> 8}.${i & 255}` }]], updateId });
        } catch (err) {
          if (isAbortedByWorkflowTask(err)) aborted++;
          throw err;
        }
      });
      revisions.push(r.revision);
    }
  } finally {
    storming = false;
    await Promise.all(storm);
  }
  const CHANGES = revisions.length;
  t.diagnostic(`${CHANGES} changes, ${aborted} sends aborted, ${signals} report signals`);
  assert.ok(aborted >= 1, `no send of ${CHANGES} changes was aborted under ${signals} signals: the race was not exercised`);

  // Every change answered with its own revision: applied once each, none lost, none twice.
  assert.deepEqual(revisions, Array.from({ length: CHANGES }, (_, i) => i + 1));
  const st = await lbaas.pools.status(name);
  assert.equal(st.revision, CHANGES);
  assert.deepEqual(
    st.servers.map((s) => s.name).sort(),
    Array.from({ length: CHANGES }, (_, i) => `node-${i + 1}`).sort(),
  );
  // The pool rotated while the changes went in (the aborts above are what a rotation under a signal does; how many
  // rotations there are depends on the machine's load: 8 in a loaded CI run, dozens on a quiet machine).
  let runs = 0;
  for await (const _ of stack.client.workflow.list({ query: `WorkflowId = '${id}'` })) runs++;
  assert.ok(runs >= 2, `the pool never continued as new (${signals} signals)`);
});
