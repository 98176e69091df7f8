/**
 * One pass plans each load balancer once (docs/architecture.md#passes): planObservedService plans every load balancer
 * from its observation in the worker, and the workflows act on that plan instead of planning the same snapshot
 * again. On the time-skipping test server with fake activities, the fake's plans are ones no planner would make of
 * the snapshot it returns, so a workflow that planned again would show it: the status a pass reports for a load
 * balancer with nothing to do, and what the child of one with work destroys in its first round, come from the handed
 * plan. The pass is started by a controller, so this is also the path on which the spec is validated once, by the
 * apply: the activity is handed the canonical value, never the document.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { LbaasClient } from '../../client/service-client';
import type { PlanObservedInput, PlanObservedResult } from '../../activities/plan-observed';
import type { DestroyedObject, DestroyObjectsInput } from '../../activities/destroy';
import type { ObservedSnapshot } from '../../activities/state';
import { validateSpec, type ObservedObject, type Plan } from '../../domain';
import { runFastWorker } from '../helpers/fast-kit';
import { exampleSpec } from '../helpers/fixtures';
import { startTimeSkippingServer, type TimeSkippingServer } from '../helpers/time-skipping';

const LB = 'fa5700000000000000000000000000bb';
/** A load balancer that left the spec and still holds an object of the service: a cleanup child runs there. */
const OLD = 'fa5700000000000000000000000000cc';

/** Observed on LB: one Backend, Deployed. */
const seenOnLb = { kind: 'backend', identifier: 'seen-on-lb', name: 'http.web', state: 'Deployed', tagged: true, fields: {} } as unknown as ObservedObject;
/** Observed on OLD: one Backend, which any planner of that snapshot would destroy. */
const seenOnOld = { kind: 'backend', identifier: 'seen-on-old', name: 'http.web', state: 'Deployed', tagged: true, fields: {} } as unknown as ObservedObject;

/** The handed plans: nothing a planner would make of the snapshots above. */
const lbPlan: Plan = {
  loadBalancer: LB,
  objects: [
    { desired: { kind: 'backend', key: 'backend:http', name: 'http.web', port: 'http', parent: null, fields: {} as never }, action: { type: 'keep', identifier: 'seen-on-lb' } },
    { desired: { kind: 'frontend', key: 'frontend:http', name: 'http.web', port: 'http', parent: 'backend:http', fields: {} as never }, action: { type: 'keep', identifier: 'only-in-the-plan' } },
  ],
  destroy: [],
};
const oldPlan: Plan = { loadBalancer: OLD, objects: [], destroy: [{ kind: 'backend', identifier: 'only-in-the-old-plan', name: 'http.web', reason: 'not desired' }] };

const calls = { plan: [] as PlanObservedInput[], destroy: [] as DestroyObjectsInput[], retrieve: 0 };
const activities = {
  async planObservedService(input: PlanObservedInput): Promise<PlanObservedResult> {
    calls.plan.push(input);
    return {
      readMark: { reader: 'fake', at: 0 },
      loadBalancers: {
        [LB]: { held: 1, cleanup: false, empty: true, status: {}, objects: [seenOnLb], plan: lbPlan },
        [OLD]: { held: 1, cleanup: true, empty: false, status: {}, objects: [seenOnOld], plan: oldPlan },
      },
    };
  },
  async destroyObjects(input: DestroyObjectsInput): Promise<DestroyedObject[]> {
    calls.destroy.push(input);
    return input.objects.map((o) => ({ kind: o.kind, identifier: o.identifier, outcome: 'deleted' as const }));
  },
  // The closing observation of the cleanup child's first round: the load balancer is empty now.
  async retrieveState(input: { loadBalancer: string }): Promise<ObservedSnapshot> {
    calls.retrieve++;
    return { loadBalancer: input.loadBalancer, objects: [], readMark: { reader: 'fake', at: 0 } };
  },
};

let ts: TimeSkippingServer;
let worker: Awaited<ReturnType<typeof runFastWorker>>;
let lbaas: LbaasClient;

before(async () => {
  ts = await startTimeSkippingServer();
  worker = await runFastWorker(ts, activities);
  lbaas = new LbaasClient(ts.env.client, worker.taskQueue);
});
after(async () => {
  await worker?.stop();
  await ts?.stop();
});

test('a pass plans each load balancer once, in the worker: the status of one with nothing to do and the first round of a child come from the handed plan; the activity gets the spec the apply validated', async () => {
  const uid = 'fast-plan-once';
  const raw = exampleSpec([LB], { serviceUid: uid, readiness: { initialInterval: '2s' } });
  const v = validateSpec(raw);
  assert.ok(v.ok);
  const { revision } = await lbaas.apply(raw, v.spec);
  const result = await lbaas.waitConverged(uid, revision);
  assert.equal(result.converged, true, result.error);

  // One observation and plan of the whole service, handed the canonical spec (readiness in ms), not the document.
  assert.equal(calls.plan.length, 1);
  assert.deepEqual(calls.plan[0]?.spec, v.spec);
  assert.equal(calls.plan[0]?.spec.readiness.initialIntervalMs, 2000);

  // LB had nothing to do: its objects are the handed plan's, states from the snapshot (planning the snapshot again
  // would have listed the spec's own desired objects, the Frontend as a Pending create).
  const onLb = result.objects.filter((o) => o.loadBalancer === LB).map((o) => ({ key: o.key, identifier: o.identifier, state: o.state }));
  assert.deepEqual(onLb, [
    { key: 'backend:http', identifier: 'seen-on-lb', state: 'Deployed' },
    { key: 'frontend:http', identifier: 'only-in-the-plan', state: 'Unknown' },
  ]);

  // OLD's child acted in its first round on the handed plan (planning the snapshot would destroy seen-on-old), then
  // observed again (its second round plans that new observation) and converged.
  assert.deepEqual(
    calls.destroy.map((d) => d.objects.map((o) => o.identifier)),
    [['only-in-the-old-plan']],
  );
  assert.equal(calls.retrieve, 1);
  assert.deepEqual({ converged: result.loadBalancers[OLD]?.converged, cleanup: result.loadBalancers[OLD]?.cleanup, passes: result.loadBalancers[OLD]?.passes, destroyed: result.loadBalancers[OLD]?.destroyed }, { converged: true, cleanup: true, passes: 2, destroyed: 1 });
});
