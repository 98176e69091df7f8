/**
 * The controller loop (workflows/controller.ts) on Temporal's time-skipping test server with a fake Engine
 * (test/helpers/fast-kit.ts): retry delays up to their 10-minute cap, an apply superseding a running pass, deletion
 * and its retries, resync, and continue-as-new carrying the state over. Timers are skipped, so a 10-minute retry
 * delay takes milliseconds; everything is driven through the client library (client/service-client.ts), the
 * controller's messages and its status query.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { WorkflowUpdateFailedError, WithStartWorkflowOperation } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { applyAndWaitUpdate, applyUpdate, controllerStatusQuery, workflowIds, workflowTypes, type ControllerStatus, type ServiceControllerWorkflow } from '../../contract';
import { validateSpec } from '../../domain';
import { RETRY_FIRST_MS, RETRY_MAX_MS } from '../../workflows/controller-state';
import { cliEnv, runInProcess } from '../helpers/cli';
import { FakeEngine, fastStack } from '../helpers/fast-kit';
import { exampleSpec } from '../helpers/fixtures';
import { until } from '../helpers/workflows';
import { isUnknownUpdate } from '../../client/update';

const LB = 'fa5700000000000000000000000000aa';
const engine = new FakeEngine();
const fast = fastStack(engine);

function spec(uid: string, port = 80): Record<string, unknown> {
  return exampleSpec([LB], { serviceUid: uid, ports: { http: { external: port, internal: 30080 } } });
}

async function apply(raw: Record<string, unknown>): Promise<number> {
  const v = validateSpec(raw);
  if (!v.ok) throw new Error(`bad test spec: ${JSON.stringify(v.issues)}`);
  return (await fast.lbaas.apply(raw, v.spec)).revision;
}

const status = (uid: string): Promise<ControllerStatus> => fast.lbaas.controller(uid).query(controllerStatusQuery);

/** The status once `ok` holds for it. */
function statusWhen(uid: string, what: string, ok: (s: ControllerStatus) => boolean): Promise<ControllerStatus> {
  return until(what, async () => {
    const s = await status(uid);
    return ok(s) ? s : undefined;
  });
}

/** The test server's clock: what the workflows' Date.now() reads. */
const now = () => fast.ts.env.currentTimeMs();

