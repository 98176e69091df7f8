/**
 * The bad-input corpus (those specs that parse) sent by a raw Temporal client, skipping the CLI's validation:
 * reconcileLoadBalancer, reconcileService and planService started with `{ spec }` fail in their first workflow task,
 * non-retryably, with an ApplicationFailure of type InvalidInput naming the field; serviceController's `apply` update
 * is rejected by its validator, naming the field, and leaves nothing in the controller's history. Every other workflow
 * started with a field it does not take, of the wrong type or missing, fails the same way naming the workflow and the
 * field; the entities drop a signal whose payload does not read, and keep running. The Engine is never asked anything.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { MAX_SPEC_BYTES, parseSpec } from '../../client/spec-file';
import { applyUpdate, controllerStatusQuery, poolMembersSignal, poolReportSignal, poolRoundEndedSignal, poolSetUpdate, poolStatusQuery, poolSubscribeSignal, poolWakeSignal, supersededCreatesSignal, wakeSignal } from '../../contract';
import { serviceController, type serverPool } from '../../workflows';
import { exampleSpec, seedLoadBalancer } from '../helpers/fixtures';
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

/**
 * `types` without the workflow tasks that Temporal timed out (scheduled, started, timed out): the server's retry of a
 * task no worker answered in time, not a retry of the workflow's. On a loaded 2-core machine the first task of the
 * largest specs (a 1 MB name, six at a time) outlived its timeout in CI (Node 24), even at a 60 s task timeout; what
 * these tests prove is that the workflow fails in the task that completes, and never retries the failure itself.
 */
function withoutTimedOutTasks(types: string[]): string[] {
  const out: string[] = [];
  for (const t of types) {
    if (t === 'workflowTaskTimedOut' && out.at(-1) === 'workflowTaskStarted' && out.at(-2) === 'workflowTaskScheduled') out.splice(-2);
    else out.push(t);
  }
  return out;
}

/** Each event's type, by the attributes it carries (`workflowTaskStarted`, `activityTaskScheduled`, ...), without timed-out workflow tasks. */
const eventTypes = async (h: WorkflowHandle) =>
  withoutTimedOutTasks(
    (await eventsOf(h)).map((e) => {
      const key = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k] != null);
      return key ? key.replace(/EventAttributes$/, '') : `unknown(${String(e.eventType)})`;
    }),
  );

