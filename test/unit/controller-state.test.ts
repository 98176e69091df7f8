import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { PASS_TERMINATED, type PassResult } from '../../contract';
import { validateSpec } from '../../domain';
import { checkApplied, ControllerState, passSpec, RETRY_FIRST_MS, RETRY_MAX_MS, wasTerminated } from '../../workflows/controller-state';

const LB_A = 'a'.repeat(32);
const LB_B = 'b'.repeat(32);
const UID = 'svc-1';

function spec(loadBalancers = [LB_B, LB_A]) {
  return {
    serviceUid: UID,
    nameSuffix: 'web',
    loadBalancers,
    externalAddresses: ['203.0.113.10'],
    ports: { http: { external: 80, internal: 30080 } },
    servers: [{ name: 'node-1', address: '10.0.0.11' }],
  };
}

/** A controllable workflow clock. */
function clock(start = 1_000_000) {
  const c = { t: start, now: () => c.t };
  return c;
}

function result(pass: { number: number; revision: number }, converged: boolean, finishedAt: number, error?: string): PassResult {
  return {
    serviceUid: UID,
    revision: pass.revision,
    converged,
    status: converged ? { '203.0.113.10': [80] } : {},
    loadBalancers: {},
    objects: [],
    pass: pass.number,
    finishedAt,
    ...(error === undefined ? {} : { error }),
  };
}

describe('ControllerState: apply, passes and supersession', () => {
  test('a fresh controller has no spec, no work and is Converging', () => {
    const st = new ControllerState(UID, undefined, clock().now);
    assert.equal(st.revision, 0);
    assert.equal(st.hasWork(), false);
    assert.equal(st.phase, 'Converging');
    assert.deepEqual(st.loadBalancers(), []);
    assert.equal(st.retryDelayMs(), null);
  });

  test('apply numbers revisions from 1, marks work and reads the sorted load balancers of the spec', () => {
    const st = new ControllerState(UID, undefined, clock().now);
    assert.equal(st.apply(spec()), 1);
    assert.equal(st.apply(spec([LB_A])), 2);
    assert.equal(st.revision, 2);
    assert.equal(st.hasWork(), true);
    assert.deepEqual(st.loadBalancers(), [LB_A]);
  });

  test('a resync without a spec is ignored; with one it makes work', () => {
    const st = new ControllerState(UID, undefined, clock().now);
    st.requestResync();
    assert.equal(st.hasWork(), false);
    st.apply(spec());
    const pass = st.beginPass();
    st.endPass(pass, result(pass, true, 1));
    assert.equal(st.hasWork(), false);
    st.requestResync();
    assert.equal(st.hasWork(), true);
  });

  test('beginPass takes the work and numbers passes; a newer revision supersedes the pass in flight', () => {
    const c = clock();
    const st = new ControllerState(UID, undefined, c.now);
    st.apply(spec());
    const pass = st.beginPass();
    const checked = validateSpec(spec());
    assert.ok(checked.ok);
    assert.deepEqual(pass, { number: 1, revision: 1, spec: spec(), checked: { ok: true, spec: checked.spec }, teardown: false, startedAt: c.t, pool: null });
    assert.equal(st.hasWork(), false);
    assert.equal(st.isSuperseded(pass), false);
    st.apply(spec([LB_A]));
    assert.equal(st.isSuperseded(pass), true);
    st.endPass(pass, null);
    assert.equal(st.running, null);
    assert.equal(st.lastResult, null);
    assert.equal(st.hasWork(), true);
    assert.equal(st.beginPass().number, 2);
  });

  test('a superseded pass\'s creates are kept (deduplicated, in the snapshot) until a pass converges; a failed pass keeps them', () => {
    const st = new ControllerState(UID, undefined, clock().now);
    st.apply(spec());
    const first = st.beginPass();
    st.apply(spec([LB_A]));
    st.noteSupersededCreates(['id-b', 'id-a']);
    st.noteSupersededCreates(['id-a', 'id-c', 7, '']);
    st.endPass(first, null);
    assert.deepEqual(st.supersededCreates, ['id-b', 'id-a', 'id-c'], 'strings only, each once');
    const restored = new ControllerState(UID, JSON.parse(JSON.stringify(st.snapshot())), clock().now);
    assert.deepEqual(restored.supersededCreates, ['id-b', 'id-a', 'id-c'], 'carried over by continue-as-new');
    const failed = restored.beginPass();
    restored.endPass(failed, result(failed, false, 1, 'boom'));
    assert.deepEqual(restored.supersededCreates, ['id-b', 'id-a', 'id-c'], 'a failed pass may not have read them');
    restored.requestResync();
    const converged = restored.beginPass();
    restored.endPass(converged, result(converged, true, 2));
    assert.deepEqual(restored.supersededCreates, []);
    assert.equal('supersededCreates' in restored.snapshot(), false, 'absent from the snapshot when empty');
    assert.deepEqual(new ControllerState(UID, { ...restored.snapshot(), supersededCreates: undefined }, clock().now).supersededCreates, [], 'a snapshot of an earlier build has none');
  });

  test('a converged pass answers waitConverged for its revision and older ones, not newer', () => {
    const st = new ControllerState(UID, undefined, clock().now);
    st.apply(spec());
    st.apply(spec());
    const pass = st.beginPass();
    const r = result(pass, true, 5);
    st.endPass(pass, r);
    assert.equal(st.phase, 'Converged');
    assert.equal(st.resultFor(1), r);
    assert.equal(st.resultFor(2), r);
    assert.equal(st.resultFor(3), null);
  });
});

