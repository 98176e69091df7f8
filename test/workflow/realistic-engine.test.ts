/**
 * The orchestrator against the simulator's realistic profile (simulator/README.md): 429 without Retry-After per
 * token, deleted objects that stay readable and listed while they are deprovisioned (409 on their parents), a tag
 * index that lags 1-4 s behind tagging, overlapping tag requests that fail, and sparse answers. Driven through the
 * service controller as `lbaas apply` / `lbaas delete --wait` drive it, on the real Temporal dev server. Here: a
 * service's life (apply, change, delete) and an object untagged out of band.
 *
 * After every step: exactly the spec's objects, each once, each tagged, nothing else touched; after delete, nothing
 * tagged for the service is left on the Engine, not even an object still being deprovisioned.
 * (test/helpers/realistic-kit.ts has the stack and the checks the three realistic-*.test.ts files share.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AdminObject } from '../../simulator';
import { admin, describeObjects, expectedLines, objectsOn, type OracleSpec } from '../helpers/engine-state';
import { exampleSpec } from '../helpers/fixtures';
import { apply, assertExact, creates, fresh, HTTP_ONLY, LOOSE, ORACLE, lbaas, stack, tagPosts, taggedLeft, useRealisticStack } from '../helpers/realistic-kit';

useRealisticStack();

test('apply, drop a port, delete: exact objects after each step, one tag POST per created object, nothing left after delete --wait', async () => {
  await admin.putFaults(stack.sim, LOOSE);
  const s = fresh(2, 'real-flow');
  stack.sim.resetStats();
  const first = await apply(s.spec());
  assert.equal(first.converged, true, first.error);
  assertExact(s.lbs, s.tag, ORACLE);
  // 24 objects created; none tagged twice, none re-tagged after a 422: the tag index lag did not trigger a second set.
  assert.equal(creates(), 24);
  assert.equal(tagPosts(), 24);

  const second = await apply(s.spec({ ports: HTTP_ONLY }));
  assert.equal(second.converged, true, second.error);
  assertExact(s.lbs, s.tag, exampleSpec([], { ports: HTTP_ONLY }) as unknown as OracleSpec);
  assert.equal(creates(), 24, 're-apply created nothing');

  const deleted = await lbaas.delete(s.uid);
  assert.equal(deleted.converged, true, deleted.error);
  assert.deepEqual(taggedLeft(s.tag), []);
});

test('an object untagged out of band (its resource then answers tags: null) is neither adopted nor destroyed; ours is recreated beside it', async () => {
  await admin.putFaults(stack.sim, LOOSE);
  const s = fresh(1, 'real-adopt');
  const lb = s.lbs[0] as string;
  // Converge once, then remove the tag from one Server out of band: its Core resource now answers "tags": null.
  assert.equal((await apply(s.spec())).converged, true);
  const server = objectsOn(stack.sim, lb).find((o) => o.kind === 'server') as AdminObject;
  await admin.patch(stack.sim, server.identifier, { tags: [] });
  const result = await apply(s.spec({ servers: [{ name: 'node-1', address: '10.0.0.11' }, { name: 'node-2', address: '10.0.0.12' }] }));
  assert.equal(result.converged, true, result.error);
  // The untagged Server is not ours any more: left alone, and ours recreated beside it.
  const on = objectsOn(stack.sim, lb);
  assert.equal(on.filter((o) => o.identifier === server.identifier && o.tags.length === 0).length, 1, 'the untagged look-alike is untouched');
  assert.deepEqual(describeObjects(on.filter((o) => o.tags.includes(s.tag)), stack.sim), expectedLines(ORACLE));
  await admin.delete(stack.sim, server.identifier);
  assert.equal((await lbaas.delete(s.uid)).converged, true);
  assert.deepEqual(taggedLeft(s.tag), []);
});
