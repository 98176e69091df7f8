/**
 * The determinism guard (docs/architecture.md#determinism): every committed history of a real run
 * (test/fixtures/histories, written by test/helpers/record-histories.ts) must replay against today's workflow code, a
 * deliberately altered history must fail with DeterminismViolationError (proof that the guard can fail), and no
 * history carries the Engine token.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { Worker, type ReplayResult } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import type { Client, HistoryAndWorkflowId } from '@temporalio/client';
import { createActivities } from '../../activities';
import { createPoolActivities } from '../../activities/pools';
import { createControlActivities } from '../../activities/control';
import type { EngineClient } from '../../activities/engine';
import { createImportActivities } from '../../activities/import';
import { ENTITY_LOOP_PATCH } from '../../workflows/legacy/controller';
import { VERSIONING_BEHAVIORS } from '../../workflows/versioning';
import { historyFromJson, historyTexts } from '../helpers/history-json';
import { RECORDED } from '../helpers/record-histories';
import { TEST_TOKEN, workflowBundle } from '../helpers/stack';

const DIR = path.resolve(__dirname, '..', '..', '..', 'test', 'fixtures', 'histories');
const FILES = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .sort();
/**
 * Histories of serviceController and serverPool runs written by the previous release and the ones before it (inputs
 * without `v: 2`): the runs that workflows/legacy/ replays when such a run's next task comes to this build
 * (docs/architecture.md, "Versions and patches"). They go with workflows/legacy/. The record script does not write
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

/**
 * One replay worker for the whole file (Worker.runReplayHistories), fed one history at a time: a worker per history
 * (Worker.runReplayHistory) loaded the bundle again for each of the file's two dozen replays.
 */
const replayer = (() => {
  type Item = HistoryAndWorkflowId | null;
  const waiting: Array<(item: Item) => void> = [];
  const queued: Item[] = [];
  async function* source() {
    for (;;) {
      const item = queued.shift() ?? (await new Promise<Item>((r) => waiting.push(r)));
      if (item === null) return;
      yield item;
    }
  }
  const push = (item: Item) => {
    const w = waiting.shift();
    if (w) w(item);
    else queued.push(item);
  };
  let results: AsyncIterableIterator<ReplayResult> | null = null;
  let chain: Promise<unknown> = Promise.resolve();
  return {
    /** The error the replay of `history` ends with (DeterminismViolationError or ReplayError), or null. */
    replay(history: JsonHistory, workflowId: string): Promise<unknown> {
      const run = chain.then(async () => {
        results ??= Worker.runReplayHistories({ workflowBundle: await workflowBundle() }, source());
        push({ history: historyFromJson(history), workflowId });
        const next = await results.next();
        if (next.done) throw new Error(`the replay worker ended before ${workflowId} replayed`);
        const { workflowId: replayed, error } = next.value;
        assert.equal(replayed, workflowId);
        return error ?? null;
      });
      chain = run.catch(() => undefined);
      return run;
    },
    async close(): Promise<void> {
      await chain;
      if (!results) return;
      push(null);
      await results.return?.(undefined);
    },
  };
})();
after(() => replayer.close());

async function replay(history: JsonHistory, workflowId: string): Promise<void> {
  const err = await replayer.replay(history, workflowId);
  if (err !== null) throw err;
}

/** The error a replay ends with, or null when it succeeds. */
async function replayError(history: JsonHistory, workflowId: string): Promise<unknown> {
  return replayer.replay(history, workflowId);
}

