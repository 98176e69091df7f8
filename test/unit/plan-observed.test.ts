/**
 * planObservedService (activities/plan-observed.ts) hands back each load balancer's observed objects while they total
 * at most `listUpTo`, and never the plan it made of them (docs/architecture.md#passes): a plan repeats every desired
 * object, and the workflows plan again from the spec and the objects.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planObservedService } from '../../activities/plan-observed';
import { IdentifierCache } from '../../activities/state';
import { desiredObjects, isPlanEmpty, planLoadBalancer, validateSpec } from '../../domain';
import { exampleSpec } from '../helpers/fixtures';
import { BACKEND, BACKEND_ID, LB_ID, TAG, harness, page } from '../helpers/engine-mock';

const SERVICE_UID = TAG.slice('anxccm-svc-uid='.length);

/** The service's spec on the mock's load balancer, and an Engine double that lists and answers its one Backend. */
function setup() {
  const checked = validateSpec(exampleSpec([LB_ID], { serviceUid: SERVICE_UID }));
  assert.ok(checked.ok);
  const h = harness();
  h.reply((seen) => ({ status: 200, body: seen.path.includes(BACKEND_ID) ? BACKEND : page(1, 1, [{ identifier: BACKEND_ID, name: BACKEND.name }]).data }), 10);
  const known = new IdentifierCache();
  known.set(BACKEND_ID, 'backend');
  return { spec: checked.spec, h, known };
}

test('within listUpTo a load balancer comes back with its objects, its work decided from their plan, and without the plan', async () => {
  const { spec, h, known } = setup();
  const o = (await planObservedService(h.client, known, { spec, listUpTo: 1000 })).loadBalancers[LB_ID];
  assert.deepEqual(
    o?.objects?.map((x) => x.identifier),
    [BACKEND_ID],
  );
  assert.equal(o?.empty, isPlanEmpty(planLoadBalancer(desiredObjects(spec, LB_ID), { loadBalancer: LB_ID, objects: o?.objects ?? [] }, spec.failedResources)));
  assert.equal(o?.empty, false);
  assert.deepEqual(Object.keys(o ?? {}).sort(), ['cleanup', 'empty', 'held', 'objects', 'status']);
  await h.agent.close();
});

test('past listUpTo a load balancer comes back with its count alone', async () => {
  const { spec, h, known } = setup();
  const o = (await planObservedService(h.client, known, { spec, listUpTo: 0 })).loadBalancers[LB_ID];
  assert.deepEqual({ objects: o?.objects, held: o?.held }, { objects: undefined, held: 1 });
  await h.agent.close();
});
