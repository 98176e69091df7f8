/**
 * planObservedService (activities/plan-observed.ts) hands back the outline of each load balancer's plan while they
 * total at most `outlineUpTo` bytes, never the plan itself nor the objects (docs/architecture.md#passes): a plan repeats
 * every desired object, and the workflows get it back from the outline and the spec.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planObservedService } from '../../activities/plan-observed';
import { IdentifierCache } from '../../activities/state';
import { desiredObjects, MAX_OUTLINE_BYTES, outlineBytes, planOfOutline, validateSpec, type PlanOutline } from '../../domain';
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

test("within outlineUpTo a load balancer with work comes back with its plan's outline: the kept Backend's action by key with its identifier and state, how many to create, and no desired object", async () => {
  const { spec, h, known } = setup();
  const o = (await planObservedService(h.client, known, { spec, outlineUpTo: MAX_OUTLINE_BYTES })).loadBalancers[LB_ID];
  const desired = desiredObjects(spec, LB_ID);
  assert.deepEqual(o?.outline, { actions: { 'backend:http': ['keep', BACKEND_ID, 'Deployed'] }, creates: desired.length - 1, destroy: [] });
  assert.deepEqual({ empty: o?.empty, held: o?.held }, { empty: false, held: 1 });
  assert.deepEqual(Object.keys(o ?? {}).sort(), ['cleanup', 'empty', 'held', 'outline', 'status']);
  // The plan comes back from the outline and the spec alone, as a workflow gets it.
  const plan = planOfOutline(desired, o?.outline as PlanOutline, LB_ID);
  assert.deepEqual(plan?.objects.map((p) => p.desired), desired);
  assert.doesNotMatch(JSON.stringify(o), /"desired"|"fields"|"health_check"/);
  await h.agent.close();
});

test('past outlineUpTo a load balancer comes back with its count alone; the budget counts the outline\'s JSON bytes', async () => {
  const { spec, h, known } = setup();
  const size = outlineBytes((await planObservedService(h.client, known, { spec, outlineUpTo: MAX_OUTLINE_BYTES })).loadBalancers[LB_ID]?.outline as PlanOutline);
  assert.equal(size, JSON.stringify((await planObservedService(h.client, known, { spec, outlineUpTo: size })).loadBalancers[LB_ID]?.outline).length);
  const o = (await planObservedService(h.client, known, { spec, outlineUpTo: size - 1 })).loadBalancers[LB_ID];
  assert.deepEqual({ outline: o?.outline, held: o?.held, empty: o?.empty }, { outline: undefined, held: 1, empty: false });
  await h.agent.close();
});