describe('ControllerState: retries', () => {
  test('failed passes of the current revision are retried after 5 s, doubling, capped at 10 min', () => {
    const c = clock();
    const st = new ControllerState(UID, undefined, c.now);
    st.apply(spec());
    const delays: number[] = [];
    for (let i = 0; i < 10; i++) {
      if (i > 0) st.retryDue();
      const pass = st.beginPass();
      st.endPass(pass, result(pass, false, c.t, 'boom'));
      delays.push(st.retryDelayMs() as number);
    }
    assert.equal(RETRY_FIRST_MS, 5_000);
    assert.equal(RETRY_MAX_MS, 600_000);
    assert.deepEqual(delays, [5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 600_000, 600_000, 600_000]);
    assert.equal(st.failures, 10);
    assert.equal(st.phase, 'Failed');
  });

  test('the retry delay counts down on the workflow clock; retryDue turns it into work', () => {
    const c = clock();
    const st = new ControllerState(UID, undefined, c.now);
    st.apply(spec());
    const pass = st.beginPass();
    st.endPass(pass, result(pass, false, c.t, 'boom'));
    assert.equal(st.hasWork(), false);
    c.t += 3_000;
    assert.equal(st.retryDelayMs(), 2_000);
    c.t += 10_000;
    assert.equal(st.retryDelayMs(), 0);
    st.retryDue();
    assert.equal(st.retryDelayMs(), null);
    assert.equal(st.hasWork(), true);
  });

  test('a new apply or a converged pass resets the failure count and the retry', () => {
    const st = new ControllerState(UID, undefined, clock().now);
    st.apply(spec());
    let pass = st.beginPass();
    st.endPass(pass, result(pass, false, 1, 'boom'));
    st.apply(spec());
    assert.equal(st.failures, 0);
    assert.equal(st.retryAt, null);
    pass = st.beginPass();
    st.endPass(pass, result(pass, false, 2, 'boom'));
    st.retryDue();
    pass = st.beginPass();
    st.endPass(pass, result(pass, true, 3));
    assert.equal(st.failures, 0);
    assert.equal(st.retryAt, null);
  });

  test('a failed pass of an older revision schedules no retry: the newer revision is already work', () => {
    const st = new ControllerState(UID, undefined, clock().now);
    st.apply(spec());
    const pass = st.beginPass();
    st.apply(spec([LB_A]));
    st.endPass(pass, result(pass, false, 1, 'boom'));
    assert.equal(st.failures, 0);
    assert.equal(st.retryAt, null);
    assert.equal(st.hasWork(), true);
    assert.equal(st.phase, 'Converging');
  });
});

