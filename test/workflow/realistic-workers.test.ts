/**
 * The realistic Engine (see realistic-engine.test.ts) and workers that come and go: a worker stopped mid-pass, and a
 * fresh worker inside the tag index lag, with no memory of what the one before it created.
 *
 * After every step: exactly the spec's objects, each once, each tagged, nothing else touched; after delete, nothing
 * tagged for the service is left on the Engine, not even an object still being deprovisioned.
 * (test/helpers/realistic-kit.ts has the stack and the checks the three realistic-*.test.ts files share.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { admin, objectsOn } from '../helpers/engine-state';
import { valid } from '../helpers/ops-services';
import { apply, assertExact, creates, fresh, LOOSE, ORACLE, lbaas, stack, taggedLeft, useRealisticStack } from '../helpers/realistic-kit';
import { until } from '../helpers/workflows';

useRealisticStack();

test('a worker stopped mid-pass: a fresh worker (no memory of what the first created) converges without duplicates', async () => {
  await admin.putFaults(stack.sim, LOOSE);
  const s = fresh(1, 'real-crash');
  const raw = s.spec();
  const { revision } = await lbaas.apply(raw, valid(raw));
  await until('a third of the objects exist', () => objectsOn(stack.sim, s.lbs[0] as string).length >= 4, 60_000, 20);
  await stack.stopWorker();
  await stack.startWorker();
  const result = await lbaas.waitConverged(s.uid, revision);
  assert.equal(result.converged, true, result.error);
  assertExact(s.lbs, s.tag, ORACLE);
  assert.equal((await lbaas.delete(s.uid)).converged, true);
  assert.deepEqual(taggedLeft(s.tag), []);
});

test('a fresh worker right after apply, inside the tag index lag: the next pass and the delete find every object through the last pass\'s identifiers', async () => {
  await admin.putFaults(stack.sim, { ...LOOSE, tagLagMs: { min: 20_000, max: 20_000 } });
  const s = fresh(1, 'real-handover');
  assert.equal((await apply(s.spec())).converged, true);
  // The new worker has no memory of what the old one created; the index lists nothing of this service for 20 s.
  await stack.stopWorker();
  await stack.startWorker();
  const before = creates();
  const again = await apply(s.spec({ servers: [{ name: 'node-1', address: '10.0.0.11' }, { name: 'node-2', address: '10.0.0.12' }] }));
  assert.equal(again.converged, true, again.error);
  assertExact(s.lbs, s.tag, ORACLE);
  assert.equal(creates(), before, 'nothing created twice');
  await stack.stopWorker();
  await stack.startWorker();
  assert.equal((await lbaas.delete(s.uid)).converged, true);
  assert.deepEqual(taggedLeft(s.tag), []);
});
