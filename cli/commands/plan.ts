/** `lbaas plan -f FILE [-o text|json]`: a read-only dry run (planService) of what a pass would do per load balancer. */
import { randomUUID } from 'node:crypto';
import type { CliIo } from '../io';
import { workflowIds } from '../../contract';
import { noAnswerHint, warnIfNoWorker, withTemporal } from '../connect';
import { CliError, EXIT, invalid } from '../../common/errors';
import { PoolNotFoundError } from '../../client/pool-client';
import { json, type OutputFormat } from '../output';
import { loadSpec } from '../../client/spec-file';
import { planText } from '../views';
import { within } from '../wait';

/** A plan is one observation of the Engine and pure planning: minutes would mean no worker is taking it. */
const PLAN_TIMEOUT_MS = 5 * 60_000;

export async function plan(opts: { file: string; output: OutputFormat }, io: CliIo): Promise<void> {
  const { raw, spec } = await loadSpec(opts.file);
  await withTemporal(io.env, async (t) => {
    await warnIfNoWorker(t, io.stderr);
    const workflowId = workflowIds.plan(spec.serviceUid, randomUUID());
    const result = await within(
      t.client,
      PLAN_TIMEOUT_MS,
      () =>
        t.lbaas.plan(raw, spec, workflowId).catch((err: unknown) => {
          throw err instanceof PoolNotFoundError ? invalid(`service ${spec.serviceUid}: serverPool: ${err.message}`) : err;
        }),
      () => new CliError(`timed out after ${PLAN_TIMEOUT_MS / 60_000}m waiting for the plan of service ${spec.serviceUid} (${noAnswerHint(t.settings.taskQueue)})`, EXIT.timeout),
      { workflowId, taskQueue: t.settings.taskQueue, say: (line: string) => io.stderr(`${line}\n`) },
    );
    io.stdout(opts.output === 'json' ? json(result) : planText(result));
  });
}
