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

// First in the file: the worker meets the limit at the rate its default budget starts at (10/s).
// Status learns of the throttle from the running pass's pending activities (their heartbeat details or their last
// failure), not from a signal: the controller's history must hold no engineRateLimited signal.
// Two phases, so that what status says is not a matter of sampling a short window. First the Engine grants 1 request/s:
// the pass (about a hundred requests) stays throttled far longer than status takes to see it, and the test reads status
// until it says so. Then the Engine grants 5 requests/s without Retry-After, and the pass converges with few 429s: the
// worker climbs back from the rate it halved down to and halves again at the new limit (the pacer's curve,
// test/unit/engine-pacing.test.ts). A 5/s limit alone left status's window to chance: a run on a loaded machine whose
// status reads every 250 ms missed it.
test('429 without Retry-After: status says rate limited while it lasts, read from the throttled activities (no signal); at 5 requests/s per token it converges and backs off (few 429s)', async () => {
  await admin.putFaults(stack.sim, { ...REALISTIC, rateLimit: { rps: 1, burst: 1, retryAfter: false } });
  const s = fresh(1, 'real-429');
  stack.sim.resetStats();
  const raw = s.spec();
  const { revision } = await lbaas.apply(raw, valid(raw));
  const seen = async (): Promise<string> => {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const st = await lbaas.status(s.uid).catch(() => null);
      if (st?.engineRateLimitedUntil) return 'rate limited';
      if (st?.lastPass?.revision === revision) return `the pass ended (converged: ${st.lastPass.converged}) before status said it was rate limited`;
      if (Date.now() > deadline) return 'status did not say rate limited within 120 s of a 1 request/s limit';
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  assert.equal(await seen(), 'rate limited', 'status reported the rate limit while it lasted');
  const throttledAtOne = stack.sim.stats().throttled;
  assert.ok(throttledAtOne > 0, 'the worker met the 1 request/s limit');
  await admin.putFaults(stack.sim, { ...REALISTIC, rateLimit: { rps: 5, burst: 10, retryAfter: false } });
  stack.sim.resetStats();
  const result = await lbaas.waitConverged(s.uid, revision);
  assert.equal(result.converged, true, result.error);
  assertExact(s.lbs, s.tag, ORACLE);
  const stats = stack.sim.stats();
  assert.ok(stats.throttled / stats.total <= 0.1, `429s at 5/s: ${stats.throttled} of ${stats.total} requests: backing off, not hammering`);
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