describe('ControllerState: passes terminated from outside (stranded on a build that is gone)', () => {
  const terminated = (pass: { number: number; revision: number }, at: number) => result(pass, false, at, `${PASS_TERMINATED} (lbaas/${UID}/pass/${pass.number}): retried`);

  test('a terminated pass is retried at the first retry step and not counted, even after earlier failures', () => {
    const c = clock();
    const st = new ControllerState(UID, undefined, c.now);
    st.apply(spec());
    for (let i = 0; i < 3; i++) {
      if (i > 0) st.retryDue();
      const failed = st.beginPass();
      st.endPass(failed, result(failed, false, c.t, 'boom'));
    }
    assert.equal(st.failures, 3);
    assert.equal(st.retryDelayMs(), 20_000);
    st.retryDue();
    const pass = st.beginPass();
    st.endPass(pass, terminated(pass, c.t), { terminated: true });
    assert.equal(st.failures, 3);
    assert.equal(st.retryDelayMs(), RETRY_FIRST_MS);
    assert.equal(st.status().lastPass?.error, `${PASS_TERMINATED} (lbaas/${UID}/pass/4): retried`);
  });

  test('a terminated pass answers no waitConverged and leaves the service Converging; the retry that converges does', () => {
    const c = clock();
    const st = new ControllerState(UID, undefined, c.now);
    st.apply(spec());
    const pass = st.beginPass();
    st.endPass(pass, terminated(pass, c.t), { terminated: true });
    assert.equal(wasTerminated(st.lastResult), true);
    assert.equal(st.resultFor(1), null);
    assert.equal(st.phase, 'Converging');
    c.t += RETRY_FIRST_MS;
    st.retryDue();
    const retry = st.beginPass();
    const done = result(retry, true, c.t);
    st.endPass(retry, done);
    assert.equal(st.resultFor(1), done);
    assert.equal(wasTerminated(done), false);
  });

  test('a terminated teardown is retried at the first retry step, not counted', () => {
    const c = clock();
    const st = new ControllerState(UID, undefined, c.now);
    st.apply(spec());
    st.requestDelete();
    const teardown = st.beginPass();
    st.endPass(teardown, terminated(teardown, c.t), { terminated: true });
    assert.deepEqual(st.work, { tag: 'deleting', pass: null, retryAt: c.t + RETRY_FIRST_MS, failures: 0 });
  });
});

describe('ControllerState: delete', () => {
  test('a delete supersedes a reconcile pass, ignores resyncs, retries a failed teardown and ends with finishDelete', () => {
    const c = clock();
    const st = new ControllerState(UID, undefined, c.now);
    st.apply(spec());
    const pass = st.beginPass();
    st.requestDelete();
    assert.equal(st.phase, 'Deleting');
    assert.equal(st.isSuperseded(pass), true);
    st.endPass(pass, null);
    assert.equal(st.hasWork(), true);
    const teardown = st.beginPass();
    assert.equal(teardown.teardown, true);
    assert.equal(st.isSuperseded(teardown), false);
    st.endPass(teardown, result(teardown, false, c.t, 'boom'));
    assert.equal(st.hasWork(), false);
    assert.equal(st.retryDelayMs(), RETRY_FIRST_MS);
    st.requestResync();
    assert.equal(st.hasWork(), false);
    st.retryDue();
    assert.deepEqual(st.work, { tag: 'deleting', pass: null, retryAt: null, failures: 1 });
    assert.equal(st.hasWork(), true);
    const second = st.beginPass();
    const done = result(second, true, c.t);
    st.endPass(second, done);
    st.finishDelete(done);
    assert.equal(st.deleted, done);
    assert.equal(st.hasWork(), false);
    assert.equal(st.phase, 'Deleting');
  });
});

describe('ControllerState: continue-as-new, status and details', () => {
  test('a snapshot restores the same state, status and load balancers', () => {
    const c = clock();
    const st = new ControllerState(UID, undefined, c.now);
    st.apply(spec());
    const pass = st.beginPass();
    st.endPass(pass, result(pass, false, c.t, 'boom'));
    const snapshot = st.snapshot();
    assert.deepEqual(snapshot, {
      spec: spec(),
      revision: 1,
      passCount: 1,
      lastResult: result(pass, false, c.t, 'boom'),
      // The phase alone: the previous release reads it too (a rollback), so the flat fields of older builds are gone.
      work: { tag: 'retrying', at: c.t + RETRY_FIRST_MS, failures: 1 },
    });
    const restored = new ControllerState(UID, JSON.parse(JSON.stringify(snapshot)), c.now);
    assert.deepEqual(restored.status(), st.status());
    assert.deepEqual(restored.loadBalancers(), [LB_A, LB_B]);
    assert.deepEqual(restored.snapshot(), snapshot);
  });

  test('status reports the running pass, the last pass and the retry; details renders them as markdown paragraphs', () => {
    const c = clock(Date.UTC(2026, 0, 2, 3, 4, 5));
    const st = new ControllerState(UID, undefined, c.now);
    st.apply(spec());
    const first = st.beginPass();
    st.endPass(first, result(first, true, c.t));
    st.apply(spec());
    const second = st.beginPass();
    assert.deepEqual(st.status(), {
      serviceUid: UID,
      phase: 'Converging',
      revision: 2,
      status: { '203.0.113.10': [80] },
      loadBalancers: {},
      objects: [],
      lastPass: { pass: 1, revision: 1, converged: true, finishedAt: c.t },
      running: { pass: 2, revision: 2, startedAt: c.t, teardown: false },
      nextRetryAt: null,
      consecutiveFailures: 0,
      engineRateLimitedUntil: null,
    });
    assert.equal(st.details(), '**Converging** — revision 2\n\npass 2 running (revision 2)\n\nlast pass 1: converged\n\n- 203.0.113.10: 80');
    st.endPass(second, result(second, false, c.t, 'Engine down'));
    assert.equal(st.details(), '**Failed** — revision 2\n\nlast pass 2: failed: Engine down\n\nretry at 2026-01-02T03:04:10.000Z');
  });

  test('a worker\'s rate-limit notice shows in status and details until it runs out, and never shortens one in force', () => {
    const c = clock(Date.UTC(2026, 0, 2, 3, 4, 5));
    const st = new ControllerState(UID, undefined, c.now);
    st.apply(spec());
    const until = c.t + 30_000;
    st.noteRateLimited(until);
    st.noteRateLimited(c.t + 10_000);
    st.noteRateLimited(Number.NaN);
    assert.equal(st.status().engineRateLimitedUntil, until);
    assert.equal(st.details(), '**Converging** — revision 1\n\n**rate limited by the Engine**: requests held back until 2026-01-02T03:04:35.000Z');
    c.t += 30_000;
    assert.equal(st.status().engineRateLimitedUntil, null);
    assert.equal(st.details(), '**Converging** — revision 1');
  });
});

