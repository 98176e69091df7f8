/**
 * The determinism guard (docs/architecture.md#determinism): every committed history of a real run
 * (test/fixtures/histories, written by test/helpers/record-histories.ts) must replay against today's workflow code, a
 * deliberately altered history must fail with DeterminismViolationError (proof that the guard can fail), and no
 * history carries the Engine token.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { historyFromJson, historyTexts } from '../helpers/history-json';
import { RECORDED } from '../helpers/record-histories';
import { TEST_TOKEN, workflowBundle } from '../helpers/stack';

const DIR = path.resolve(__dirname, '..', '..', '..', 'test', 'fixtures', 'histories');
const FILES = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .sort();
/**
 * Histories of code paths that new runs no longer take but running workflows recorded before a patch may still be on
 * (workflows/reconcile-lb.ts REALIZE_GROUPS_PATCH: the per-object createObject/awaitReady path, and the grouped path
 * when it was opt-in; REALIZE_ANNOUNCE_PATCH: children started only on their parent group's result;
 * DESTROY_GROUPS_PATCH: one destroyObject activity per object). The record
 * script no longer writes them; they are kept, not re-recorded.
 */
const LEGACY = readdirSync(path.join(DIR, 'legacy'))
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => `legacy/${f}`);

interface JsonEvent {
  eventType: string;
  [attributes: string]: unknown;
}
interface JsonHistory {
  events: JsonEvent[];
}

const load = (file: string) => JSON.parse(readFileSync(path.join(DIR, file), 'utf8')) as JsonHistory;

async function replay(history: JsonHistory, workflowId: string): Promise<void> {
  await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, historyFromJson(history), workflowId);
}

/** The error a replay ends with, or null when it succeeds. */
async function replayError(history: JsonHistory, workflowId: string): Promise<unknown> {
  try {
    await replay(history, workflowId);
    return null;
  } catch (err) {
    return err;
  }
}

test('the committed histories are the ones record-histories.ts writes: both workflow types that change the Engine, converged and failed runs, planService, a controller from apply to delete, importServices, and a server pool with a controller that uses it', () => {
  assert.deepEqual(FILES, RECORDED.map((name) => `${name}.json`).sort());
  const outcome = (file: string) => {
    const h = load(file);
    const type = (h.events[0]?.workflowExecutionStartedEventAttributes as { workflowType: { name: string } }).workflowType.name;
    return `${type} ${h.events.at(-1)?.eventType.replace('EVENT_TYPE_WORKFLOW_EXECUTION_', '')}`;
  };
  assert.deepEqual([...new Set(FILES.map(outcome))].sort(), [
    'importServices COMPLETED',
    'planService COMPLETED',
    'reconcileLoadBalancer COMPLETED',
    'reconcileLoadBalancer FAILED',
    'reconcileService COMPLETED',
    'serverPool COMPLETED',
    'serviceController COMPLETED',
  ]);
});

/** Patch markers (core_patch) of a history, by patch id. */
const patches = (file: string) =>
  new Set(
    load(file).events.flatMap((e) => {
      const m = e.markerRecordedEventAttributes as { markerName: string; details: Record<string, { payloads: { data: string }[] }> } | undefined;
      const data = m?.markerName === 'core_patch' ? m.details['patch-data']?.payloads[0]?.data : undefined;
      return data ? [(JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as { id: string }).id] : [];
    }),
  );

test('the legacy histories cover the per-object path, the formerly opt-in grouped path, groups before announced parents and destroys per object; today\'s histories carry the settle-group and destroy-group patches', () => {
  const activityTypes = (file: string) => new Set(load(file).events.flatMap((e) => {
    const a = e.activityTaskScheduledEventAttributes as { activityType: { name: string } } | undefined;
    return a ? [a.activityType.name] : [];
  }));
  const perObject = LEGACY.filter((f) => activityTypes(f).has('createObject'));
  const grouped = LEGACY.filter((f) => activityTypes(f).has('realizeObjects'));
  assert.deepEqual(perObject, [
    'legacy/reconcile-lb-converge-per-object.json',
    'legacy/reconcile-lb-not-converged-per-object.json',
    'legacy/reconcile-lb-recreate-per-object.json',
    'legacy/reconcile-service-converge-child-per-object.json',
  ]);
  assert.deepEqual(grouped, [
    'legacy/reconcile-lb-converge-before-announce.json',
    'legacy/reconcile-lb-converge-before-settle-groups.json',
    'legacy/reconcile-lb-converge-groups-opt-in.json',
    'legacy/reconcile-lb-recreate-destroy-per-object.json',
    'legacy/reconcile-service-converge-child-before-announce.json',
    'legacy/reconcile-service-plan-first-child-before-plan-in-worker.json',
  ]);
  // Destroys: one activity per object before DESTROY_GROUPS_PATCH, one per stage since.
  assert.deepEqual(LEGACY.filter((f) => activityTypes(f).has('destroyObject')), ['legacy/reconcile-lb-recreate-destroy-per-object.json', 'legacy/reconcile-lb-recreate-per-object.json']);
  assert.deepEqual(FILES.filter((f) => activityTypes(f).has('destroyObject')), []);
  assert.deepEqual(FILES.filter((f) => activityTypes(f).has('destroyObjects')), ['reconcile-lb-recover.json', 'reconcile-lb-recreate.json']);
  // The committed histories of today's code take the grouped path only.
  assert.deepEqual(FILES.filter((f) => activityTypes(f).has('createObject')), []);
  for (const file of ['legacy/reconcile-lb-converge-before-announce.json', 'legacy/reconcile-service-converge-child-before-announce.json']) {
    assert.deepEqual([...patches(file)], ['realize-groups'], file);
  }
  // Today's create path (settle-groups) groups and announces without asking the two older patches.
  for (const file of ['legacy/reconcile-lb-converge-before-settle-groups.json']) {
    assert.deepEqual([...patches(file)].sort(), ['realize-announce-parents', 'realize-groups'], file);
  }
  for (const file of ['reconcile-lb-converge.json', 'reconcile-service-converge-child.json']) {
    assert.deepEqual([...patches(file)].sort(), ['settle-groups'], file);
  }
  assert.ok(!patches('legacy/reconcile-lb-recreate-destroy-per-object.json').has('destroy-stage-groups'));
  assert.ok(patches('reconcile-lb-recreate.json').has('destroy-stage-groups'));
});

