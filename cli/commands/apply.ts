/**
 * `lbaas apply -f FILE [--wait] [--timeout DUR] [-o text|json]`: validate the spec (nothing is started when it is
 * invalid), apply it to the service's controller with update-with-start, and with --wait wait for that revision's
 * pass. Exit 1 when the pass did not converge, 3 when the wait timed out (the controller keeps working).
 */
import { WorkflowUpdateFailedError } from '@temporalio/client';
import type { CliIo } from '../io';
import { noAnswerHint, warnIfNoWorker, withTemporal } from '../connect';
import { CliError, EXIT, invalid } from '../../common/errors';
import { json, type OutputFormat } from '../output';
import { loadSpec } from '../../client/spec-file';
import { PoolNotFoundError } from '../../client/pool-client';
import { applyResult, applyResultText, parseDurationFlag, progressLines } from '../views';
import { waitWithProgress, within } from '../wait';
import { formatDuration } from '../../domain';
import { workflowIds } from '../../contract';

export interface ApplyOptions {
  file: string;
  wait?: boolean;
  timeout: string;
  output: OutputFormat;
}

export async function apply(opts: ApplyOptions, io: CliIo): Promise<void> {
  const timeoutMs = parseDurationFlag(opts.timeout, '--timeout');
  const { raw, spec } = await loadSpec(opts.file);
  const uid = spec.serviceUid;
  await withTemporal(io.env, async (t) => {
    const { lbaas, client } = t;
    // --timeout bounds the whole command: the controller accepting the spec (which needs a worker), then the pass.
    const deadline = Date.now() + timeoutMs;
    await warnIfNoWorker(t, io.stderr);
    const pickup = { workflowId: workflowIds.controller(uid), taskQueue: t.settings.taskQueue, say: (line: string) => io.stderr(`${line}\n`) };
    let revision: number;
    let workflowId: string;
    try {
      ({ revision, workflowId } = await within(
        client,
        timeoutMs,
        () => lbaas.apply(raw, spec),
        () => new CliError(`timed out after ${formatDuration(timeoutMs)}: the controller of service ${uid} did not accept the spec (${noAnswerHint(t.settings.taskQueue)})`, EXIT.timeout),
        pickup,
      ));
    } catch (err) {
      if (err instanceof PoolNotFoundError) throw invalid(`service ${uid}: serverPool: ${err.message}; nothing was applied`);
      // The controller's validator refused the spec (for instance while the service is being deleted).
      if (err instanceof WorkflowUpdateFailedError) throw invalid(`service ${uid}: apply refused: ${(err.cause as Error | undefined)?.message ?? err.message}`);
      throw err;
    }
    if (!opts.wait) {
      if (opts.output === 'json') io.stdout(json({ serviceUid: uid, revision, workflowId }));
      else io.stdout(`applied revision ${revision} to service ${uid} (controller ${workflowId})\n`);
      return;
    }
    if (opts.output === 'text') io.stderr(`applied revision ${revision} to service ${uid}; waiting up to ${formatDuration(timeoutMs)} for its pass\n`);
    const outcome = await waitWithProgress({
      client,
      run: () => lbaas.waitConverged(uid, revision),
      timeoutMs: Math.max(0, deadline - Date.now()),
      progress: async () => progressLines(await lbaas.progress(uid, spec.loadBalancers)),
      ...(opts.output === 'text' ? { print: (line: string) => io.stderr(`${line}\n`) } : {}),
      pickup,
    });
    if (!outcome.done) {
      const pending = outcome.lastProgress.length > 0 ? `\nstill pending: ${outcome.lastProgress.join('; ')}` : '';
      throw new CliError(
        `timed out after ${formatDuration(timeoutMs)} waiting for revision ${revision} of service ${uid} (the controller keeps working: lbaas status ${uid})${pending}`,
        EXIT.timeout,
      );
    }
    const pass = outcome.value;
    const result = applyResult(pass, revision);
    if (opts.output === 'json') io.stdout(json(result));
    else io.stdout(applyResultText(result, pass.loadBalancers));
    if (result.appliedRevision !== undefined) io.stderr(`revision ${revision} was superseded by revision ${result.revision} (applied meanwhile); the result is for revision ${result.revision}\n`);
    if (!result.converged) throw new CliError(`revision ${result.revision} of service ${uid} did not converge: ${result.error ?? 'unknown error'}`, EXIT.failed);
  });
}
