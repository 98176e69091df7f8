/**
 * What an activity throws, as Temporal sees it (activities/failures.ts): a cancellation stays a CancelledFailure, so
 * the worker reports a superseded pass's activity as cancelled instead of as a failure to retry.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { EngineValidationError } from '../../activities/engine';
import { toFailure, translated } from '../../activities/failures';
import { FAILURE_TYPES } from '../../contract';

test('a CancelledFailure passes through unchanged; a retryable error becomes a retryable ApplicationFailure', async () => {
  const cancelled = new CancelledFailure('cancelled by the workflow');
  assert.equal(toFailure(cancelled), cancelled);
  await assert.rejects(
    translated(() => Promise.reject(cancelled)),
    (err) => err === cancelled,
  );
  const other = toFailure(new Error('boom'));
  assert.ok(other instanceof ApplicationFailure);
  assert.equal(other.nonRetryable, false);
  assert.equal(other.message, 'boom');
});

test('an Engine 4xx that retrying cannot fix becomes a non-retryable EngineRejected failure', () => {
  const f = toFailure(new EngineValidationError({ method: 'POST', path: '/api/LBaaS/v1/backend.json', status: 422, validation: { name: 'taken' } }));
  assert.ok(f instanceof ApplicationFailure);
  assert.equal(f.type, FAILURE_TYPES.engineRejected);
  assert.equal(f.nonRetryable, true);
});