describe('ControllerState: the tagged phase', () => {
  test('idle -> due -> running -> retrying -> due -> running -> idle, failures counted and reset', () => {
    const c = clock();
    const st = new ControllerState(UID, undefined, c.now);
    assert.deepEqual(st.work, { tag: 'idle' });
    st.apply(spec());
    assert.deepEqual(st.work, { tag: 'due', failures: 0 });
    const first = st.beginPass();
    assert.deepEqual(st.work, { tag: 'running', pass: first, again: false, failures: 0 });
    st.endPass(first, result(first, false, c.t, 'boom'));
    assert.deepEqual(st.work, { tag: 'retrying', at: c.t + RETRY_FIRST_MS, failures: 1 });
    assert.equal(st.hasWork(), false);
    st.retryDue();
    assert.deepEqual(st.work, { tag: 'due', failures: 1 });
    const second = st.beginPass();
    st.endPass(second, result(second, false, c.t, 'boom'));
    assert.deepEqual(st.work, { tag: 'retrying', at: c.t + 2 * RETRY_FIRST_MS, failures: 2 });
    st.retryDue();
    const third = st.beginPass();
    st.endPass(third, result(third, true, c.t));
    assert.deepEqual(st.work, { tag: 'idle' });
  });

  test('a resync while a pass runs is followed by another pass at once, even when the running pass fails', () => {
    const c = clock();
    const st = new ControllerState(UID, undefined, c.now);
    st.apply(spec());
    const pass = st.beginPass();
    st.requestResync();
    assert.equal(st.isSuperseded(pass), false, 'a resync does not cancel the pass in flight');
    assert.deepEqual(st.work, { tag: 'running', pass, again: true, failures: 0 });
    st.endPass(pass, result(pass, false, c.t, 'boom'));
    assert.deepEqual(st.work, { tag: 'due', failures: 1 }, 'due now (no retry delay), the failure still counted');
    assert.equal(st.hasWork(), true);
  });

  test('a resync keeps the failure count; an apply resets it', () => {
    const c = clock();
    const st = new ControllerState(UID, undefined, c.now);
    st.apply(spec());
    const pass = st.beginPass();
    st.endPass(pass, result(pass, false, c.t, 'boom'));
    st.requestResync();
    assert.deepEqual(st.work, { tag: 'due', failures: 1 });
    st.apply(spec());
    assert.deepEqual(st.work, { tag: 'due', failures: 0 });
  });

  test('a failed reconcile pass that ends after a delete does not delay the teardown', () => {
    const c = clock();
    const st = new ControllerState(UID, undefined, c.now);
    st.apply(spec());
    const pass = st.beginPass();
    st.requestDelete();
    st.endPass(pass, result(pass, false, c.t, 'boom'));
    assert.deepEqual(st.work, { tag: 'deleting', pass: null, retryAt: null, failures: 0 });
    assert.equal(st.hasWork(), true);
    assert.equal(st.beginPass().teardown, true);
  });

  test('apply and resync during a delete change no phase; a delete twice is one delete', () => {
    const c = clock();
    const st = new ControllerState(UID, undefined, c.now);
    st.apply(spec());
    st.requestDelete();
    const before = structuredClone(st.work);
    st.requestResync();
    st.requestDelete();
    assert.deepEqual(st.work, before);
  });

  test('a snapshot taken while a pass runs carries its work as due (the pass does not survive continue-as-new)', () => {
    const c = clock();
    const st = new ControllerState(UID, undefined, c.now);
    st.apply(spec());
    st.beginPass();
    const snapshot = st.snapshot();
    assert.deepEqual(snapshot.work, { tag: 'due', failures: 0 });
    const restored = new ControllerState(UID, JSON.parse(JSON.stringify(snapshot)), c.now);
    assert.equal(restored.running, null);
    assert.equal(restored.hasWork(), true);
  });

  test('snapshots of builds before the tagged phase (flat fields) convert to the phase they meant', () => {
    const c = clock();
    const base = { spec: spec(), revision: 2, passCount: 4, lastResult: null };
    const cases: [Record<string, unknown>, unknown][] = [
      [{ failures: 0, dirty: false, deleting: false, retryAt: null }, { tag: 'idle' }],
      [{ failures: 0, dirty: true, deleting: false, retryAt: null }, { tag: 'due', failures: 0 }],
      [{ failures: 3, dirty: false, deleting: false, retryAt: 5_000_000 }, { tag: 'retrying', at: 5_000_000, failures: 3 }],
      // Work pending and a retry time: the earlier build took the work at once.
      [{ failures: 2, dirty: true, deleting: false, retryAt: 5_000_000 }, { tag: 'due', failures: 2 }],
      [{ failures: 1, dirty: false, deleting: true, retryAt: 5_000_000 }, { tag: 'deleting', pass: null, retryAt: 5_000_000, failures: 1 }],
      [{ failures: 0, dirty: true, deleting: true, retryAt: null }, { tag: 'deleting', pass: null, retryAt: null, failures: 0 }],
    ];
    for (const [flat, phase] of cases) {
      const st = new ControllerState(UID, { ...base, ...flat } as never, c.now);
      assert.deepEqual(st.work, phase, JSON.stringify(flat));
      // Written back as the phase alone.
      const again = st.snapshot();
      assert.deepEqual(again.work, phase);
      for (const field of ['failures', 'dirty', 'deleting', 'retryAt']) assert.equal(field in again, false, field);
    }
  });
});

