/**
 * The bad-input corpus through the command line, against a running Temporal server with a worker polling the
 * task queue and an Engine simulator behind it: every bad spec makes `lbaas apply -f` and `lbaas plan -f` exit 2,
 * name the field (or the line) on stderr, and start nothing: no workflow on the task queue, no Engine request.
 * A valid spec applied the same way at the end proves both checks would have seen a start.
 *
 * Most specs go through the CLI's `main(argv, io)` in this process (the code `bin/lbaas.js` runs, with the same
 * environment), which takes milliseconds where a process takes a second of CPU; a handful, one of each kind of
 * failure (a field, a document that does not parse, a file over the size limit), run as real processes.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Client } from '@temporalio/client';
import { cliEnv, runCli, runInProcess } from '../helpers/cli';
import { exampleSpec, seedLoadBalancer } from '../helpers/fixtures';
import { startStack, stopTemporalServer, temporalServer, type Stack } from '../helpers/stack';
import { committedBadSpecs, eachLimit, generatedBadSpecs, names, type BadSpec } from './bad-specs';

let stack: Stack;
let dir: string;
let env: NodeJS.ProcessEnv;
let corpus: BadSpec[];

before(async () => {
  stack = await startStack();
  const srv = await temporalServer();
  env = cliEnv({ address: srv.address, namespace: srv.namespace, taskQueue: stack.taskQueue });
  dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-bad-input-'));
  corpus = [...committedBadSpecs(), ...(await generatedBadSpecs(dir))];
});
after(async () => {
  await stack?.stop();
  await stopTemporalServer();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function workflowsOnQueue(client: Client, taskQueue: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const wf of client.workflow.list({ query: `TaskQueue = '${taskQueue}'` })) ids.push(`${wf.type} ${wf.workflowId}`);
  return ids;
}

test('the corpus has at least 40 committed bad specs, each with the field or text its error must name', () => {
  const committed = committedBadSpecs();
  assert.ok(committed.length >= 40, `${committed.length} committed bad specs`);
  assert.ok(committed.filter((s) => s.expect.kind === 'field').length >= 30, 'most of them name a field');
});

/** The specs that run as real processes: one field error, one document that does not parse, one file too big. */
const AS_PROCESS = new Set(['port-internal-negative', 'yaml-syntax-error', 'file-over-1mib']);

test('every bad spec: apply -f and plan -f exit 2, name the field on stderr, print nothing on stdout, and start nothing', async () => {
  stack.sim.resetStats();
  const failures: string[] = [];
  const jobs = corpus.flatMap((spec) => (['apply', 'plan'] as const).map((command) => ({ spec, command })));
  const processes = jobs.filter((j) => AS_PROCESS.has(j.spec.name));
  assert.equal(processes.length, 2 * AS_PROCESS.size, 'every spec meant to run as a process is in the corpus');
  await eachLimit(jobs, 4, async ({ spec, command }) => {
    const args = [command, '-f', spec.file];
    const r = AS_PROCESS.has(spec.name) ? await runCli(args, { env, timeoutMs: 60_000 }) : await runInProcess(args, env);
    const what = `${command} ${spec.name}`;
    if (r.code !== 2) failures.push(`${what}: exit ${r.code}, stderr ${JSON.stringify(r.stderr.slice(0, 300))}`);
    else if (!names(r.stderr, spec.expect)) failures.push(`${what}: stderr does not name ${JSON.stringify(spec.expect)}: ${JSON.stringify(r.stderr.slice(0, 300))}`);
    else if (r.stdout !== '') failures.push(`${what}: stdout not empty: ${JSON.stringify(r.stdout.slice(0, 200))}`);
    else if (/\n\s+at /.test(r.stderr)) failures.push(`${what}: a stack trace on stderr`);
    else if (r.stderr.length > 4096) failures.push(`${what}: ${r.stderr.length} bytes on stderr (the input echoed?)`);
  });
  assert.deepEqual(failures, []);
  assert.deepEqual(await workflowsOnQueue(stack.client, stack.taskQueue), [], 'no workflow started on the task queue');
  assert.equal(stack.sim.stats().total, 0, 'no Engine request');
});

test('control: a valid spec applied the same way starts its controller and reaches the Engine, so both checks above can fail', async () => {
  const lb = seedLoadBalancer(stack.sim, 'lb-bad-input-control');
  const file = path.join(dir, 'valid.yaml');
  await writeFile(file, JSON.stringify(exampleSpec([lb], { serviceUid: 'bad-input-control' })));
  const r = await runCli(['apply', '-f', file, '--wait', '--timeout', '60s'], { env, timeoutMs: 90_000 });
  assert.equal(r.code, 0, r.stderr);
  const started = await workflowsOnQueue(stack.client, stack.taskQueue);
  assert.ok(started.includes('serviceController lbaas/bad-input-control'), started.join(', '));
  assert.ok(stack.sim.stats().total > 0);
  await stack.client.workflow.getHandle('lbaas/bad-input-control').terminate('test cleanup');
});