test('the limits patches: legacy histories wait per object, observe the service whole and signal without a limit; today\'s histories settle by group, plan in the worker and carry the markers', () => {
  const activityTypes = (file: string) => load(file).events.flatMap((e) => {
    const a = e.activityTaskScheduledEventAttributes as { activityType: { name: string } } | undefined;
    return a ? [a.activityType.name] : [];
  });
  // Recovering: a recoverObject and an awaitReady per object before settle-groups, one settleObjects per group since.
  assert.deepEqual(activityTypes('legacy/reconcile-lb-recover-before-settle-groups.json').filter((a) => a === 'awaitReady' || a === 'recoverObject').length, 3);
  assert.deepEqual(activityTypes('reconcile-lb-recover.json').filter((a) => a === 'awaitReady' || a === 'recoverObject'), []);
  assert.ok(activityTypes('reconcile-lb-recover.json').includes('settleObjects'));
  assert.deepEqual(activityTypes('legacy/reconcile-service-plan-first-before-plan-in-worker.json'), ['observeService']);
  assert.deepEqual(activityTypes('reconcile-service-plan-first.json'), ['planObservedService']);
  for (const [file, id] of [['reconcile-lb-recover.json', 'settle-groups'], ['reconcile-service-plan-first.json', 'plan-in-worker'], ['server-pool.json', 'pool-signal-limit']] as const) {
    assert.ok(patches(file).has(id), `${file} carries ${id}`);
    assert.ok(!patches(`legacy/${file.replace('.json', '')}-before-${id === 'pool-signal-limit' ? 'signal-limit' : id}.json`).has(id), `its legacy history does not`);
  }
});

for (const file of [...FILES, ...LEGACY]) {
  test(`replay: ${file} replays against the current workflow code without a determinism error`, async () => {
    await replay(load(file), file.replace(/\.json$/, '').replace('/', '-'));
  });
}

/** Alterations a code change could cause, each of which must be caught. */
const ALTERED = [
  {
    what: "an ActivityTaskScheduled event's activity type changed (retrieveState -> listTagged)",
    file: 'reconcile-lb-converge.json',
    alter(h: JsonHistory) {
      const event = h.events.find((e) => e.activityTaskScheduledEventAttributes);
      const attrs = event?.activityTaskScheduledEventAttributes as { activityType: { name: string } };
      assert.equal(attrs.activityType.name, 'retrieveState');
      attrs.activityType.name = 'listTagged';
    },
  },
  {
    what: "a child workflow's type changed (reconcileLoadBalancer -> planService)",
    file: 'reconcile-service-converge.json',
    alter(h: JsonHistory) {
      const event = h.events.find((e) => e.startChildWorkflowExecutionInitiatedEventAttributes);
      const attrs = event?.startChildWorkflowExecutionInitiatedEventAttributes as { workflowType: { name: string } };
      assert.equal(attrs.workflowType.name, 'reconcileLoadBalancer');
      attrs.workflowType.name = 'planService';
    },
  },
];

for (const a of ALTERED) {
  test(`replay: ${a.file} with ${a.what} fails with DeterminismViolationError`, async () => {
    const history = load(a.file);
    a.alter(history);

    const err = await replayError(history, `altered-${a.file}`);

    assert.ok(err instanceof DeterminismViolationError, `expected DeterminismViolationError, got ${err === null ? 'success' : String(err)}`);
  });
}

test('no committed history contains the Engine token, in plain text or inside any decoded payload', () => {
  let decoded = 0;
  let sawServiceUid = false;
  for (const file of [...FILES, ...LEGACY]) {
    const text = readFileSync(path.join(DIR, file), 'utf8');
    assert.ok(!text.includes(TEST_TOKEN), `${file} holds the token`);
    const { strings, payloads } = historyTexts(JSON.parse(text));
    assert.deepEqual([...strings, ...payloads].filter((t) => t.includes(TEST_TOKEN)), [], `${file} holds the token`);
    assert.deepEqual(payloads.filter((t) => /authorization|Token [0-9a-z-]{8,}/i.test(t)), [], `${file}: a payload holds an Authorization header`);
    decoded += payloads.length;
    if (payloads.some((t) => t.includes('record-service-converge'))) sawServiceUid = true;
  }
  // The check above looked at real payloads: they decode to the workflows' inputs and results.
  assert.ok(decoded > 100, `decoded ${decoded} payloads`);
  assert.ok(sawServiceUid, 'a decoded payload shows the recorded service uid');
});
