/**
 * The worker's default Engine budget (adaptive, worker/engine-settings.ts) against the realistic Engine's per-token
 * limit of 5 requests/s without Retry-After (simulator/README.md): a service on two load balancers is applied,
 * changed and deleted, and at most 5 % of all the requests the worker sent are answered 429, while every step ends
 * with exactly the spec's objects. (test/helpers/realistic-kit.ts: the stack, with the default budget, and the checks.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { REALISTIC_429_TARGET } from '../../bench/realistic';
import { admin } from '../helpers/engine-state';
import { apply, assertExact, fresh, HTTP_ONLY, lbaas, ORACLE, REALISTIC, stack, taggedLeft, useRealisticStack } from '../helpers/realistic-kit';

useRealisticStack();

test('at the default budget, at most 5 % of requests are answered 429 by a 5 requests/s token over apply, change and delete', async () => {
  await admin.putFaults(stack.sim, { ...REALISTIC, rateLimit: { rps: 5, burst: 10, retryAfter: false } });
  const s = fresh(2, 'real-defaults');
  stack.sim.resetStats();
  const first = await apply(s.spec());
  assert.equal(first.converged, true, first.error);
  assertExact(s.lbs, s.tag, ORACLE);
  const changed = await apply(s.spec({ ports: HTTP_ONLY }));
  assert.equal(changed.converged, true, changed.error);
  assert.equal((await lbaas.delete(s.uid)).converged, true);
  assert.deepEqual(taggedLeft(s.tag), []);
  const { throttled, total } = stack.sim.stats();
  // Enough requests for the share to mean something; and the limit was met (the budget starts above it).
  assert.ok(total >= 150, `${total} requests`);
  assert.ok(throttled > 0, 'the worker met the Engine limit');
  assert.ok(throttled / total <= REALISTIC_429_TARGET, `429s: ${throttled} of ${total} requests (${((100 * throttled) / total).toFixed(1)} %)`);
  console.log(`realistic at defaults: ${throttled} of ${total} requests answered 429 (${((100 * throttled) / total).toFixed(1)} %)`);
});