describe('retries', () => {
  test(`a failing pass is retried after ${RETRY_FIRST_MS / 1000} s, doubling up to ${RETRY_MAX_MS / 60_000} min where it stays; no pass runs before its time; the retry converges once the Engine accepts`, async () => {
    const uid = 'fast-retry';
    engine.set(uid, 'fail');
    const revision = await apply(spec(uid));
    const first = await fast.lbaas.waitConverged(uid, revision);
    assert.equal(first.converged, false);
    assert.equal(first.error, engine.failMessage);

    const delays = [5, 10, 20, 40, 80, 160, 320, 600, 600].map((s) => s * 1000);
    for (const [i, delay] of delays.entries()) {
      const failures = i + 1;
      const st = await statusWhen(uid, `failure ${failures} recorded`, (s) => s.consecutiveFailures === failures && s.running === null);
      assert.equal(st.phase, 'Failed');
      assert.equal(st.lastPass?.error, engine.failMessage);
      assert.equal((st.nextRetryAt as number) - (st.lastPass?.finishedAt as number), delay, `retry delay after failure ${failures}`);
      // A second before its time nothing has run; two seconds later the retry has.
      await fast.ts.env.sleep((st.nextRetryAt as number) - (await now()) - 1000);
      assert.equal(engine.of(uid).length, failures, `no pass before the retry time after failure ${failures}`);
      await fast.ts.env.sleep(2000);
      await until(`pass ${failures + 1}`, () => engine.of(uid).length === failures + 1);
      const retry = engine.of(uid)[failures];
      assert.ok(retry && retry.scheduledAt >= (st.nextRetryAt as number), `pass ${failures + 1} ran at ${retry?.scheduledAt}, before its retry time ${st.nextRetryAt}`);
    }

    const capped = await statusWhen(uid, 'the tenth failure', (s) => s.consecutiveFailures === delays.length + 1 && s.running === null);
    assert.equal((capped.nextRetryAt as number) - (capped.lastPass?.finishedAt as number), RETRY_MAX_MS);
    engine.set(uid, 'converge');
    await fast.ts.env.sleep(RETRY_MAX_MS + 1000);
    const healed = await statusWhen(uid, 'the retry to converge', (s) => s.phase === 'Converged');
    assert.deepEqual(
      { revision: healed.revision, converged: healed.lastPass?.converged, failures: healed.consecutiveFailures, nextRetryAt: healed.nextRetryAt, passes: engine.of(uid).length },
      { revision: 1, converged: true, failures: 0, nextRetryAt: null, passes: delays.length + 2 },
    );
  });

  test('a new revision starts the failure count anew: its first failure is retried after 5 s, and an apply while a retry is pending runs at once', async () => {
    const uid = 'fast-retry-reset';
    engine.set(uid, 'fail');
    await fast.lbaas.waitConverged(uid, await apply(spec(uid)));
    await fast.ts.env.sleep(RETRY_FIRST_MS + 500);
    const twice = await statusWhen(uid, 'the second failure', (s) => s.consecutiveFailures === 2 && s.running === null);
    assert.equal((twice.nextRetryAt as number) - (twice.lastPass?.finishedAt as number), 2 * RETRY_FIRST_MS);

    const before = await now();
    const r2 = await fast.lbaas.waitConverged(uid, await apply(spec(uid, 81)));
    assert.deepEqual({ revision: r2.revision, converged: r2.converged }, { revision: 2, converged: false });
    const third = engine.of(uid)[2];
    assert.ok(third && third.scheduledAt < (twice.nextRetryAt as number), 'the new revision waited for the old retry time');
    assert.ok((third?.scheduledAt ?? 0) >= before);
    const st = await statusWhen(uid, 'the new revision failed once', (s) => s.revision === 2 && s.running === null && s.consecutiveFailures === 1);
    assert.equal((st.nextRetryAt as number) - (st.lastPass?.finishedAt as number), RETRY_FIRST_MS);
  });
});