describe('ControllerState: the spec is validated once, where it is applied or restored', () => {
  test('checkApplied names the field of an invalid spec and a spec of another service, as the apply validator says', () => {
    const bad = checkApplied(UID, { ...spec(), ports: { http: { external: 0, internal: 30080 } } });
    assert.equal(bad.ok, false);
    assert.match(bad.ok ? '' : bad.error, /^invalid spec:\n.*ports\.http\.external: must be an integer from 1 to 65535/);
    assert.deepEqual(checkApplied(UID, { ...spec(), serviceUid: 'svc-2' }), { ok: false, error: `serviceUid: svc-2 does not match this controller's service ${UID}` });
  });

  test('a pass is handed the canonical spec the apply produced, the document stays as sent for the snapshot', () => {
    const st = new ControllerState(UID, undefined, clock().now);
    const doc = { ...spec(), readiness: { initialInterval: '2s' } };
    st.apply(doc);
    const pass = st.beginPass();
    const handed = passSpec(pass);
    assert.ok(handed.ok);
    assert.equal(handed.spec.readiness.initialIntervalMs, 2000);
    assert.equal(st.snapshot().spec, doc);
  });

  test('a restored snapshot whose spec is invalid fails its passes naming the field, without starting one that would fail', () => {
    const st = new ControllerState(UID, { spec: { ...spec(), nameSuffix: 'bad suffix!' }, revision: 3, passCount: 2, lastResult: null, work: { tag: 'due', failures: 0 } }, clock().now);
    const handed = passSpec(st.beginPass());
    assert.equal(handed.ok, false);
    assert.match(handed.ok ? '' : handed.message, /^invalid spec:\n.*nameSuffix: must be at most 200 characters/);
  });

  test('apply refuses what its validator refuses instead of storing it (a handler run without the validator is a bug)', () => {
    const st = new ControllerState(UID, undefined, clock().now);
    assert.throws(() => st.apply({ ...spec(), serviceUid: 'svc-2' }), /the validator let through a spec it refuses: serviceUid: svc-2/);
    assert.equal(st.revision, 0);
    assert.equal(st.spec, null);
  });
});
