/**
 * What an activity body throws, as Temporal gets it (activities/failures.ts `translated`): Engine errors become
 * ApplicationFailures, the activity's own cancellation passes through unchanged so the SDK reports the attempt
 * cancelled, not failed (a superseded pass then ends cancelled, not as a failed pass).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { isOwnCancellation, translated } from '../../activities/failures';

test("the activity's CancelledFailure (what Context.sleep and readEach throw on cancellation) is rethrown as it is", async () => {
  const cancelled = new CancelledFailure('superseded');
  await assert.rejects(
    translated(async () => {
      throw cancelled;
    }),
    (err) => err === cancelled,
  );
  assert.equal(isOwnCancellation(cancelled), true);
});

test('an AbortError outside a cancelled activity is an ordinary, retryable failure', async () => {
  const abort = Object.assign(new Error('This operation was aborted'), { name: 'AbortError' });
  assert.equal(isOwnCancellation(abort), false);
  await assert.rejects(
    translated(async () => {
      throw abort;
    }),
    (err) => err instanceof ApplicationFailure && err.type === 'AbortError' && !err.nonRetryable,
  );
});
