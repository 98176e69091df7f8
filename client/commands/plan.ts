/** `lbaas plan -f FILE [-o text|json]`: a read-only dry run (planService) of what a pass would do per load balancer. */
import type { CliIo } from '../cli';
import { withTemporal } from '../connect';
import { json, type OutputFormat } from '../output';
import { loadSpec } from '../spec-file';
import { planText } from '../views';

export async function plan(opts: { file: string; output: OutputFormat }, io: CliIo): Promise<void> {
  const { raw, spec } = await loadSpec(opts.file);
  await withTemporal(io.env, async ({ lbaas }) => {
    const result = await lbaas.plan(raw, spec);
    io.stdout(opts.output === 'json' ? json(result) : planText(result));
  });
}
