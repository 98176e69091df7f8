/**
 * Sending a Temporal update until it is answered. Two refusals mean "not applied, send it again", and the same update
 * id sent again attaches to the same update, so it is admitted and applied once and the caller gets its outcome:
 *
 * - the RPC's deadline passed before the workflow answered (a busy server, or the workflow's task stuck on a worker
 *   that just died until Temporal moves it);
 * - the server aborted the update because the workflow task that carried it failed on the server's side, with
 *   "unexpected workflow task failure" (a WorkflowNotReady status). The common cause: a task that completes the run
 *   (continue-as-new) while a signal arrived during it, which Temporal refuses (UnhandledCommand) so that the next
 *   task sees the signal. Nothing of that task is recorded, the update included, and Temporal does not retry it
 *   itself. Pools and controllers rotate their histories while their services and pools signal them, so at scale
 *   this happens (test/workflow/pool-updates-rotating.test.ts). It is sent again after a short pause, at most
 *   MAX_ABORTED_ATTEMPTS times in a row: a task that failed this way every time is a fault to report, not a race.
 *
 * Callers bound the wait themselves (`lbaas apply --wait --timeout`).
 */
import { isGrpcServiceError, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, type UpdateDefinition } from '@temporalio/common';

/** Aborted sends in a row before the error is passed on; with the pauses below (doubling to 5 s), about 70 s. */
export const MAX_ABORTED_ATTEMPTS = 20;
const PAUSE_MS = { first: 100, max: 5_000 };

/** The type of the status detail Temporal attaches to "unexpected workflow task failure" (and to nothing else an update meets). */
const WORKFLOW_NOT_READY = 'temporal.api.errordetails.v1.WorkflowNotReadyFailure';

/**
 * Whether `err` (as the client throws it: a ServiceError whose cause is the gRPC error, or the gRPC error itself) is
 * the server's abort of an update whose workflow task failed. Decided by the status detail's type, which the
 * server's status carries in `grpc-status-details-bin` (also nested, for update-with-start's multi-operation status).
 */
export function isAbortedByWorkflowTask(err: unknown): boolean {
  for (let e = err as { cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (!isGrpcServiceError(e)) continue;
    const details = e.metadata?.get('grpc-status-details-bin') ?? [];
    if (details.some((d) => (typeof d === 'string' ? d : Buffer.from(d).toString('latin1')).includes(WORKFLOW_NOT_READY))) return true;
  }
  return false;
}

/**
 * Whether `err` is Temporal's failure of an update that was accepted and still running when its run ended
 * ("Workflow Update failed because the Workflow completed before the Update completed", type
 * AcceptedUpdateCompletedWorkflow). A pool continues as new with its waits open (workflows/pool.ts); a wait, unlike a
 * change, can be sent again to the new run.
 */
export function isOutlivedByRun(err: unknown): boolean {
  return err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure && err.cause.type === 'AcceptedUpdateCompletedWorkflow';
}

/**
 * Whether `err` is the refusal of an update the workflow has no handler for: a run of an earlier build, which does not
 * know a newer update. The TypeScript SDK's workflow side rejects it with this message (workflow internals).
 */
export function isUnknownUpdate(err: unknown, name: string): boolean {
  return err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure && err.cause.message === `No registered handler for update: ${name}`;
}

export async function updateUntilAnswered<R, A extends [unknown, ...unknown[]]>(
  handle: () => WorkflowHandle,
  def: UpdateDefinition<R, A>,
  args: A,
  updateId: string,
  o: { signal?: AbortSignal } = {},
): Promise<R> {
  return untilAnswered(() => handle().executeUpdate(def, { args, updateId }), o);
}

/**
 * `send` (an update sent with a fixed update id) again until it is answered. `rpcTimeouts: 'throw'` passes a deadline
 * on to the caller instead (`lbaas apply` and `delete` without a wait of their own) and sends again only what the
 * server aborted.
 */
export async function untilAnswered<R>(
  send: () => Promise<R>,
  o: { rpcTimeouts?: 'resend' | 'throw'; pauseMs?: { first: number; max: number }; signal?: AbortSignal } = {},
): Promise<R> {
  const pause = o.pauseMs ?? PAUSE_MS;
  let aborted = 0;
  for (;;) {
    try {
      return await send();
    } catch (err) {
      // An aborted call fails as cancelled: sent again, it would fail the same way at once, for ever.
      if (o.signal?.aborted) throw err;
      if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError && o.rpcTimeouts !== 'throw') continue;
      if (!isAbortedByWorkflowTask(err) || ++aborted >= MAX_ABORTED_ATTEMPTS) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.min(pause.max, pause.first * 2 ** (aborted - 1))));
    }
  }
}

/**
 * One bounded wait for an update's outcome: `poll` (the handle's result) with a gRPC deadline `withinMs` away, and
 * null when the deadline (or a server's cancel) ended the poll before the update finished. The caller decides when
 * to poll again: lbaas kube gives others their turn meanwhile (kube/pass-waits.ts).
 */
export async function withinTurn<R>(connection: { withDeadline<T>(deadline: number | Date, fn: () => Promise<T>): Promise<T> }, withinMs: number, poll: () => Promise<R>): Promise<R | null> {
  try {
    return await connection.withDeadline(Date.now() + withinMs, () => untilAnswered(poll, { rpcTimeouts: 'throw' }));
  } catch (err) {
    if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return null;
    throw err;
  }
}
