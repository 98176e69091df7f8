/**
 * A pass hands no plan around (docs/architecture.md#passes): planObservedService returns each load balancer's
 * observed objects, and the workflows plan from the spec and those objects, so that no history holds a plan (a plan
 * repeats every desired object). On the time-skipping test server with fake activities: the status a pass reports
 * for a load balancer with nothing to do is the plan of the returned objects, made in the workflow, and the child of
 * one with work plans its first round from the objects handed down, without reading again. The pass is started by a
 * controller, so this is also the path on which the spec is validated once, by the apply: the activity is handed the
 * canonical value, never the document.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { LbaasClient } from '../../client/service-client';
import type { PlanObservedInput, PlanObservedResult } from '../../activities/plan-observed';
import type { DestroyedObject, DestroyObjectsInput } from '../../activities/destroy';
import type { ObservedSnapshot } from '../../activities/state';
import { desiredObjects, planLoadBalancer, validateSpec, type ObservedObject } from '../../domain';
import { StatusBook } from '../../workflows/status-book';
import { runFastWorker } from '../helpers/fast-kit';
import { exampleSpec } from '../helpers/fixtures';
import { startTimeSkippingServer, type TimeSkippingServer } from '../helpers/time-skipping';

const LB = 'fa5700000000000000000000000000bb';
/** A load balancer that left the spec and still holds an object of the service: a cleanup child runs there. */
const OLD = 'fa5700000000000000000000000000cc';

/** Observed on LB: one Backend, Deployed. */
const seenOnLb = { kind: 'backend', identifier: 'seen-on-lb', name: 'http.web', state: 'Deployed', tagged: true, fields: {} } as unknown as ObservedObject;
/** Observed on OLD: one Backend, which any planner of that snapshot destroys (OLD left the spec). */
const seenOnOld = { kind: 'backend', identifier: 'seen-on-old', name: 'http.web', state: 'Deployed', tagged: true, fields: {} } as unknown as ObservedObject;

const calls = { plan: [] as PlanObservedInput[], destroy: [] as DestroyObjectsInput[], retrieve: 0 };
const activities = {
  async planObservedService(input: PlanObservedInput): Promise<PlanObservedResult> {
    calls.plan.push(input);
    return {
      readMark: { reader: 'fake', at: 0 },
      loadBalancers: {
        [LB]: { held: 1, cleanup: false, empty: true, status: {}, objects: [seenOnLb] },
        [OLD]: { held: 1, cleanup: true, empty: false, status: {}, objects: [seenOnOld] },
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

test('a pass hands no plan: the status of a load balancer with nothing to do is planned in the workflow from the returned objects, a child plans its first round from the objects handed down, and the activity gets the spec the apply validated and is asked for no plan', async () => {
  const uid = 'fast-plan-once';
  const raw = exampleSpec([LB], { serviceUid: uid, readiness: { initialInterval: '2s' } });
  const v = validateSpec(raw);
  assert.ok(v.ok);
  const { revision } = await lbaas.apply(raw, v.spec);
  const result = await lbaas.waitConverged(uid, revision);
  assert.equal(result.converged, true, result.error);

  // One observation of the whole service, handed the canonical spec (readiness in ms), not the document; objects
  // asked for (listUpTo), no plan.
  assert.equal(calls.plan.length, 1);
  assert.deepEqual(calls.plan[0]?.spec, v.spec);
  assert.equal(calls.plan[0]?.spec.readiness.initialIntervalMs, 2000);
  assert.equal('planUpTo' in (calls.plan[0] ?? {}), false);

  // LB had nothing to do: its objects are the plan of the returned snapshot, made in the workflow.
  const snapshot = { loadBalancer: LB, objects: [seenOnLb] };
  const book = new StatusBook(LB, () => 0);
  book.observe(planLoadBalancer(desiredObjects(v.spec, LB), snapshot, v.spec.failedResources), snapshot);
  const row = (o: { key: string; identifier: string | null; state: string }) => ({ key: o.key, identifier: o.identifier, state: o.state });
  assert.deepEqual(result.objects.filter((o) => o.loadBalancer === LB).map(row), book.list().map(row));

  // OLD's child planned its first round from the handed objects (no read first: it destroys seen-on-old), then
  // observed again (its second round plans that new observation) and converged.
  assert.deepEqual(
    calls.destroy.map((d) => d.objects.map((o) => o.identifier)),
    [['seen-on-old']],
  );
  assert.equal(calls.retrieve, 1);
  assert.deepEqual({ converged: result.loadBalancers[OLD]?.converged, cleanup: result.loadBalancers[OLD]?.cleanup, passes: result.loadBalancers[OLD]?.passes, destroyed: result.loadBalancers[OLD]?.destroyed }, { converged: true, cleanup: true, passes: 2, destroyed: 1 });
});
