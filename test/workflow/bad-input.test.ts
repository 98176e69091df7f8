/**
 * The bad-input corpus (those specs that parse) sent by a raw Temporal client, skipping the CLI's validation:
 * reconcileLoadBalancer, reconcileService and planService started with `{ spec }` fail in their first workflow task,
 * non-retryably, with an ApplicationFailure of type InvalidInput naming the field; serviceController's `apply` update
 * is rejected by its validator, naming the field, and leaves nothing in the controller's history. The Engine is never
 * asked anything.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { MAX_SPEC_BYTES, parseSpec } from '../../client/spec-file';
import { applyUpdate, controllerStatusQuery } from '../../contract';
import { serviceController } from '../../workflows';
import { exampleSpec } from '../helpers/fixtures';
import { committedBadSpecs, eachLimit, generatedBadSpecs, names, type Expectation } from '../cli/bad-specs';
import { startStack, stopTemporalServer, type Stack } from '../helpers/stack';
import { chainOf, eventsOf, failureOf, Runs } from '../helpers/workflows';

interface Parsed {
  name: string;
  raw: unknown;
  expect: Expectation;
}

let stack: Stack;
let runs: Runs;
let dir: string;
let parsed: Parsed[];
let unparsed: string[];

before(async () => {
  stack = await startStack();
  runs = new Runs(stack.client, stack.taskQueue);
  dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-bad-input-wf-'));
  parsed = [];
  unparsed = [];
  for (const spec of [...committedBadSpecs(), ...(await generatedBadSpecs(dir))]) {
    try {
      // The CLI refuses files over its size limit before parsing them: such a file never reaches a workflow.
      if (spec.bytes.length > MAX_SPEC_BYTES) throw new Error('too large');
      parsed.push({ name: spec.name, raw: parseSpec(spec.bytes, spec.name), expect: spec.expect });
    } catch {
      unparsed.push(spec.name);
    }
  }
});
afterEach(async () => {
  await runs.terminateRunning();
});
after(async () => {
  await stack?.stop();
  await stopTemporalServer();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A history that failed in its first workflow task: no retried task, no activity, no timer. */
const FIRST_TASK_FAILS = ['workflowExecutionStarted', 'workflowTaskScheduled', 'workflowTaskStarted', 'workflowTaskCompleted', 'workflowExecutionFailed'];

/** Each event's type, by the attributes it carries (`workflowTaskStarted`, `activityTaskScheduled`, ...). */
const eventTypes = async (h: WorkflowHandle) =>
  (await eventsOf(h)).map((e) => {
    const key = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k] != null);
    return key ? key.replace(/EventAttributes$/, '') : `unknown(${String(e.eventType)})`;
  });

test('the corpus reaches the workflows: most bad specs parse, and those that do not are the unparseable documents', () => {
  assert.ok(parsed.length >= 50, `${parsed.length} parse`);
  for (const name of unparsed) assert.match(name, /utf8|gzip|yaml-|json-syntax|json-duplicate|json-trailing|empty-file|file-over|duplicate-port-name-yaml-key/, `${name} should parse`);
});

for (const workflowType of ['reconcileLoadBalancer', 'reconcileService', 'planService'] as const) {
  test(`${workflowType} started with each bad spec fails at once, non-retryably, type InvalidInput, naming the field; no Engine request`, async () => {
    stack.sim.resetStats();
    const failures: string[] = [];
    await eachLimit(parsed, 6, async (p) => {
      const input = workflowType === 'reconcileLoadBalancer' ? { spec: p.raw, loadBalancer: 'lb-bad-input-1' } : { spec: p.raw };
      const handle = await runs.raw(workflowType, input);
      const err = await failureOf(handle.result());
      const chain = chainOf(err);
      const first = chain[0];
      if (chain.length !== 1 || first?.class !== 'ApplicationFailure' || first.type !== 'InvalidInput' || first.nonRetryable !== true) {
        failures.push(`${p.name}: ${JSON.stringify(chain)}`);
        return;
      }
      if (!first.message.startsWith(`${workflowType}: invalid spec:`)) failures.push(`${p.name}: message ${JSON.stringify(first.message.slice(0, 200))}`);
      else if (!names(first.message, p.expect, 'spec.')) failures.push(`${p.name}: does not name ${JSON.stringify(p.expect)}: ${JSON.stringify(first.message.slice(0, 300))}`);
      else if (first.message.length > 4096) failures.push(`${p.name}: message of ${first.message.length} characters`);
      const types = await eventTypes(handle);
      if (JSON.stringify(types) !== JSON.stringify(FIRST_TASK_FAILS)) failures.push(`${p.name}: history ${types.join(', ')}`);
    });
    assert.deepEqual(failures, []);
    assert.equal(stack.sim.stats().total, 0, 'no Engine request');
  });
}

