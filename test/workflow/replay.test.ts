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
import type { Client } from '@temporalio/client';
import { createActivities } from '../../activities';
import { createControlActivities } from '../../activities/control';
import type { EngineClient } from '../../activities/engine';
import { createImportActivities } from '../../activities/import';
import { VERSIONING_BEHAVIORS } from '../../workflows/versioning';
import { historyFromJson, historyTexts } from '../helpers/history-json';
import { RECORDED } from '../helpers/record-histories';
import { TEST_TOKEN, workflowBundle } from '../helpers/stack';

const DIR = path.resolve(__dirname, '..', '..', '..', 'test', 'fixtures', 'histories');
const FILES = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .sort();
/**
 * Histories of serviceController and serverPool runs written by an earlier build, kept while the code still carries
 * the (deprecated) patch whose marker they hold: such runs move to the current build at their next task
 * (docs/architecture.md, "Versions and patches"). Passes are PINNED and have none. The record script does not write
 * them; they are kept, not re-recorded.
 */
const LEGACY = readdirSync(path.join(DIR, 'legacy'))
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => `legacy/${f}`);

/**
 * A pass history written by the build before this one (its reconcileLoadBalancer carried the patch settle-groups):
 * today's code must refuse it, which is why passes are PINNED and an unversioned deployment's passes are drained
 * before the switch (docs/operations.md, "From a release without Worker Versioning"). Never replayed successfully.
 */
const EARLIER_PASS = 'earlier-pass/reconcile-lb-converge-settle-groups.json';

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

test('the committed histories are the ones record-histories.ts writes: both workflow types that change the Engine, converged and failed runs, planService, a controller from apply to delete, importServices, a server pool with a controller that uses it, and a pool run that continued as new with a wait open', () => {
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
    'serverPool CONTINUED_AS_NEW',
    'serviceController COMPLETED',
  ]);
});

/** Patch markers (core_patch) of a history: `id` or `id (deprecated)`, in the order written. */
const patches = (file: string) =>
  load(file).events.flatMap((e) => {
    const m = e.markerRecordedEventAttributes as { markerName: string; details: Record<string, { payloads: { data: string }[] }> } | undefined;
    const data = m?.markerName === 'core_patch' ? m.details['patch-data']?.payloads[0]?.data : undefined;
    if (!data) return [];
    const marker = JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as { id: string; deprecated: boolean };
    return [marker.deprecated ? `${marker.id} (deprecated)` : marker.id];
  });

/** The workflow types that finish on the build that started them (workflows/versioning.ts). */
const PINNED = new Set(Object.entries(VERSIONING_BEHAVIORS).flatMap(([type, behavior]) => (behavior === 'PINNED' ? [type] : [])));
const typeOf = (file: string) => (load(file).events[0]?.workflowExecutionStartedEventAttributes as { workflowType: { name: string } }).workflowType.name;
const activityTypes = (file: string) =>
  load(file).events.flatMap((e) => {
    const a = e.activityTaskScheduledEventAttributes as { activityType: { name: string } } | undefined;
    return a ? [a.activityType.name] : [];
  });

test('the passes (PINNED) carry no patch: no marker in any of their histories, and every activity they schedule is one today\'s worker registers', () => {
  const registered = new Set(
    Object.keys({
      ...createActivities({} as EngineClient),
      ...createControlActivities({} as Client),
      ...createImportActivities({} as EngineClient),
    }),
  );
  // The activities kept only for the retired patches' old branches are gone from the worker.
  for (const retired of ['createObject', 'destroyObject', 'recoverObject', 'awaitReady', 'listControllers']) assert.ok(!registered.has(retired), retired);
  const passes = FILES.filter((f) => PINNED.has(typeOf(f)));
  assert.deepEqual(new Set(passes.map(typeOf)), new Set(['reconcileService', 'reconcileLoadBalancer', 'planService', 'importServices']));
  for (const file of passes) assert.deepEqual(patches(file), [], file);
  for (const file of [...FILES, ...LEGACY]) {
    assert.deepEqual(activityTypes(file).filter((a) => !registered.has(a)), [], `${file} schedules an activity the worker no longer has`);
  }
});