test('a workflow task that Temporal timed out is not counted as a retry of ours: the history CI saw reads as one failed first task; a failed task still shows', () => {
  const seen = ['workflowExecutionStarted', 'workflowTaskScheduled', 'workflowTaskStarted', 'workflowTaskTimedOut', 'workflowTaskScheduled', 'workflowTaskStarted', 'workflowTaskCompleted', 'workflowExecutionFailed'];
  assert.deepEqual(withoutTimedOutTasks(seen), FIRST_TASK_FAILS);
  const failedTask = ['workflowExecutionStarted', 'workflowTaskScheduled', 'workflowTaskStarted', 'workflowTaskFailed', 'workflowTaskScheduled', 'workflowTaskStarted', 'workflowTaskCompleted', 'workflowExecutionFailed'];
  assert.deepEqual(withoutTimedOutTasks(failedTask), failedTask);
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

test('each pass workflow and planService started with a field it does not take fail at once, non-retryably, type InvalidInput, naming the workflow and the field; no Engine request', async () => {
  stack.sim.resetStats();
  const lb = 'lb-bad-input-2';
  const spec = exampleSpec([lb], { serviceUid: 'bad-field' });
  const inputs: [string, Record<string, unknown>][] = [
    ['reconcileLoadBalancer', { spec, loadBalancer: lb, observedSnce: { reader: 'w', at: 1 } }],
    ['reconcileService', { spec, revision: 1, teardwn: true }],
    ['reconcilePoolDelta', { spec, revision: 1, backends: {}, destroys: [], joins: [] }],
    ['planService', { spec, revision: 3 }],
  ];
  const failures: string[] = [];
  for (const [workflowType, input] of inputs) {
    const field = Object.keys(input).at(-1) as string;
    const chain = chainOf(await failureOf((await runs.raw(workflowType, input)).result()));
    const first = chain[0];
    if (chain.length !== 1 || first?.type !== 'InvalidInput' || first.nonRetryable !== true || !first.message.startsWith(`${workflowType}: ${field}: not a field of its input`)) {
      failures.push(`${workflowType}: ${JSON.stringify(chain)}`);
    }
  }
  assert.deepEqual(failures, []);
  assert.equal(stack.sim.stats().total, 0, 'no Engine request');
});

test("reconcileLoadBalancer accepts the previous release's `observed` field (its reconcileService sends it) and reads the Engine itself: it converges", async () => {
  const lb = seedLoadBalancer(stack.sim, 'lb-bad-input-3');
  const spec = exampleSpec([lb], { serviceUid: 'legacy-observed' });
  const handle = await runs.raw('reconcileLoadBalancer', { spec, loadBalancer: lb, observed: [] });
  const result = (await handle.result()) as { converged: boolean; loadBalancer: string };
  assert.equal(result.converged, true);
  assert.equal(result.loadBalancer, lb);
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

test('each other workflow started with a field it does not take, a field of the wrong type or without a required one fails at once, non-retryably, type InvalidInput, naming the workflow and the field; no Engine request', async () => {
  stack.sim.resetStats();
  const prefix = { identifier: 'p'.repeat(32), cidr: '198.51.100.0/24', family: 4 };
  const snapshot = { spec: null, revision: 0, passCount: 0, lastResult: null };
  const cases: [string, unknown, string][] = [
    ['serviceController', { v: 2, serviceUid: 'svc-bad-field', historyLimt: 50 }, 'historyLimt: not a field of its input'],
    ['serviceController', { v: 2, serviceUid: 'svc-bad-field', state: { ...snapshot, revision: '1' } }, 'state.revision: must be an integer from 0'],
    ['serviceController', { v: 2, serviceUid: 'svc-bad-field', state: { ...snapshot, phase: 'idle' } }, 'state.phase: not a field of its snapshot'],
    ['serviceController', { v: 2 }, 'serviceUid: '],
    ['serverPool', { v: 2, name: 'pool-bad-field', roundPagesize: 5 }, 'roundPagesize: not a field of its input'],
    ['serverPool', { v: 2, name: 'pool-bad-field', state: { servers: [] } }, 'state.revision: required'],
    ['serverPool', { v: 2, name: 'pool-bad-field', minRunMs: 'soon' }, 'minRunMs: must be an integer from 0 to 60000'],
    ['poolRound', { v: 2, pool: 'pool-bad-field', revision: 1, servers: [], pagesize: 5 }, 'pagesize: not a field of its input'],
    ['poolRound', { v: 2, pool: 'pool-bad-field', revision: 1, servers: [], progress: { pageToken: 't', pages: 1, listed: 0, signalled: 0 } }, 'progress.gone: must be an integer from 0'],
    ['poolRound', { v: 2, pool: 'pool-bad-field', servers: [] }, 'revision: must be a pool revision from 1'],
    ['importServices', { loadBalancers: ['lb-1'], serviceUid: ['svc-1'] }, 'serviceUid: not a field of its input'],
    ['importServices', { serviceUids: ['svc-1'] }, 'loadBalancers: must be a list of 1 to 64 identifiers'],
    ['discoverCluster', { clusterName: 'c1', tagPrefix: 'anx', tagprefix: 'anx' }, 'tagprefix: not a field of its input'],
    ['discoverCluster', { clusterName: 'c1' }, 'tagPrefix: must be 1-128 characters'],
    ['fullResync', { destroyOrphans: false, dryRun: true }, 'dryRun: not a field of its input'],
    ['fullResync', { destroyOrphans: 'yes' }, 'destroyOrphans: must be true or false'],
    ['allocateServiceVips', { serviceUid: 'u1', prefixes: [prefix], reserved: [], family: 4 }, 'family: not a field of its input'],
    ['allocateServiceVips', { serviceUid: 'u1', prefixes: [{ ...prefix, cidr4: 'x' }], reserved: [] }, 'prefixes[0]: cidr4: not a field of its input'],
    ['releaseServiceVips', { serviceUid: 'u1', prefixes: [prefix] }, 'prefixes: not a field of its input'],
    ['releaseServiceVips', {}, 'serviceUid: must be 1-128 characters'],
  ];
  const failures: string[] = [];
  await eachLimit(cases, 6, async ([workflowType, input, field]) => {
    const handle = await runs.raw(workflowType, input);
    const chain = chainOf(await failureOf(handle.result()));
    const first = chain[0];
    // importServices, discoverCluster and the VIP workflows name their workflow id beside the workflow type.
    const named = new RegExp(`^${workflowType}( \\([^)]*\\))?: ${field.replace(/[[\]().]/g, '\\$&')}`);
    if (chain.length !== 1 || first?.type !== 'InvalidInput' || first.nonRetryable !== true || !named.test(first.message)) {
      failures.push(`${workflowType} ${JSON.stringify(input)}: ${JSON.stringify(chain)}`);
      return;
    }
    // The entities' first task writes which loop runs (workflows/legacy/dispatch.ts: a patch marker and its search
    // attribute) before it reads the rest of the input.
    const expected = ['serviceController', 'serverPool'].includes(workflowType) ? [...FIRST_TASK_FAILS.slice(0, -1), 'markerRecorded', 'upsertWorkflowSearchAttributes', 'workflowExecutionFailed'] : FIRST_TASK_FAILS;
    const types = await eventTypes(handle);
    if (JSON.stringify(types) !== JSON.stringify(expected)) failures.push(`${workflowType} ${JSON.stringify(input)}: history ${types.join(', ')}`);
  });
  assert.deepEqual(failures, []);
  assert.equal(stack.sim.stats().total, 0, 'no Engine request');
});

/**
 * Workflow task failures in a run's history (a handler that threw would show here), once a workflow task has
 * completed after the last signal, or failed: read before that, a signal not handled yet would pass unseen.
 */
async function taskFailures(h: WorkflowHandle): Promise<string[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const types = await eventTypes(h);
    const failed = types.filter((t) => t === 'workflowTaskFailed');
    if (failed.length > 0 || types.lastIndexOf('workflowTaskCompleted') > types.lastIndexOf('workflowExecutionSignaled')) return failed;
    if (Date.now() > deadline) throw new Error(`no workflow task completed after the signals: ${types.join(', ')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('serviceController drops signals whose payload does not read (an unknown field, a wrong type) and keeps running: nothing taken, no workflow task failed', async () => {
  const handle = await runs.raw('serviceController', { v: 2, serviceUid: 'bad-signals' });
  await handle.signal(poolMembersSignal, { v: 2, pool: 'pool-a', revision: 1, servers: [], membres: [] } as never);
  await handle.signal(poolMembersSignal, { v: 2, pool: 'pool-a', revision: 1, servers: [{ name: 'n1', address: '10.0.0.1', weight: 1 }] } as never);
  await handle.signal(supersededCreatesSignal, { v: 2, identifiers: [7] } as never);
  await handle.signal(wakeSignal, { v: 2, now: true } as never);
  assert.deepEqual(await taskFailures(handle), []);
  const status = await handle.query(controllerStatusQuery);
  assert.equal(status.revision, 0);
  assert.equal(status.lastPass, null);
  const { status: run } = await handle.describe();
  assert.equal(run.name, 'RUNNING');
});

test('serverPool drops signals whose payload does not read and keeps running; its set update rejects a member with a field it does not take, naming it, and records nothing', async () => {
  const handle = (await runs.raw('serverPool', { v: 2, name: 'pool-bad-signals' })) as WorkflowHandle<typeof serverPool>;
  await handle.signal(poolRoundEndedSignal, { v: 2, round: 7, revision: 1 } as never);
  await handle.signal(poolSubscribeSignal, { v: 2, serviceUid: 'svc', since: 1 } as never);
  await handle.signal(poolReportSignal, { v: 2, serviceUid: 'svc', revision: 1, converged: 'yes' } as never);
  await handle.signal(poolWakeSignal, { v: 3 } as never);
  assert.deepEqual(await taskFailures(handle), []);
  await assert.rejects(
    handle.executeUpdate(poolSetUpdate, { args: [[{ name: 'n1', address: '10.0.0.1', weight: 1 }]] }),
    (err: unknown) => err instanceof WorkflowUpdateFailedError && /servers\[0\]\.weight/.test((err.cause as Error).message),
  );
  const status = await handle.query(poolStatusQuery);
  assert.equal(status.revision, 0);
  assert.equal((await handle.describe()).status.name, 'RUNNING');
  assert.deepEqual((await eventTypes(handle)).filter((t) => /update/i.test(t)), [], 'the rejected update left no trace in history');
});