test('the committed histories are the ones record-histories.ts writes: both workflow types that change the Engine, converged and failed runs, planService, a controller from apply to delete, importServices, a server pool with a controller that uses it and the delivery round of its change, and a pool-delta pass with its controller', () => {
  assert.deepEqual(FILES, RECORDED.map((name) => `${name}.json`).sort());
  const outcome = (file: string) => {
    const h = load(file);
    const type = (h.events[0]?.workflowExecutionStartedEventAttributes as { workflowType: { name: string } }).workflowType.name;
    return `${type} ${h.events.at(-1)?.eventType.replace('EVENT_TYPE_WORKFLOW_EXECUTION_', '')}`;
  };
  assert.deepEqual([...new Set(FILES.map(outcome))].sort(), [
    'importServices COMPLETED',
    'planService COMPLETED',
    'poolRound COMPLETED',
    'reconcileLoadBalancer COMPLETED',
    'reconcileLoadBalancer FAILED',
    'reconcilePoolDelta COMPLETED',
    'reconcileService COMPLETED',
    'serverPool COMPLETED',
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

test('no workflow of today\'s code carries a patch (every type is PINNED, the entities too): no marker in any of their histories but the entities\' entity-loop-v2, and every activity a history schedules is one today\'s worker registers', () => {
  const registered = new Set(
    Object.keys({
      ...createActivities({} as EngineClient),
      ...createControlActivities({} as Client),
      ...createPoolActivities({} as Client),
      ...createImportActivities({} as EngineClient),
    }),
  );
  // The activities kept only for the retired patches' old branches are gone from the worker.
  for (const retired of ['createObject', 'destroyObject', 'recoverObject', 'awaitReady', 'listControllers']) assert.ok(!registered.has(retired), retired);
  // Every type is PINNED now, the entities too: no history of today's code carries a marker but the entities' one
  // entity-loop-v2, written before their loop starts (workflows/legacy/controller.ts, ENTITY_LOOP_PATCH).
  const pinned = FILES.filter((f) => PINNED.has(typeOf(f)));
  assert.deepEqual(new Set(pinned.map(typeOf)), new Set(['reconcileService', 'reconcileLoadBalancer', 'reconcilePoolDelta', 'planService', 'importServices', 'serviceController', 'serverPool', 'poolRound']));
  for (const file of pinned) assert.deepEqual(patches(file), ['serviceController', 'serverPool'].includes(typeOf(file)) ? [ENTITY_LOOP_PATCH] : [], file);
  for (const file of [...FILES, ...LEGACY]) {
    assert.deepEqual(activityTypes(file).filter((a) => !registered.has(a)), [], `${file} schedules an activity the worker no longer has`);
  }
});

/** The input of a history's first event. */
const inputOf = (file: string) => {
  const started = load(file).events[0]?.workflowExecutionStartedEventAttributes as { input: { payloads: { data: string }[] } };
  return JSON.parse(Buffer.from(started.input.payloads[0]?.data ?? '', 'base64').toString('utf8')) as Record<string, unknown>;
};

test('the entity histories: today\'s runs start with a v: 2 input and write only the entity-loop-v2 marker; legacy/ holds runs of the release before entities were PINNED and of the ones before it (inputs without v), with the markers their patches wrote, which workflows/legacy/ must still replay', () => {
  for (const file of ['service-controller.json', 'service-controller-resync-pass.json', 'service-controller-terminated-pass.json', 'service-controller-pool.json', 'service-controller-pool-delta.json', 'server-pool.json']) {
    assert.equal(inputOf(file).v, 2, file);
    assert.deepEqual(patches(file), [ENTITY_LOOP_PATCH], file);
  }
  assert.deepEqual(LEGACY, [
    'legacy/previous-release-server-pool.json',
    'legacy/previous-release-service-controller-pool.json',
    'legacy/previous-release-service-controller-resync-pass.json',
    'legacy/previous-release-service-controller.json',
    'legacy/release-before-pinned-server-pool-wait-rotating.json',
    'legacy/release-before-pinned-server-pool.json',
    'legacy/release-before-pinned-service-controller-pool.json',
    'legacy/release-before-pinned-service-controller-resync-pass.json',
    'legacy/release-before-pinned-service-controller-terminated-pass.json',
    'legacy/release-before-pinned-service-controller.json',
    'legacy/server-pool-before-delivery-rounds.json',
    'legacy/server-pool-before-rotate-with-waiters.json',
    'legacy/server-pool-before-signal-limit.json',
    'legacy/service-controller-before-terminated-pass-not-failed.json',
  ]);
  for (const file of LEGACY) assert.equal(inputOf(file).v, undefined, file);
  assert.deepEqual(patches('legacy/release-before-pinned-service-controller.json'), ['continue-as-new-when-idle (deprecated)']);
  assert.deepEqual(patches('legacy/release-before-pinned-service-controller-pool.json'), ['continue-as-new-when-idle (deprecated)', 'server-pools (deprecated)']);
  assert.deepEqual(patches('legacy/release-before-pinned-server-pool.json'), ['pool-delivery-rounds', 'pool-owed-in-arrival-order', 'pool-signal-limit (deprecated)']);
  // A pass terminated from outside (worker/stranded.ts): the release before entities were PINNED published the phase
  // Failed right after the child was terminated; the legacy loop decides that per run with a patch, and today's loop
  // keeps the service Converging and retries (no phase published before the retry timer).
  assert.deepEqual(patches('legacy/release-before-pinned-service-controller-terminated-pass.json'), ['continue-as-new-when-idle (deprecated)', 'terminated-pass-not-failed']);
  assert.deepEqual(patches('legacy/service-controller-before-terminated-pass-not-failed.json'), ['continue-as-new-when-idle (deprecated)']);
  for (const [file, phaseAfter] of [
    ['service-controller-terminated-pass.json', null],
    ['legacy/release-before-pinned-service-controller-terminated-pass.json', null],
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
  // A run that continued as new with a waitConverged open, and the old branch of that: a run that accepted the wait,
  // passed its history limit (20) and kept delivering until the wait was answered (88 events), without the marker.
  // The same legacy run delivered in uid order to subscribers that had subscribed in another order: the old branch of
  // pool-owed-in-arrival-order. Replay compares a signal command's type, not its target, so a replay of this run in
  // arrival order would not fail; it would silently believe it had signalled other services. Hence the patch, and
  // this check that the run is one where the two orders differ.
  assert.deepEqual(patches('legacy/release-before-pinned-server-pool-wait-rotating.json'), ['pool-delivery-rounds', 'pool-owed-in-arrival-order', 'pool-signal-limit (deprecated)', 'pool-rotate-with-waiters']);
  assert.deepEqual(patches('legacy/server-pool-before-rotate-with-waiters.json'), ['pool-delivery-rounds', 'pool-signal-limit (deprecated)']);
  const legacyPool = load('legacy/server-pool-before-rotate-with-waiters.json');
  assert.equal(legacyPool.events.length, 88);
  const subscribed = Object.keys((inputOf('legacy/server-pool-before-rotate-with-waiters.json') as { state: { subscribers: Record<string, unknown> } }).state.subscribers);
  const signalled = legacyPool.events.flatMap((e) => {
    const a = e.signalExternalWorkflowExecutionInitiatedEventAttributes as { workflowExecution: { workflowId: string } } | undefined;
    return a ? [a.workflowExecution.workflowId.replace(/^lbaas\//, '')] : [];
  });
  assert.deepEqual(signalled, [...subscribed].sort());
  assert.notDeepEqual(subscribed, [...subscribed].sort());
  // The old branch of pool-delivery-rounds (one round for everything owed): a run without its marker.
  assert.deepEqual(patches('legacy/server-pool-before-delivery-rounds.json'), ['pool-signal-limit (deprecated)']);
  // What the release before wrote: patched() markers, which a deprecatePatch call accepts.
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