describe('supersede', () => {
  test('an apply while a pass runs supersedes it: the status shows pass 1 running, the running observation is cancelled, no failure is counted, and waitConverged(1) answers with the pass of revision 2', async () => {
    const uid = 'fast-supersede';
    engine.set(uid, 'block');
    const r1 = await apply(spec(uid, 80));
    await until('pass 1 observing', () => engine.of(uid).length === 1);
    const running = (await status(uid)).running;
    assert.deepEqual(running && { pass: running.pass, revision: running.revision, teardown: running.teardown }, { pass: 1, revision: 1, teardown: false });
    const waiting = fast.lbaas.waitConverged(uid, r1);
    engine.set(uid, 'converge');
    const r2 = await apply(spec(uid, 8080));
    assert.equal(r2, 2);
    const result = await waiting;
    assert.deepEqual({ revision: result.revision, pass: result.pass, converged: result.converged }, { revision: 2, pass: 2, converged: true });

    const calls = engine.of(uid);
    assert.deepEqual(
      calls.map((c) => ({ outcome: c.outcome, port: c.input.spec.ports.http?.external })),
      [
        { outcome: 'cancelled', port: 80 },
        { outcome: 'converged', port: 8080 },
      ],
    );
    const st = await status(uid);
    assert.deepEqual({ phase: st.phase, failures: st.consecutiveFailures, lastPass: st.lastPass?.pass }, { phase: 'Converged', failures: 0, lastPass: 2 });
    assert.equal((await fast.ts.env.client.workflow.getHandle(workflowIds.pass(uid, 1)).describe()).status.name, 'CANCELLED');
  });

  test('lbaas apply --wait -o json waiting for revision 1 when revision 2 supersedes it: exit 0, the result document of revision 2 (appliedRevision 1) on stdout, the supersede said on stderr', async () => {
    const uid = 'fast-cli-superseded';
    engine.set(uid, 'block');
    const dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-fast-cli-'));
    try {
      const file = path.join(dir, 'rev1.json');
      await writeFile(file, JSON.stringify(spec(uid, 80)));
      // The CLI's main in this process, as cli/service.test.ts runs most commands: what is tested is what apply --wait
      // makes of a superseded wait, not a process's streams (cli/service.test.ts and cli/waits.test.ts run those).
      const waiting = runInProcess(['apply', '-f', file, '--wait', '-o', 'json'], cliEnv({ address: fast.ts.address, namespace: fast.ts.env.namespace ?? 'default', taskQueue: fast.taskQueue }));
      await until('pass 1 observing', () => engine.of(uid).length === 1);
      engine.set(uid, 'converge');
      assert.equal(await apply(spec(uid, 8080)), 2);
      const r = await waiting;
      assert.equal(r.code, 0, r.stderr);
      const doc = JSON.parse(r.stdout);
      assert.deepEqual({ serviceUid: doc.serviceUid, revision: doc.revision, appliedRevision: doc.appliedRevision, converged: doc.converged }, { serviceUid: uid, revision: 2, appliedRevision: 1, converged: true });
      assert.equal(r.stderr, 'revision 1 was superseded by revision 2 (applied meanwhile); the result is for revision 2\n');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('three applies while a superseded pass is still ending run one more pass, at the latest revision, not one per apply', async () => {
    const uid = 'fast-supersede-burst';
    // 'hold': pass 1 ends only when released, even once cancelled, so all three applies arrive before pass 2 starts
    // (an apply racing a child's start is workflow/supersede-starting's case, on the real server).
    engine.set(uid, 'hold');
    await apply(spec(uid, 80));
    await until('pass 1 observing', () => engine.of(uid).length === 1);
    await apply(spec(uid, 81));
    await apply(spec(uid, 82));
    const r4 = await apply(spec(uid, 83));
    await until('pass 1 to learn of its cancellation', () => engine.of(uid)[0]?.cancelRequested === true);
    engine.set(uid, 'converge');
    engine.release(uid);
    const result = await fast.lbaas.waitConverged(uid, r4);
    assert.deepEqual({ revision: result.revision, pass: result.pass }, { revision: 4, pass: 2 });
    assert.deepEqual(
      engine.of(uid).map((c) => ({ outcome: c.outcome, port: c.input.spec.ports.http?.external })),
      [
        { outcome: 'cancelled', port: 80 },
        { outcome: 'converged', port: 83 },
      ],
    );
  });
});

describe('delete', () => {
  test('delete runs a teardown pass, answers with its result and ends the controller; a later apply starts a fresh controller at revision 1', async () => {
    const uid = 'fast-delete';
    await fast.lbaas.waitConverged(uid, await apply(spec(uid)));
    const firstRun = (await fast.lbaas.controller(uid).describe()).runId;
    const result = await fast.lbaas.delete(uid);
    assert.equal(result.converged, true);
    assert.equal(engine.of(uid).at(-1)?.input.teardown, true);
    const ended = await fast.lbaas.controller(uid).describe();
    assert.deepEqual({ run: ended.runId, status: ended.status.name }, { run: firstRun, status: 'COMPLETED' });

    assert.equal(await apply(spec(uid)), 1);
    assert.notEqual((await fast.lbaas.controller(uid).describe()).runId, firstRun);
  });

  test('while a teardown runs, apply and resync are refused naming the service, and a reconcile pass running at the delete is cancelled', async () => {
    const uid = 'fast-delete-busy';
    engine.set(uid, 'block');
    await apply(spec(uid));
    await until('pass 1 observing', () => engine.of(uid).length === 1);
    await fast.lbaas.startDelete(uid);
    await until('the teardown observing', () => engine.of(uid).length === 2);
    assert.deepEqual(
      engine.of(uid).map((c) => ({ teardown: c.input.teardown === true, outcome: c.outcome })),
      [
        { teardown: false, outcome: 'cancelled' },
        { teardown: true, outcome: null },
      ],
    );
    await assert.rejects(apply(spec(uid, 81)), (err: Error) => {
      assert.ok(err instanceof WorkflowUpdateFailedError);
      assert.match(err.cause?.message ?? '', new RegExp(`service ${uid} is being deleted; apply again once the delete has finished`));
      return true;
    });
    await assert.rejects(fast.lbaas.resyncAndWait(uid), (err: Error) => {
      assert.match((err as WorkflowUpdateFailedError).cause?.message ?? '', new RegExp(`service ${uid} is being deleted; nothing to resync`));
      return true;
    });
    assert.equal((await status(uid)).phase, 'Deleting');
    engine.release(uid);
    await until('the controller to end', async () => (await fast.lbaas.controller(uid).describe()).status.name === 'COMPLETED');
  });

  test('a failing teardown is never given up: retried after 5 s, then 10 s, and the delete answers once one converges', async () => {
    const uid = 'fast-delete-retry';
    await fast.lbaas.waitConverged(uid, await apply(spec(uid)));
    engine.set(uid, 'fail');
    const deleting = fast.lbaas.delete(uid);
    for (const [i, delay] of [RETRY_FIRST_MS, 2 * RETRY_FIRST_MS].entries()) {
      const st = await statusWhen(uid, `teardown failure ${i + 1}`, (s) => s.consecutiveFailures === i + 1 && s.running === null);
      assert.equal(st.phase, 'Deleting');
      assert.equal((st.nextRetryAt as number) - (st.lastPass?.finishedAt as number), delay);
      await fast.ts.env.sleep(delay + 500);
      await until(`teardown ${i + 2}`, () => engine.of(uid).length === i + 3);
    }
    engine.set(uid, 'converge');
    await fast.ts.env.sleep(4 * RETRY_FIRST_MS + 500);
    const result = await deleting;
    assert.equal(result.converged, true);
    assert.deepEqual(
      engine.of(uid).map((c) => c.input.teardown === true),
      [false, true, true, true, true],
    );
  });
});

describe('resync', () => {
  test('resyncPass runs a new pass of the same revision and answers with its result', async () => {
    const uid = 'fast-resync';
    const first = await fast.lbaas.waitConverged(uid, await apply(spec(uid)));
    const result = await fast.lbaas.resyncAndWait(uid);
    assert.deepEqual({ revision: result.revision, pass: result.pass, converged: result.converged }, { revision: first.revision, pass: first.pass + 1, converged: true });
    assert.equal(engine.of(uid).length, 2);
  });
});

describe('continue-as-new', () => {
  /**
   * A controller started as the client starts one, with the lowest history limit its input takes (20 events, a pass
   * or two); returns the applied revision and the id of the controller's first run.
   */
  async function applyWithLimit(raw: Record<string, unknown>): Promise<{ revision: number; firstRun: string }> {
    const uid = String(raw.serviceUid);
    const op = new WithStartWorkflowOperation<ServiceControllerWorkflow>(workflowTypes.serviceController, {
      workflowId: workflowIds.controller(uid),
      taskQueue: fast.taskQueue,
      args: [{ v: 2, serviceUid: uid, historyLimit: 20 } as Parameters<ServiceControllerWorkflow>[0]],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    const update = await fast.ts.env.client.workflow.startUpdateWithStart(applyUpdate, { args: [raw], startWorkflowOperation: op, waitForStage: 'ACCEPTED' });
    return { revision: (await update.result()).revision, firstRun: update.workflowRunId as string };
  }

  const continuedAsNew = async (uid: string, runId: string) => (await fast.ts.env.client.workflow.getHandle(workflowIds.controller(uid), runId).describe()).status.name === 'CONTINUED_AS_NEW';

  test('a controller whose history passed its limit continues as new, keeping spec, revision and last result; the new run serves apply and waitConverged, pass numbers going on', async () => {
    const uid = 'fast-rotate';
    const { revision, firstRun } = await applyWithLimit(spec(uid, 80));
    const first = await fast.lbaas.waitConverged(uid, revision);
    assert.equal(first.converged, true);
    // The length a workflow sees is read at each activation: the resync's wakes it at the latest.
    await fast.lbaas.resync(uid);
    await until('the first run to continue as new', () => continuedAsNew(uid, firstRun));
    const carried = await statusWhen(uid, 'the resync pass', (s) => s.phase === 'Converged' && (s.lastPass?.pass ?? 0) === 2);
    assert.deepEqual({ revision: carried.revision, lastPassRevision: carried.lastPass?.revision }, { revision: 1, lastPassRevision: 1 });

    const r2 = (await applyWithLimit(spec(uid, 81))).revision;
    assert.equal(r2, 2);
    const second = await fast.lbaas.waitConverged(uid, r2);
    assert.deepEqual({ revision: second.revision, pass: second.pass, converged: second.converged }, { revision: 2, pass: 3, converged: true });
    assert.equal(engine.of(uid).at(-1)?.input.spec.ports.http?.external, 81);
  });

  test('a failing controller continues as new between its retries: the new run keeps the retry time and the failure count, and retries on time with the doubled delay', async () => {
    const uid = 'fast-rotate-retry';
    engine.set(uid, 'fail');
    const { revision, firstRun } = await applyWithLimit(spec(uid));
    await fast.lbaas.waitConverged(uid, revision);
    // A failed pass that leaves the history past the limit ends its run. Until one has, the clock moves on to the
    // next retry; the run is watched with describe only (no query races the continue-as-new).
    for (let failures = 1; ; failures++) {
      await until(`pass ${failures} to fail`, () => engine.of(uid).length === failures && engine.of(uid)[failures - 1]?.outcome === 'failed');
      const rotated = await until('the run to continue as new', () => continuedAsNew(uid, firstRun), 2_000).catch(() => false);
      if (rotated) break;
      assert.ok(failures < 6, 'the controller continued as new within 6 failed passes of a 20-event limit');
      await fast.ts.env.sleep(RETRY_FIRST_MS * 2 ** (failures - 1) + 500);
    }
    // The old run's last state, read from the closed run, and what the new run does with it.
    const last = await fast.ts.env.client.workflow.getHandle(workflowIds.controller(uid), firstRun).query(controllerStatusQuery);
    assert.equal(last.phase, 'Failed');
    const passes = engine.of(uid).length;
    assert.equal(last.consecutiveFailures, passes);
    await fast.ts.env.sleep(Math.max(0, (last.nextRetryAt as number) - (await now())) + 500);
    const again = await statusWhen(uid, 'the retry in the new run', (s) => s.consecutiveFailures === passes + 1 && s.running === null);
    assert.ok((engine.of(uid)[passes]?.scheduledAt ?? 0) >= (last.nextRetryAt as number), 'the new run retried before the carried retry time');
    assert.deepEqual({ revision: again.revision, phase: again.phase }, { revision: 1, phase: 'Failed' });
    assert.equal((again.nextRetryAt as number) - (again.lastPass?.finishedAt as number), 2 * ((last.nextRetryAt as number) - (last.lastPass?.finishedAt as number)));
  });
});

describe('applyAndWait', () => {
  /** How many updates the controller's history holds (accepted). */
  async function historyCounts(uid: string): Promise<{ updates: number }> {
    const events = (await fast.lbaas.controller(uid).fetchHistory()).events ?? [];
    const { EventType } = temporal.api.enums.v1;
    const count = (type: number) => events.filter((e) => e.eventType === type).length;
    return { updates: count(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED) };
  }

  test('applyAccepted returns once the spec is accepted, while its pass still runs; converged() answers with the revision and the pass result; the history holds one update where apply and waitConverged hold two', async () => {
    const uid = 'fast-apply-wait';
    const raw = spec(uid);
    const v = validateSpec(raw);
    if (!v.ok) throw new Error('bad test spec');
    engine.set(uid, 'block');
    const applied = await fast.lbaas.applyAccepted(raw, v.spec);
    assert.equal(applied.workflowId, workflowIds.controller(uid));
    let answered = false;
    const converged = applied.converged().then((r) => {
      answered = true;
      return r;
    });
    await until('pass 1 observing', () => engine.of(uid).length === 1);
    assert.equal(answered, false, 'answered while its pass was blocked');
    // One bounded turn of lbaas kube's waits (kube/pass-waits.ts): no outcome while the pass is blocked.
    assert.equal(await applied.convergedWithin(300), null, 'a turn answered while its pass was blocked');
    engine.release(uid);
    const { revision, result } = await converged;
    assert.deepEqual({ revision, resultRevision: result.revision, pass: result.pass, converged: result.converged }, { revision: 1, resultRevision: 1, pass: 1, converged: true });
    const turn = await applied.convergedWithin(300);
    assert.deepEqual(turn && { revision: turn.revision, pass: turn.result.pass, converged: turn.result.converged }, { revision: 1, pass: 1, converged: true }, 'a turn after the pass answers with it');

    // The same apply as `lbaas apply --wait` sends it, on another service.
    const other = 'fast-apply-then-wait';
    const r1 = await apply(spec(other));
    assert.equal((await fast.lbaas.waitConverged(other, r1)).converged, true);
    const one = await historyCounts(uid);
    const two = await historyCounts(other);
    // Workflow tasks are not compared: a second update often rides in a task the pass needed anyway.
    assert.deepEqual({ one: one.updates, two: two.updates }, { one: 1, two: 2 });
  });

  test('a later apply answers an earlier applyAndWait with the pass of the newer revision, as waitConverged does', async () => {
    const uid = 'fast-apply-wait-superseded';
    const raw = spec(uid, 80);
    const v = validateSpec(raw);
    if (!v.ok) throw new Error('bad test spec');
    engine.set(uid, 'block');
    const applied = await fast.lbaas.applyAccepted(raw, v.spec);
    await until('pass 1 observing', () => engine.of(uid).length === 1);
    engine.set(uid, 'converge');
    assert.equal(await apply(spec(uid, 8080)), 2);
    const { revision, result } = await applied.converged();
    assert.deepEqual({ revision, resultRevision: result.revision, converged: result.converged }, { revision: 1, resultRevision: 2, converged: true });
  });

  test('a workflow without the applyAndWait handler refuses it with the error isUnknownUpdate recognises, and applyAccepted then falls back to apply', async () => {
    // A pool workflow at a controller's id stands in for a controller of an earlier build: it has no applyAndWait
    // handler (and no apply either, so the fallback's own refusal shows that it was tried).
    const uid = 'fast-stand-in';
    const pool = await fast.ts.env.client.workflow.start(workflowTypes.serverPool, { workflowId: workflowIds.controller(uid), taskQueue: fast.taskQueue, args: [{ v: 2, name: 'fast-stand-in' }] });
    const err = await pool.executeUpdate(applyAndWaitUpdate, { args: [{}] }).then(
      () => assert.fail('the pool accepted applyAndWait'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof WorkflowUpdateFailedError, String(err));
    assert.equal(isUnknownUpdate(err, applyAndWaitUpdate.name), true);
    assert.equal(isUnknownUpdate(err, 'apply'), false);

    const raw = spec(uid);
    const v = validateSpec(raw);
    if (!v.ok) throw new Error('bad test spec');
    const applied = await fast.lbaas.applyAccepted(raw, v.spec);
    await assert.rejects(applied.converged(), (e: unknown) => isUnknownUpdate(e, 'apply'));
    // A bounded turn falls back the same way, and fails with the fallback's refusal, not with a turn of no outcome.
    await assert.rejects(fast.lbaas.applyAccepted(raw, v.spec).then((a) => a.convergedWithin(5_000)), (e: unknown) => isUnknownUpdate(e, 'apply'));

    const known = await fast.lbaas.controller('fast-apply-wait').executeUpdate(applyAndWaitUpdate, { args: [{ serviceUid: 'another' }] }).then(
      () => assert.fail('a spec of another service was accepted'),
      (e: unknown) => e,
    );
    assert.equal(isUnknownUpdate(known, applyAndWaitUpdate.name), false, String(known));
    await pool.terminate();
  });
});
