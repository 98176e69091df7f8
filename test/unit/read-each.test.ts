/**
 * readEach (activities/state.ts), the loop of every observation: it reads every item even when some fail, and stops
 * sending reads once its stop signal (by default the activity's cancellation) is aborted, throwing the abort's reason.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readEach, RETRIEVE_CONCURRENCY } from '../../activities/state';

const items = Array.from({ length: 100 }, (_, i) => i);

test('every item is read even when some reads fail; the first failure is thrown after a forced progress', async () => {
  const read: number[] = [];
  const forced: boolean[] = [];
  await assert.rejects(
    readEach(items, {
      earlier: () => undefined,
      read: async (i) => {
        read.push(i);
        if (i % 10 === 3) throw new Error(`boom ${i}`);
        return i;
      },
      kept: () => {},
      progress: (force) => forced.push(force === true),
    }),
    /boom 3$/,
  );
  assert.equal(read.length, items.length);
  assert.equal(forced.at(-1), true);
});

test('a stop aborted mid-way: no read is sent after it, the reads in flight end, and its reason is thrown', async () => {
  const stop = new AbortController();
  const reason = new Error('cancelled: superseded');
  let sent = 0;
  let inFlight = 0;
  let sentAfterStop = 0;
  let forcedProgress = false;
  await assert.rejects(
    readEach(items, {
      earlier: () => undefined,
      read: async (i) => {
        if (stop.signal.aborted) sentAfterStop++;
        sent++;
        inFlight++;
        if (sent === 20) stop.abort(reason);
        await new Promise((r) => setTimeout(r, 1));
        inFlight--;
        return i;
      },
      kept: () => {},
      progress: (force) => {
        if (force) forcedProgress = true;
      },
      stop: stop.signal,
    }),
    (err) => err === reason,
  );
  assert.equal(sentAfterStop, 0, 'no read sent once the stop was aborted');
  assert.equal(inFlight, 0, 'the reads in flight were let finish before it threw');
  assert.ok(sent >= 20 && sent < 20 + RETRIEVE_CONCURRENCY, `${sent} reads sent: those before the stop and those already in flight`);
  assert.equal(forcedProgress, true, 'what was read is recorded for the next attempt');
});
