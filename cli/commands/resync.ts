/**
 * `lbaas resync UID [--wait] [--timeout DUR] [-o text|json]`: ask the service's controller to run a pass now (against
 * what the Engine has, not a new spec). Without --wait it signals and returns. With --wait it waits until the
 * controller has settled after the request and reports that pass like `apply --wait`: exit 0 converged, 1 failed,
 * 3 timed out (the controller keeps working), 4 Temporal unreachable.
 *
 * `lbaas resync --all`: start one fullResync run now, id `lbaas-full-resync-manual-<time>`, and print what it did.
 * It is started directly rather than through the Schedule so that it works whether or not the Schedule exists and
 * whatever its state (paused, or skipping because a run is in progress); and it never destroys orphaned objects,
 * whatever the Schedule is set to: a manual run only reports them.
 */
import { ApplicationFailure, WorkflowUpdateFailedError } from '@temporalio/client';
import type { CliIo } from '../io';
import { noAnswerHint, requireController, warnIfNoWorker, withTemporal, type Temporal } from '../connect';
import { CliError, EXIT, invalid } from '../../common/errors';
import { formatDuration } from '../../domain';
import { json, type OutputFormat } from '../output';
import { applyResult, applyResultText, checkUid, parseDurationFlag, progressLines } from '../views';
import { waitWithProgress, within } from '../wait';
import { workflowIds, workflowTypes, type FullResyncWorkflow } from '../../contract';

/** A full resync lists controllers, signals them and scans the Engine once: minutes would mean something is stuck. */
const FULL_RESYNC_TIMEOUT_MS = 10 * 60_000;

export interface ResyncOptions {
  all?: boolean;
  wait?: boolean;
  timeout: string;
  output: OutputFormat;
}

export async function resync(uid: string | undefined, opts: ResyncOptions, io: CliIo): Promise<void> {
  if (uid !== undefined && opts.all) throw invalid('give a service uid or --all, not both');
  if (uid === undefined && !opts.all) throw invalid('give a service uid, or --all for every service');
  if (opts.all && opts.wait) throw invalid('--wait is for one service: resync --all always waits for the full resync it starts');
  if (uid !== undefined) checkUid(uid);
  const timeoutMs = parseDurationFlag(opts.timeout, '--timeout');
  await withTemporal(io.env, async (t) => {
    if (uid === undefined) return fullResync(t, opts, io);
    const deadline = Date.now() + timeoutMs;
    const { taskQueue, loadBalancers } = await requireController(t, uid);
    if (!opts.wait) {
      await t.lbaas.resync(uid);
      if (opts.output === 'json') io.stdout(json({ serviceUid: uid, resyncRequested: true }));
      else io.stdout(`resync requested for service ${uid} (follow with: lbaas status ${uid})\n`);
      return;
    }
    await warnIfNoWorker(t, io.stderr, taskQueue);
    if (opts.output === 'text') io.stderr(`resync requested for service ${uid}; waiting up to ${formatDuration(timeoutMs)} for its pass\n`);
    const outcome = await waitWithProgress({
      client: t.client,
      run: () => t.lbaas.resyncAndWait(uid).catch((err: unknown) => Promise.reject(refused(uid, err))),
      timeoutMs: Math.max(0, deadline - Date.now()),
      progress: async () => progressLines(await t.lbaas.progress(uid, loadBalancers)),
      ...(opts.output === 'text' ? { print: (line: string) => io.stderr(`${line}\n`) } : {}),
      pickup: { workflowId: workflowIds.controller(uid), taskQueue, say: (line: string) => io.stderr(`${line}\n`) },
    });
    if (!outcome.done) {
      const pending = outcome.lastProgress.length > 0 ? `\nstill pending: ${outcome.lastProgress.join('; ')}` : '';
      throw new CliError(
        `timed out after ${formatDuration(timeoutMs)} waiting for the resync pass of service ${uid} (the controller keeps working: lbaas status ${uid}; ${noAnswerHint(taskQueue)})${pending}`,
        EXIT.timeout,
      );
    }
    const pass = outcome.value;
    const result = applyResult(pass, pass.revision);
    if (opts.output === 'json') io.stdout(json(result));
    else io.stdout(applyResultText(result, pass.loadBalancers));
    if (!result.converged) throw new CliError(`the resync pass of service ${uid} (revision ${result.revision}) did not converge: ${result.error ?? 'unknown error'}`, EXIT.failed);
  });
}

/**
 * The controller refused the resync or gave it up: the service is being deleted (exit 2, as an apply refused), or no
 * pass could run (exit 1, a failed reconciliation). Other errors pass through.
 */
function refused(uid: string, err: unknown): unknown {
  if (!(err instanceof WorkflowUpdateFailedError)) return err;
  const cause = err.cause;
  const message = (cause as Error | undefined)?.message ?? err.message;
  if (cause instanceof ApplicationFailure && cause.type === 'NoPass') return new CliError(message, EXIT.failed);
  return invalid(`service ${uid}: resync refused: ${message}`);
}

async function fullResync(t: Temporal, opts: ResyncOptions, io: CliIo): Promise<void> {
  await warnIfNoWorker(t, io.stderr);
  const workflowId = workflowIds.manualResync(new Date());
  io.stderr(`started full resync ${workflowId}\n`);
  const r = await within(
    t.client,
    FULL_RESYNC_TIMEOUT_MS,
    () =>
      t.client.workflow.execute<FullResyncWorkflow>(workflowTypes.fullResync, {
        workflowId,
        taskQueue: t.settings.taskQueue,
        args: [{}],
        staticSummary: 'full resync (manual: lbaas resync --all)',
      }),
    () => new CliError(`timed out after ${FULL_RESYNC_TIMEOUT_MS / 60_000}m waiting for full resync ${workflowId} (${noAnswerHint(t.settings.taskQueue)})`, EXIT.timeout),
    { workflowId, taskQueue: t.settings.taskQueue, say: (line: string) => io.stderr(`${line}\n`) },
  );
  if (opts.output === 'json') {
    io.stdout(json({ workflowId, signalled: r.signalled, missed: r.missed, orphans: r.orphans }));
    return;
  }
  const lines = [`resync requested for ${r.signalled.length} ${r.signalled.length === 1 ? 'service' : 'services'}${r.signalled.length > 0 ? `: ${r.signalled.join(', ')}` : ''}`];
  if (r.missed.length > 0) lines.push(`controllers that ended before they could be asked: ${r.missed.join(', ')}`);
  for (const o of r.orphans) {
    lines.push(`orphaned: ${o.objects} ${o.objects === 1 ? 'object' : 'objects'} tagged for service ${o.serviceUid}, which has no controller, on ${o.loadBalancers.join(', ')} (left alone)`);
  }
  io.stdout(`${lines.join('\n')}\n`);
}
