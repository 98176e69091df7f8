/**
 * `lbaas schedule ...` against a real dev server (test/helpers/cli-stack.ts; the first set as a process, the other
 * commands in this process): the full-resync Schedule `lbaas-full-resync` is created, updated in place, described,
 * paused, unpaused, triggered (starting a fullResync run on our task queue) and deleted.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ScheduleNotFoundError } from '@temporalio/client';
import { SCHEDULE_ID } from '../../client/schedule';
import type { FullResyncResult } from '../../contract';
import { type CliRun } from '../helpers/cli';
import { cliStack } from '../helpers/cli-stack';

const deleteSchedule = async () => {
  await c.stack.client.schedule
    .getHandle(SCHEDULE_ID)
    .delete()
    .catch((err: unknown) => {
      if (!(err instanceof ScheduleNotFoundError)) throw err;
    });
};
const c = cliStack('schedule', {}, { setup: deleteSchedule, teardown: deleteSchedule });
const cli = (...args: string[]) => c.cli(args);
const proc = (...args: string[]) => c.proc(args);
const ok = (r: CliRun, what: string) => assert.equal(r.code, 0, `${what}: exit ${r.code}; stderr: ${r.stderr}`);
const describeJson = async () => {
  const r = await cli('schedule', 'describe', '-o', 'json');
  ok(r, 'describe');
  return JSON.parse(r.stdout) as Record<string, unknown>;
};

test('without a schedule, describe/pause/trigger exit 2 saying how to create it', async () => {
  await Promise.all(
    ['describe', 'pause', 'trigger', 'delete'].map(async (action) => {
      const r = await cli('schedule', action);
      assert.equal(r.code, 2, action);
      assert.equal(r.stderr, `lbaas: schedule ${SCHEDULE_ID} does not exist; create it with: lbaas schedule set --every 10m\n`);
    }),
  );
});

test('set creates the schedule with overlap SKIP and a catchup window, and updates it in place', async () => {
  const created = await proc('schedule', 'set', '--every', '1h');
  ok(created, 'set');
  assert.equal(created.stdout, `created schedule ${SCHEDULE_ID}: fullResync every 1h on task queue ${c.stack.taskQueue}\n`);
  const d1 = await describeJson();
  assert.deepEqual(
    { ...d1, nextRuns: (d1.nextRuns as string[]).length > 0 },
    {
      scheduleId: SCHEDULE_ID,
      paused: false,
      note: null,
      every: '1h',
      everyMs: 3_600_000,
      destroyOrphans: false,
      workflowType: 'fullResync',
      taskQueue: c.stack.taskQueue,
      overlap: 'SKIP',
      catchupWindow: '1h',
      nextRuns: true,
      recentRuns: [],
      running: [],
      actionsTaken: 0,
      skippedOverlap: 0,
      missedCatchupWindow: 0,
    },
  );
  // The server's own view agrees (the CLI's JSON is not just echoing what it sent).
  const raw = await c.stack.client.schedule.getHandle(SCHEDULE_ID).describe();
  assert.equal(raw.policies.overlap, 'SKIP');
  assert.equal(raw.policies.catchupWindow, 3_600_000);
  assert.deepEqual(raw.spec.intervals?.map((i) => i.every), [3_600_000]);

  const updated = await cli('schedule', 'set', '--every', '30m', '--destroy-orphans');
  ok(updated, 'set again');
  assert.equal(updated.stdout, `updated schedule ${SCHEDULE_ID}: fullResync every 30m on task queue ${c.stack.taskQueue}, destroying orphaned objects\n`);
  const d2 = await describeJson();
  assert.deepEqual([d2.every, d2.everyMs, d2.destroyOrphans, d2.catchupWindow], ['30m', 1_800_000, true, '30m']);
  const action = (await c.stack.client.schedule.getHandle(SCHEDULE_ID).describe()).action;
  assert.deepEqual(action.type === 'startWorkflow' ? action.args : null, [{ destroyOrphans: true }]);

  const tooOften = await cli('schedule', 'set', '--every', '1s');
  assert.equal(tooOften.code, 2);
  assert.equal(tooOften.stderr, 'lbaas: --every: must be at least 10s\n');
});

test('pause and unpause show in describe, in JSON and in text; set keeps the paused state', async () => {
  const paused = await cli('schedule', 'pause');
  ok(paused, 'pause');
  assert.equal(paused.stdout, `paused schedule ${SCHEDULE_ID}\n`);
  const d = await describeJson();
  assert.equal(d.paused, true);
  assert.equal(d.note, 'paused with lbaas schedule pause');
  const text = await cli('schedule', 'describe');
  ok(text, 'describe text');
  assert.match(text.stdout, /^schedule {5}lbaas-full-resync\nstate {8}paused \(paused with lbaas schedule pause\)\nevery {8}30m\n/);
  assert.match(text.stdout, /\nnext runs {4}- \(paused\)\n/);

  ok(await cli('schedule', 'set', '--every', '20m'), 'set while paused');
  assert.deepEqual([(await describeJson()).paused, (await describeJson()).every], [true, '20m']);

  const unpaused = await cli('schedule', 'unpause', '-o', 'json');
  ok(unpaused, 'unpause');
  const u = JSON.parse(unpaused.stdout);
  assert.equal(u.paused, false);
  assert.equal(u.every, '20m');
});

test('trigger starts a fullResync run on the task queue and reports its workflow id', async () => {
  const r = await cli('schedule', 'trigger', '-o', 'json');
  ok(r, 'trigger');
  const doc = JSON.parse(r.stdout) as { scheduleId: string; started: string; skippedFor: null };
  assert.equal(doc.scheduleId, SCHEDULE_ID);
  assert.equal(doc.skippedFor, null);
  assert.match(doc.started, /^lbaas-full-resync-\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  const handle = c.stack.client.workflow.getHandle(doc.started);
  const result = (await handle.result()) as FullResyncResult;
  assert.deepEqual(Object.keys(result), ['signalled', 'missed', 'orphans']);
  const info = await handle.describe();
  assert.equal(info.type, 'fullResync');
  assert.equal(info.taskQueue, c.stack.taskQueue);
  const d = await describeJson();
  assert.deepEqual(
    (d.recentRuns as { workflowId: string }[]).map((x) => x.workflowId),
    [doc.started],
  );
});

test('delete removes the schedule', async () => {
  const r = await cli('schedule', 'delete');
  ok(r, 'delete');
  assert.equal(r.stdout, `deleted schedule ${SCHEDULE_ID}\n`);
  await assert.rejects(c.stack.client.schedule.getHandle(SCHEDULE_ID).describe(), ScheduleNotFoundError);
  const again = await cli('schedule', 'describe');
  assert.equal(again.code, 2);
});
