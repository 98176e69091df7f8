/**
 * `lbaas resync UID`: signal the service's controller to run a pass now (against what the Engine has, not a new
 * spec). `lbaas resync --all`: start one fullResync run now, id `lbaas-full-resync-manual-<time>`, and print what it
 * did. It is started directly rather than through the Schedule so that it works whether or not the Schedule exists
 * and whatever its state (paused, or skipping because a run is in progress); and it never destroys orphaned
 * objects, whatever the Schedule is set to: a manual run only reports them.
 */
import type { CliIo } from '../io';
import { noAnswerHint, requireController, warnIfNoWorker, withTemporal } from '../connect';
import { CliError, EXIT, invalid } from '../../common/errors';
import { checkUid } from '../views';
import { within } from '../wait';

/** A full resync lists controllers, signals them and scans the Engine once: minutes would mean something is stuck. */
const FULL_RESYNC_TIMEOUT_MS = 10 * 60_000;
import { workflowIds, workflowTypes, type FullResyncWorkflow } from '../../contract';

export async function resync(uid: string | undefined, opts: { all?: boolean }, io: CliIo): Promise<void> {
  if (uid !== undefined && opts.all) throw invalid('give a service uid or --all, not both');
  if (uid === undefined && !opts.all) throw invalid('give a service uid, or --all for every service');
  if (uid !== undefined) checkUid(uid);
  await withTemporal(io.env, async (t) => {
    if (uid !== undefined) {
      await requireController(t, uid);
      await t.lbaas.resync(uid);
      io.stdout(`resync requested for service ${uid} (follow with: lbaas status ${uid})\n`);
      return;
    }
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
    );
    const lines = [`resync requested for ${r.signalled.length} ${r.signalled.length === 1 ? 'service' : 'services'}${r.signalled.length > 0 ? `: ${r.signalled.join(', ')}` : ''}`];
    if (r.missed.length > 0) lines.push(`controllers that ended before they could be asked: ${r.missed.join(', ')}`);
    for (const o of r.orphans) {
      lines.push(`orphaned: ${o.objects} ${o.objects === 1 ? 'object' : 'objects'} tagged for service ${o.serviceUid}, which has no controller, on ${o.loadBalancers.join(', ')} (left alone)`);
    }
    io.stdout(`${lines.join('\n')}\n`);
  });
}