test("reconcileLoadBalancer started with a malformed outline of its parent's plan fails at once, non-retryably, type InvalidInput, naming outline; no Engine request", async () => {
  stack.sim.resetStats();
  const lb = 'lb-bad-input-1';
  const spec = exampleSpec([lb], { serviceUid: 'bad-outline' });
  const id = 'a'.repeat(32);
  const outlines = [
    'not an outline',
    { actions: {}, destroy: [] },
    { actions: { 'backend:http': ['create'] }, creates: 11, destroy: [] },
    { actions: { 'backend:http': ['keep', 'not an identifier!', 'Deployed'] }, creates: 11, destroy: [] },
    { actions: [], creates: 12, destroy: [] },
    { actions: {}, creates: -1, destroy: [] },
    { actions: {}, creates: 12, destroy: [{ kind: 'listener', identifier: id, name: 'x', reason: 'not desired', state: 'Deployed' }] },
    { actions: {}, creates: 12, destroy: [{ kind: 'server', identifier: id, name: 'x', reason: 'because', state: 'Deployed' }] },
  ];
  const failures: string[] = [];
  for (const outline of outlines) {
    const handle = await runs.raw('reconcileLoadBalancer', { spec, loadBalancer: lb, outline });
    const chain = chainOf(await failureOf(handle.result()));
    const first = chain[0];
    if (chain.length !== 1 || first?.type !== 'InvalidInput' || first.nonRetryable !== true || !first.message.startsWith('reconcileLoadBalancer: outline: ')) failures.push(`${JSON.stringify(outline)}: ${JSON.stringify(chain)}`);
  }
  assert.deepEqual(failures, []);
  assert.equal(stack.sim.stats().total, 0, 'no Engine request');
});

test("serviceController's apply update rejects each bad spec in its validator, naming the field; the controller records nothing", async () => {
  stack.sim.resetStats();
  const handle = await stack.client.workflow.start(serviceController, {
    taskQueue: stack.taskQueue,
    workflowId: `lbaas/bad-input-${Date.now()}`,
    args: [{ v: 2, serviceUid: 'bad-input' }],
  });
  try {
    const failures: string[] = [];
    await eachLimit(parsed, 6, async (p) => {
      try {
        await handle.executeUpdate(applyUpdate, { args: [p.raw] });
        failures.push(`${p.name}: accepted`);
      } catch (err) {
        if (!(err instanceof WorkflowUpdateFailedError)) {
          failures.push(`${p.name}: ${(err as Error).name}: ${(err as Error).message}`);
          return;
        }
        const message = (err.cause as Error | undefined)?.message ?? '';
        if (!message.startsWith('invalid spec:\n')) failures.push(`${p.name}: message ${JSON.stringify(message.slice(0, 200))}`);
        else if (!names(message, p.expect)) failures.push(`${p.name}: does not name ${JSON.stringify(p.expect)}: ${JSON.stringify(message.slice(0, 300))}`);
      }
    });
    assert.deepEqual(failures, []);
    const status = await handle.query(controllerStatusQuery);
    assert.equal(status.revision, 0);
    assert.equal(status.lastPass, null);
    const types = await eventTypes(handle);
    assert.deepEqual(
      types.filter((t) => /update|activity|child/i.test(t)),
      [],
      'rejected updates leave no trace in history, and nothing was started',
    );
    assert.equal(stack.sim.stats().total, 0, 'no Engine request');
  } finally {
    await handle.terminate('test cleanup');
  }
});

test('serviceController started with a bad serviceUid fails at once with InvalidInput naming serviceUid', async () => {
  const inputs: unknown[] = [{}, { serviceUid: 42 }, { serviceUid: 'has space' }, { serviceUid: '-dash' }, { serviceUid: 'u'.repeat(129) }, null];
  for (const input of inputs) {
    const handle = await runs.raw('serviceController', input);
    const chain = chainOf(await failureOf(handle.result()));
    assert.equal(chain.length, 1, JSON.stringify(chain));
    assert.equal(chain[0]?.type, 'InvalidInput');
    assert.equal(chain[0]?.nonRetryable, true);
    assert.match(chain[0]?.message ?? '', /^serviceController: serviceUid: /);
    assert.deepEqual(await eventTypes(handle), FIRST_TASK_FAILS);
  }
});
