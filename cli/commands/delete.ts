/**
 * `lbaas delete UID [--wait] [--timeout DUR] [-o text|json]`: ask the controller to tear down everything the service owns, then
 * end. Without --wait it returns once the controller has accepted the delete. With --wait it returns when the
 * teardown has finished; failed teardown passes are retried by the controller, so a teardown that cannot finish
 * ends in a timeout (exit 3) naming what is still pending. --timeout bounds the whole command, including the
 * controller accepting the delete (which needs a worker). With -o json, stdout is one document (docs/cli.md) and the
 * progress lines are left out.
 */
import type { CliIo } from '../io';
import { noAnswerHint, requireController, warnIfNoWorker, withTemporal } from '../connect';
import { CliError, EXIT } from '../../common/errors';
import { checkUid, parseDurationFlag, progressLines } from '../views';
import { waitWithProgress, within } from '../wait';
import { formatDuration } from '../../domain';
import { workflowIds } from '../../contract';
import { json, type OutputFormat } from '../output';

export async function deleteService(uid: string, opts: { wait?: boolean; timeout: string; output?: OutputFormat }, io: CliIo): Promise<void> {
  const asJson = opts.output === 'json';
  checkUid(uid);
  const timeoutMs = parseDurationFlag(opts.timeout, '--timeout');
  await withTemporal(io.env, async (t) => {
    const deadline = Date.now() + timeoutMs;
    const { taskQueue } = await requireController(t, uid);
    await warnIfNoWorker(t, io.stderr, taskQueue);
    const pickup = { workflowId: workflowIds.controller(uid), taskQueue, say: (line: string) => io.stderr(`${line}\n`) };
    const timedOut = (what: string) => () =>
      new CliError(`timed out after ${formatDuration(timeoutMs)} ${what} (${noAnswerHint(taskQueue)})`, EXIT.timeout);
    if (!opts.wait) {
      await within(t.client, timeoutMs, () => t.lbaas.startDelete(uid), timedOut(`waiting for the controller of service ${uid} to accept the delete`), pickup);
      if (asJson) io.stdout(json({ serviceUid: uid, deleteAccepted: true, deleted: false }));
      else io.stdout(`deleting service ${uid}: its controller tears everything down, then ends (follow with: lbaas status ${uid})\n`);
      return;
    }
    // Where the service has objects: the load balancers of its last pass, and any its objects were seen on.
    const before = await within(t.client, timeoutMs, () => t.lbaas.status(uid), timedOut(`waiting for the status of service ${uid}`));
    const lbs = [...new Set([...Object.keys(before.loadBalancers), ...before.objects.map((o) => o.loadBalancer)])].sort();
    if (!asJson) io.stderr(`deleting service ${uid}; waiting up to ${formatDuration(timeoutMs)} for the teardown\n`);
    const outcome = await waitWithProgress({
      client: t.client,
      run: () => t.lbaas.delete(uid),
      timeoutMs: Math.max(0, deadline - Date.now()),
      progress: async () => progressLines(await t.lbaas.progress(uid, lbs)),
      ...(asJson ? {} : { print: (line: string) => io.stderr(`${line}\n`) }),
      pickup,
    });
    if (!outcome.done) {
      const s = await within(t.client, 5_000, () => t.lbaas.status(uid), () => new Error('no status')).catch(() => null);
      const lastError = s?.lastPass?.error ? `\nlast teardown pass failed: ${s.lastPass.error}` : '';
      const pending = outcome.lastProgress.length > 0 ? `\nstill pending: ${outcome.lastProgress.join('; ')}` : '';
      throw new CliError(`timed out after ${formatDuration(timeoutMs)} waiting for service ${uid} to be deleted (the controller keeps at it)${lastError || pending}`, EXIT.timeout);
    }
    const r = outcome.value;
    const destroyed = Object.values(r.loadBalancers).reduce((n, x) => n + x.destroyed, 0);
    const where = Object.keys(r.loadBalancers).sort();
    if (asJson) {
      const loadBalancers = Object.fromEntries(where.map((lb) => [lb, { destroyed: r.loadBalancers[lb]?.destroyed ?? 0 }]));
      io.stdout(json({ serviceUid: uid, deleteAccepted: true, deleted: true, destroyed, loadBalancers }));
      return;
    }
    io.stdout(`deleted service ${uid}: ${destroyed} ${destroyed === 1 ? 'object' : 'objects'} destroyed${where.length > 0 ? ` on ${where.join(', ')}` : ''}; its controller has ended\n`);
  });
}
