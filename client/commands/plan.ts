/** `lbaas plan -f FILE [-o text|json]`: a read-only dry run (planService) of what a pass would do per load balancer. */
import type { CliIo } from '../cli';
import { warnIfNoWorker, withTemporal } from '../connect';
import { json, type OutputFormat } from '../output';
import { loadSpec } from '../spec-file';
import { planText } from '../views';

export async function plan(opts: { file: string; output: OutputFormat }, io: CliIo): Promise<void> {
  const { raw, spec } = await loadSpec(opts.file);
  await withTemporal(io.env, async (t) => {
    await warnIfNoWorker(t, io.stderr);
    const result = await t.lbaas.plan(raw, spec);
    io.stdout(opts.output === 'json' ? json(result) : planText(result));
  });
}
