/**
 * client/update.ts: which refusals of an update are sent again, and how often. The real abort is produced by the
 * Temporal dev server in test/workflow/pool-updates-rotating.test.ts; here the rules, on errors shaped as the client
 * throws them (a ServiceError whose cause is the gRPC error with its status details).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ServiceError, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { isAbortedByWorkflowTask, isOutlivedByRun, MAX_ABORTED_ATTEMPTS, untilAnswered } from '../../client/update';

function grpcError(code: number, details: string, statusDetail?: string): Error {
  const err = Object.assign(new Error(`${code} ${details}`), { code, details, metadata: { get: (key: string) => (key === 'grpc-status-details-bin' && statusDetail ? [Buffer.from(`\x0a\x2f${statusDetail}\x12\x00`, 'latin1')] : []) } });
  return err;
}
const ABORTED = () => new ServiceError('Workflow Update failed', { cause: grpcError(9, 'Unable to perform workflow execution update due to unexpected workflow task failure.', 'type.googleapis.com/temporal.api.errordetails.v1.WorkflowNotReadyFailure') });

test('isAbortedByWorkflowTask: true for the WorkflowNotReady status detail (as the cause of a ServiceError, or alone); false for other failed preconditions, other gRPC errors and plain errors', () => {
  assert.equal(isAbortedByWorkflowTask(ABORTED()), true);
  assert.equal(isAbortedByWorkflowTask(ABORTED().cause), true);
  assert.equal(isAbortedByWorkflowTask(new ServiceError('Workflow Update failed', { cause: grpcError(9, 'some other precondition') })), false);
  assert.equal(isAbortedByWorkflowTask(new ServiceError('Workflow Update failed', { cause: grpcError(3, 'invalid', 'type.googleapis.com/temporal.api.errordetails.v1.QueryFailedFailure') })), false);
  assert.equal(isAbortedByWorkflowTask(new Error('Unable to perform workflow execution update due to unexpected workflow task failure.')), false);
  assert.equal(isAbortedByWorkflowTask(undefined), false);
});

test('untilAnswered: an aborted send is sent again and its answer returned; any other error is passed on at once', async () => {
  let sends = 0;
  assert.equal(await untilAnswered(async () => (++sends < 3 ? Promise.reject(ABORTED()) : 'answer')), 'answer');
  assert.equal(sends, 3);

  sends = 0;
  const other = new Error('the validator refused it');
  await assert.rejects(untilAnswered(async () => (sends++, Promise.reject(other))), (err) => err === other);
  assert.equal(sends, 1);
});

test(`untilAnswered: aborted ${MAX_ABORTED_ATTEMPTS} times in a row, the abort is passed on (a task that always fails is a fault, not a race)`, async () => {
  let sends = 0;
  await assert.rejects(
    untilAnswered(async () => (sends++, Promise.reject(ABORTED())), { pauseMs: { first: 1, max: 2 } }),
    (err) => isAbortedByWorkflowTask(err),
  );
  assert.equal(sends, MAX_ABORTED_ATTEMPTS);
});

test("untilAnswered: an RPC deadline is sent again by default, passed on with rpcTimeouts: 'throw'", async () => {
  const timeout = () => new WorkflowUpdateRPCTimeoutOrCancelledError('deadline', { cause: new Error('4 DEADLINE_EXCEEDED') });
  let sends = 0;
  assert.equal(await untilAnswered(async () => (++sends < 2 ? Promise.reject(timeout()) : 'answer')), 'answer');
  assert.equal(sends, 2);
  sends = 0;
  await assert.rejects(untilAnswered(async () => (sends++, Promise.reject(timeout())), { rpcTimeouts: 'throw' }), WorkflowUpdateRPCTimeoutOrCancelledError);
  assert.equal(sends, 1);
});

test('isOutlivedByRun: true for an update failed because its run ended first (AcceptedUpdateCompletedWorkflow, what a pool continuing as new does to an open wait); false for a failure the handler raised, for an abort, and for plain errors', () => {
  const outlived = new WorkflowUpdateFailedError('Workflow Update failed', ApplicationFailure.create({ message: 'Workflow Update failed because the Workflow completed before the Update completed.', type: 'AcceptedUpdateCompletedWorkflow', nonRetryable: true }));
  assert.equal(isOutlivedByRun(outlived), true);
  assert.equal(isOutlivedByRun(new WorkflowUpdateFailedError('Workflow Update failed', ApplicationFailure.create({ message: 'revision: must be a revision of the pool from 0 to 3' }))), false);
  assert.equal(isOutlivedByRun(new WorkflowUpdateFailedError('Workflow Update failed', undefined)), false);
  assert.equal(isOutlivedByRun(ABORTED()), false);
  assert.equal(isOutlivedByRun(new Error('Workflow Update failed because the Workflow completed before the Update completed.')), false);
});
