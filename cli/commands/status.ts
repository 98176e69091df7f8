/**
 * `lbaas status UID` and `lbaas list`: the controllers' own view (the `status` query) and the list of running
 * controllers (visibility, so a controller started a second ago may be missing for a moment).
 */
import type { Client } from '@temporalio/client';
import { PASS_TERMINATED, workflowIds, type ControllerStatus } from '../../contract';
import type { CliIo } from '../io';
import { noAnswerHint, requireController, warnIfNoWorker, withTemporal } from '../connect';
import { CliError, EXIT } from '../../common/errors';
import { json, type OutputFormat } from '../output';
import { checkUid, listEntry, listText, statusText, statusView } from '../views';
import { within } from '../wait';

/** A query is answered by a worker replaying the controller: seconds at most; 30 s means nobody is answering. */
const QUERY_TIMEOUT_MS = 30_000;

export async function status(uid: string, opts: { output: OutputFormat }, io: CliIo): Promise<void> {
  checkUid(uid);
  await withTemporal(io.env, async (t) => {
    const { taskQueue, build } = await requireController(t, uid);
    await warnIfNoWorker(t, io.stderr, taskQueue);
    const s = await within(
      t.client,
      QUERY_TIMEOUT_MS,
      () => t.lbaas.status(uid, { allObjects: true }),
      () => new CliError(`no answer to the status query of service ${uid} within ${QUERY_TIMEOUT_MS / 1000}s (${noAnswerHint(taskQueue)})`, EXIT.timeout),
    );
    const shown = await withTerminationReason(t.client, s);
    io.stdout(opts.output === 'json' ? json(statusView(shown, build)) : statusText(shown, build));
  });
}

/**
 * A controller cannot see why its pass was terminated (Temporal tells a parent no reason); the pass's own history
 * ends with it, e.g. `stranded on build lbaas.X: no worker has polled it since T` (worker/stranded.ts). Read there,
 * it replaces the pass id in the last pass's error; without it (history gone) the error stays as the controller wrote it.
 */
export async function withTerminationReason(client: Pick<Client, 'workflowService' | 'options'>, s: ControllerStatus): Promise<ControllerStatus> {
  const last = s.lastPass;
  if (!last?.error?.startsWith(PASS_TERMINATED)) return s;
  try {
    const r = await client.workflowService.getWorkflowExecutionHistoryReverse({
      namespace: client.options.namespace,
      execution: { workflowId: workflowIds.pass(s.serviceUid, last.pass) },
      maximumPageSize: 1,
    });
    const reason = r.history?.events?.[0]?.workflowExecutionTerminatedEventAttributes?.reason;
    return reason ? { ...s, lastPass: { ...last, error: `${PASS_TERMINATED} (${reason}): retried` } } : s;
  } catch {
    return s;
  }
}

export async function list(opts: { output: OutputFormat }, io: CliIo): Promise<void> {
  await withTemporal(io.env, async ({ lbaas }) => {
    const entries = (await lbaas.list()).map(listEntry);
    io.stdout(opts.output === 'json' ? json(entries) : listText(entries));
  });
}