test('the entity histories: today\'s write every patch of earlier releases deprecated and this release\'s pool-delivery-rounds, pool-owed-in-arrival-order, pool-rotate-with-waiters and terminated-pass-not-failed patched(); legacy/ holds runs of the previous release (markers as patched() wrote them), a pool run from before pool-signal-limit, one from before pool-delivery-rounds, one from before the other two, and a controller whose pass was terminated before terminated-pass-not-failed, which must still replay', () => {
  assert.deepEqual(LEGACY, [
    'legacy/previous-release-server-pool.json',
    'legacy/previous-release-service-controller-pool.json',
    'legacy/previous-release-service-controller-resync-pass.json',
    'legacy/previous-release-service-controller.json',
    'legacy/server-pool-before-delivery-rounds.json',
    'legacy/server-pool-before-rotate-with-waiters.json',
    'legacy/server-pool-before-signal-limit.json',
    'legacy/service-controller-before-terminated-pass-not-failed.json',
  ]);
  // A pass terminated from outside: this release's branch writes the marker and keeps the service Converging; the
  // previous release's branch (legacy, no marker) published the phase Failed right after the child was terminated,
  // a command today's branch does not issue, which is why the patch decides per run.
  assert.deepEqual(patches('service-controller-terminated-pass.json'), ['continue-as-new-when-idle (deprecated)', 'terminated-pass-not-failed']);
  assert.deepEqual(patches('legacy/service-controller-before-terminated-pass-not-failed.json'), ['continue-as-new-when-idle (deprecated)']);
  for (const [file, phaseAfter] of [
    ['service-controller-terminated-pass.json', null],
    ['legacy/service-controller-before-terminated-pass-not-failed.json', 'Failed'],
  ] as const) {
    const events = load(file).events;
    const terminated = events.findIndex((e) => e.eventType === 'EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED');
    assert.ok(terminated > 0, `${file}: a terminated child`);
    const nextTimer = events.findIndex((e, i) => i > terminated && e.eventType === 'EVENT_TYPE_TIMER_STARTED');
    const phases = events.slice(terminated, nextTimer).flatMap((e) => {
      const f = (e.upsertWorkflowSearchAttributesEventAttributes as { searchAttributes: { indexedFields: Record<string, { data: string }> } } | undefined)?.searchAttributes.indexedFields.LbaasPhase;
      return f ? [JSON.parse(Buffer.from(f.data, 'base64').toString('utf8')) as string] : [];
    });
    assert.deepEqual(phases, phaseAfter ? [phaseAfter] : [], `${file}: the phase published between the terminated child and the retry timer`);
  }
  assert.deepEqual(patches('service-controller.json'), ['continue-as-new-when-idle (deprecated)']);
  assert.deepEqual(patches('service-controller-pool.json'), ['continue-as-new-when-idle (deprecated)', 'server-pools (deprecated)']);
  assert.deepEqual(patches('server-pool.json'), ['pool-delivery-rounds', 'pool-owed-in-arrival-order', 'pool-signal-limit (deprecated)']);
  // A run that continued as new with a waitConverged open, and the old branch of that: a run that accepted the wait,
  // passed its history limit (20) and kept delivering until the wait was answered (88 events), without the marker.
  // The same legacy run delivered in uid order to subscribers that had subscribed in another order: the old branch of
  // pool-owed-in-arrival-order. Replay compares a signal command's type, not its target, so a replay of this run in
  // arrival order would not fail; it would silently believe it had signalled other services. Hence the patch, and
  // this check that the run is one where the two orders differ.
  assert.deepEqual(patches('server-pool-wait-rotating.json'), ['pool-delivery-rounds', 'pool-owed-in-arrival-order', 'pool-signal-limit (deprecated)', 'pool-rotate-with-waiters']);
  assert.deepEqual(patches('legacy/server-pool-before-rotate-with-waiters.json'), ['pool-delivery-rounds', 'pool-signal-limit (deprecated)']);
  const legacyPool = load('legacy/server-pool-before-rotate-with-waiters.json');
  assert.equal(legacyPool.events.length, 88);
  const started = legacyPool.events[0]?.workflowExecutionStartedEventAttributes as { input: { payloads: { data: string }[] } };
  const subscribed = Object.keys((JSON.parse(Buffer.from(started.input.payloads[0]?.data ?? '', 'base64').toString('utf8')) as { state: { subscribers: Record<string, unknown> } }).state.subscribers);
  const signalled = legacyPool.events.flatMap((e) => {
    const a = e.signalExternalWorkflowExecutionInitiatedEventAttributes as { workflowExecution: { workflowId: string } } | undefined;
    return a ? [a.workflowExecution.workflowId.replace(/^lbaas\//, '')] : [];
  });
  assert.deepEqual(signalled, [...subscribed].sort());
  assert.notDeepEqual(subscribed, [...subscribed].sort());
  // The old branch of pool-delivery-rounds (one round for everything owed): a run without its marker.
  assert.deepEqual(patches('legacy/server-pool-before-delivery-rounds.json'), ['pool-signal-limit (deprecated)']);
  // What the previous release wrote: patched() markers, which a deprecatePatch call accepts.
  assert.deepEqual(patches('legacy/previous-release-service-controller.json'), ['continue-as-new-when-idle']);
  assert.deepEqual(patches('legacy/previous-release-service-controller-pool.json'), ['continue-as-new-when-idle', 'server-pools (deprecated)']);
  assert.deepEqual(patches('legacy/previous-release-server-pool.json'), ['pool-signal-limit']);
  // A pool from before the signal limit holds no marker and fanned out to fewer than MAX_SIGNALS_AT_ONCE at once.
  assert.deepEqual(patches('legacy/server-pool-before-signal-limit.json'), []);
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

test(`replay: ${EARLIER_PASS}, a pass of the previous build, fails with DeterminismViolationError on today's code`, async () => {
  assert.deepEqual(patches(EARLIER_PASS), ['settle-groups']);

  const err = await replayError(load(EARLIER_PASS), 'earlier-pass');

  assert.ok(err instanceof DeterminismViolationError, `expected DeterminismViolationError, got ${err === null ? 'success' : String(err)}`);
});

test('no committed history contains the Engine token, in plain text or inside any decoded payload', () => {
  let decoded = 0;
  let sawServiceUid = false;
  for (const file of [...FILES, ...LEGACY, EARLIER_PASS]) {
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
