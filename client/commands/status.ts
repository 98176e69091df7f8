/**
 * `lbaas status UID` and `lbaas list`: the controllers' own view (the `status` query) and the list of running
 * controllers (visibility, so a controller started a second ago may be missing for a moment).
 */
import type { CliIo } from '../cli';
import { requireController, withTemporal } from '../connect';
import { json, type OutputFormat } from '../output';
import { checkUid, listEntry, listText, statusText, statusView } from '../views';

export async function status(uid: string, opts: { output: OutputFormat }, io: CliIo): Promise<void> {
  checkUid(uid);
  await withTemporal(io.env, async (t) => {
    await requireController(t, uid);
    const s = await t.lbaas.status(uid);
    io.stdout(opts.output === 'json' ? json(statusView(s)) : statusText(s));
  });
}

export async function list(opts: { output: OutputFormat }, io: CliIo): Promise<void> {
  await withTemporal(io.env, async ({ lbaas }) => {
    const entries = (await lbaas.list()).map(listEntry);
    io.stdout(opts.output === 'json' ? json(entries) : listText(entries));
  });
}
