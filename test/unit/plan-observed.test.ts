/**
 * planObservedService (activities/plan-observed.ts) hands back each load balancer's observed objects with the plan it
 * made of them, so the pass does not plan the same observation again (docs/architecture.md#passes): objects within
 * `listUpTo`, their plan within `planUpTo` as well; objects whose plan does not fit go back alone.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planObservedService } from '../../activities/plan-observed';
import { IdentifierCache } from '../../activities/state';
import { desiredObjects, planLoadBalancer, validateSpec } from '../../domain';
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

test('within listUpTo a load balancer comes back with its objects and the plan made of them, the one the pass acts on', async () => {
  const { spec, h, known } = setup();
  const r = await planObservedService(h.client, known, { spec, listUpTo: 1000, planUpTo: 1000 });
  const o = r.loadBalancers[LB_ID];
  assert.ok(o?.objects && o.plan, 'objects and plan handed back');
  assert.deepEqual(
    o.objects.map((x) => x.identifier),
    [BACKEND_ID],
  );
  assert.deepEqual(o.plan, planLoadBalancer(desiredObjects(spec, LB_ID), { loadBalancer: LB_ID, objects: o.objects }, spec.failedResources));
  assert.equal(o.empty, false);
  await h.agent.close();
});

test('objects whose plan does not fit planUpTo come back alone; past listUpTo neither does', async () => {
  const { spec, h, known } = setup();
  const alone = (await planObservedService(h.client, known, { spec, listUpTo: 1, planUpTo: 5 })).loadBalancers[LB_ID];
  assert.deepEqual({ objects: alone?.objects?.length, plan: alone?.plan }, { objects: 1, plan: undefined });
  const neither = (await planObservedService(h.client, known, { spec, listUpTo: 0, planUpTo: 1000 })).loadBalancers[LB_ID];
  assert.deepEqual({ objects: neither?.objects, plan: neither?.plan, held: neither?.held }, { objects: undefined, plan: undefined, held: 1 });
  await h.agent.close();
});
