/**
 * The realistic Engine (see realistic-engine.test.ts) at its limits: create answers lost while the tag index lags,
 * and the per-token rate limit of 5 requests/s without Retry-After.
 *
 * After every step: exactly the spec's objects, each once, each tagged, nothing else touched; after delete, nothing
 * tagged for the service is left on the Engine, not even an object still being deprovisioned.
 * (test/helpers/realistic-kit.ts has the stack and the checks the three realistic-*.test.ts files share.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { workflowIds } from '../../contract';
import { admin } from '../helpers/engine-state';
import { historyOf, valid } from '../helpers/ops-services';
import { apply, assertExact, creates, fresh, LOOSE, ORACLE, REALISTIC, lbaas, stack, taggedLeft, useRealisticStack } from '../helpers/realistic-kit';

useRealisticStack();

// First in the file: the worker meets the limit at the rate its default budget starts at (10/s). A worker whose rate
// grew on a looser Engine first (the lost-answers test's 40/s) halves its way down from the rate it reached there, a few 429s more
// (the descent is the pacer's, test/unit/engine-pacing.test.ts).
// Status learns of the throttle from the running pass's pending activities (their heartbeat details), not from a
// signal: the controller's history must hold no engineRateLimited signal.
test('429 without Retry-After at 5 requests/s per token: converges, backs off (few 429s), and status says rate limited while it lasts, read from the throttled activities (no signal)', async () => {
  await admin.putFaults(stack.sim, { ...REALISTIC, rateLimit: { rps: 5, burst: 10, retryAfter: false } });
  const s = fresh(1, 'real-429');
  stack.sim.resetStats();
  const raw = s.spec();
  const { revision } = await lbaas.apply(raw, valid(raw));
  let sawNotice = false;
  const watching = (async () => {
    for (;;) {
      const st = await lbaas.status(s.uid).catch(() => null);
      if (st?.engineRateLimitedUntil) sawNotice = true;
      if (st?.lastPass?.revision === revision) return;
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  const result = await lbaas.waitConverged(s.uid, revision);
  await watching;
  assert.equal(result.converged, true, result.error);
  assertExact(s.lbs, s.tag, ORACLE);
  const stats = stack.sim.stats();
  assert.ok(stats.throttled > 0, 'the worker met the Engine limit (its own budget starts at 10/s)');
  assert.ok(stats.throttled / stats.total <= 0.1, `429s ${stats.throttled} of ${stats.total} requests: backing off, not hammering`);
  assert.equal(sawNotice, true, 'status reported the rate limit while it lasted');
  const signals = (await historyOf(stack.client.workflow.getHandle(workflowIds.controller(s.uid)))).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'engineRateLimited');
  assert.equal(signals.length, 0, 'no worker signalled the controller');
  assert.equal((await lbaas.delete(s.uid)).converged, true);
  assert.deepEqual(taggedLeft(s.tag), []);
});

test('lost create answers while the tag index lags: every object exists once and is tagged; a second apply right after creates nothing', async () => {
  await admin.putFaults(stack.sim, { ...LOOSE, seed: 11, rates: { dropAfterCommit: 0.3 }, routes: '^POST /api/LBaaS/' });
  const s = fresh(1, 'real-lost');
  const first = await apply(s.spec());
  assert.equal(first.converged, true, first.error);
  await admin.putFaults(stack.sim, LOOSE);
  const before = creates();
  // Within the tag index lag of the first apply: the objects must be found without the index.
  const again = await apply(s.spec({ servers: [{ name: 'node-1', address: '10.0.0.11' }, { name: 'node-2', address: '10.0.0.12' }] }));
  assert.equal(again.converged, true, again.error);
  assertExact(s.lbs, s.tag, ORACLE);
  assert.equal(creates(), before);
  assert.equal((await lbaas.delete(s.uid)).converged, true);
  assert.deepEqual(taggedLeft(s.tag), []);
});
