/**
 * Sending a Temporal update until it is answered. An update whose RPC deadline passes before the workflow answered
 * (a busy server, or the workflow's task stuck on a worker that just died until Temporal moves it) has not failed:
 * the same update id sent again attaches to the same update, so it is admitted and applied once and the caller gets
 * its outcome. Callers bound the wait themselves (`lbaas apply --wait --timeout`).
 */
import { WorkflowUpdateRPCTimeoutOrCancelledError, type WorkflowHandle } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';

export async function updateUntilAnswered<R, A extends [unknown, ...unknown[]]>(handle: () => WorkflowHandle, def: UpdateDefinition<R, A>, args: A, updateId: string): Promise<R> {
  return untilAnswered(() => handle().executeUpdate(def, { args, updateId }));
}

/** `send` (an update sent with a fixed update id) again until it is answered. */
export async function untilAnswered<R>(send: () => Promise<R>): Promise<R> {
  for (;;) {
    try {
      return await send();
    } catch (err) {
      if (!(err instanceof WorkflowUpdateRPCTimeoutOrCancelledError)) throw err;
    }
  }
}
