/**
 * Each load balancer is planned once per pass (docs/architecture.md#passes): planObservedService plans every load
 * balancer of the service and hands back each plan's outline (domain/plan-outline.ts), and the workflows act on it
 * without planning again; a workflow plans only a new observation, the one that closes a round after its own writes.
 * On the time-skipping test server, with fake activities over a small in-memory Engine, counting the plans the
 * workflows make from their DEBUG lines (workflows/planning.ts, recorded by test/helpers/fast-kit.ts). The pass is
 * started by a controller, so this is also the path on which the spec is validated once, by the apply: the activity
 * is handed the canonical value, never the document.
 *
 * Here too, on the same fakes (one time-skipping server per file is most of a file's cost): a reconcileLoadBalancer
 * already running for a (service, load balancer), started by someone else, makes reconcileService wait for it instead
 * of failing (docs/spec.md#reconciliation-semantics), and its own child then reads what the other left.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { tsToMs } from '@temporalio/common/lib/time';
import { LbaasClient } from '../../client/service-client';
import { workflowIds } from '../../contract';
import type { LoadBalancerOutlook, PlanObservedInput, PlanObservedResult } from '../../activities/plan-observed';
import type { DestroyedObject, DestroyObjectsInput } from '../../activities/destroy';
import type { RealizedObject, RealizeObjectsInput } from '../../activities/realize';
import type { ObservedSnapshot, ServiceOnLoadBalancer } from '../../activities/state';
import { completeFields, desiredObjects, isPlanEmpty, outlineOf, planLoadBalancer, statusFromSnapshot, validateSpec, type ObservedObject, type ValidatedSpec } from '../../domain';
import { StatusBook } from '../../workflows/status-book';
import { runFastWorker, workflowPlans } from '../helpers/fast-kit';
import { exampleSpec } from '../helpers/fixtures';
import { eventsOf, Runs, until } from '../helpers/workflows';
import { startTimeSkippingServer, type TimeSkippingServer } from '../helpers/time-skipping';

/** Converged before the pass: nothing to do. */
const DONE = 'fa5700000000000000000000000000aa';
/** Empty before the pass: all 12 objects of the example spec to create. */
const FRESH = 'fa5700000000000000000000000000bb';
/** Left the spec and still holds a Backend of the service: a cleanup child removes it. */
const OLD = 'fa5700000000000000000000000000cc';
const PER_LB = 12;

/** The Engine the fakes work on: each load balancer's tagged objects. */
const engine = new Map<string, ObservedObject[]>();
let nextId = 0;
const newId = () => (nextId++).toString(16).padStart(32, '0');
const on = (lb: string) => engine.get(lb) ?? [];

/** Puts the spec's objects on `lb`, Deployed, each linked to its parent. */
function seedConverged(spec: ValidatedSpec, lb: string): void {
  const ids = new Map<string, string>();
  const objects: ObservedObject[] = [];
  for (const d of desiredObjects(spec, lb)) {
    const identifier = newId();
    ids.set(d.key, identifier);
    const fields = completeFields(d.kind, d.fields as never, d.parent === null ? '' : (ids.get(d.parent) as string));
    objects.push({ kind: d.kind, identifier, name: d.name, state: 'Deployed', tagged: true, fields } as ObservedObject);
  }
  engine.set(lb, objects);
}

/** Object creation waits here while the gate is closed: the run creating is busy for as long as a test wants. */
let gate: Promise<void> = Promise.resolve();
let openGate: () => void = () => {};
const closeGate = () => {
  gate = new Promise<void>((resolve) => (openGate = resolve));
};

const calls = { plan: [] as PlanObservedInput[], retrieve: [] as string[], realize: [] as RealizeObjectsInput[], destroy: [] as DestroyObjectsInput[] };
/** What the activity's one plan of each load balancer was, with the snapshot it planned. */
const activityPlans: { loadBalancer: string; plan: ReturnType<typeof planLoadBalancer>; snapshot: { loadBalancer: string; objects: ObservedObject[] } }[] = [];

const activities = {
  // As activities/plan-observed.ts: one plan per load balancer, handed back as its outline.
  async planObservedService(input: PlanObservedInput): Promise<PlanObservedResult> {
    calls.plan.push(input);
    const loadBalancers: Record<string, LoadBalancerOutlook> = {};
    for (const lb of new Set([...input.spec.loadBalancers, ...engine.keys()])) {
      const cleanup = !input.spec.loadBalancers.includes(lb);
      const snapshot = { loadBalancer: lb, objects: on(lb) };
      if (cleanup && snapshot.objects.length === 0) continue;
      const plan = planLoadBalancer(cleanup ? [] : desiredObjects(input.spec, lb), snapshot, input.spec.failedResources);
      activityPlans.push({ loadBalancer: lb, plan, snapshot });
      loadBalancers[lb] = { held: snapshot.objects.length, cleanup, empty: isPlanEmpty(plan), status: statusFromSnapshot(snapshot), outline: outlineOf(plan, snapshot) };
    }
    return { readMark: { reader: 'fake', at: 0 }, loadBalancers };
  },
  async realizeObjects(input: RealizeObjectsInput): Promise<RealizedObject[]> {
    calls.realize.push(input);
    await gate;
    return input.members.map((m) => {
      const identifier = newId();
      engine.set(input.loadBalancer, [...on(input.loadBalancer), { kind: input.kind, identifier, name: m.fields.name, state: 'Deployed', tagged: true, fields: m.fields } as ObservedObject]);
      return { key: m.key, identifier, adopted: false, outcome: 'Deployed' as const, state: 'Deployed' as const };
    });
  },
  async destroyObjects(input: DestroyObjectsInput): Promise<DestroyedObject[]> {
    calls.destroy.push(input);
    const gone = new Set(input.objects.map((o) => o.identifier));
    for (const [lb, objects] of engine) engine.set(lb, objects.filter((o) => !gone.has(o.identifier)));
    return input.objects.map((o) => ({ kind: o.kind, identifier: o.identifier, outcome: 'deleted' as const }));
  },
  async retrieveState(input: ServiceOnLoadBalancer): Promise<ObservedSnapshot> {
    calls.retrieve.push(input.loadBalancer);
    return { loadBalancer: input.loadBalancer, objects: on(input.loadBalancer), readMark: { reader: 'fake', at: 0 } };
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

test('one plan per load balancer before its first write: the activity plans each, a load balancer with nothing to do is listed from its outline, and a child acts on its outline and plans only the observation that closes its round', async () => {
  const uid = 'fast-plan-once';
  const raw = exampleSpec([DONE, FRESH], { serviceUid: uid, readiness: { initialInterval: '2s' } });
  const v = validateSpec(raw);
  assert.ok(v.ok);
  seedConverged(v.spec, DONE);
  engine.set(OLD, [{ kind: 'backend', identifier: 'seen-on-old', name: 'http.web.default.prod', state: 'Deployed', tagged: true, fields: {} } as unknown as ObservedObject]);

  const { revision } = await lbaas.apply(raw, v.spec);
  const result = await lbaas.waitConverged(uid, revision);
  assert.equal(result.converged, true, result.error);

  // One observation of the whole service, handed the canonical spec (readiness in ms), not the document.
  assert.equal(calls.plan.length, 1);
  assert.deepEqual(calls.plan[0]?.spec, v.spec);
  assert.equal(calls.plan[0]?.spec.readiness.initialIntervalMs, 2000);
  assert.deepEqual(activityPlans.map((p) => p.loadBalancer).sort(), [DONE, FRESH, OLD]);

  // The plans the workflows made, per load balancer: none where nothing was to do, and on the others only the plan
  // of the closing observation, after the round's writes (its work is done: empty).
  const mine = workflowPlans().filter((p) => p.serviceUid === uid);
  const count = (lb: string) => mine.filter((p) => p.loadBalancer === lb).length;
  assert.deepEqual({ [DONE]: count(DONE), [FRESH]: count(FRESH), [OLD]: count(OLD) }, { [DONE]: 0, [FRESH]: 1, [OLD]: 1 });
  for (const p of mine) assert.deepEqual({ create: p.create, destroy: p.destroy, recover: p.recover, wait: p.wait }, { create: 0, destroy: 0, recover: 0, wait: 0 }, `${p.loadBalancer}: the closing plan`);

  // DONE had nothing to do: its objects are the activity's plan of its snapshot, listed from the outline.
  const done = activityPlans.find((p) => p.loadBalancer === DONE);
  assert.ok(done);
  const book = new StatusBook(DONE, () => 0);
  book.observe(done.plan, done.snapshot);
  const row = (o: { key: string; identifier: string | null; state: string }) => ({ key: o.key, identifier: o.identifier, state: o.state });
  assert.equal(book.list().length, PER_LB);
  assert.deepEqual(result.objects.filter((o) => o.loadBalancer === DONE).map(row), book.list().map(row));

  // FRESH's child created every object without reading first, then read once to close its round; OLD's child
  // destroyed the Backend without reading first, then read once.
  assert.deepEqual(calls.retrieve.sort(), [FRESH, OLD].sort());
  assert.equal(
    calls.realize.filter((r) => r.loadBalancer === FRESH).reduce((n, r) => n + r.members.length, 0),
    PER_LB,
  );
  assert.deepEqual(
    calls.destroy.map((d) => d.objects.map((o) => o.identifier)),
    [['seen-on-old']],
  );
  assert.deepEqual(
    { created: result.loadBalancers[FRESH]?.created, passes: result.loadBalancers[FRESH]?.passes },
    { created: PER_LB, passes: 2 },
  );
  assert.deepEqual(
    { converged: result.loadBalancers[OLD]?.converged, cleanup: result.loadBalancers[OLD]?.cleanup, passes: result.loadBalancers[OLD]?.passes, destroyed: result.loadBalancers[OLD]?.destroyed },
    { converged: true, cleanup: true, passes: 2, destroyed: 1 },
  );
});

/** Where another client's reconcileLoadBalancer is busy creating when the service's pass starts. */
const BUSY = 'fa5700000000000000000000000000dd';

test('a reconcileLoadBalancer already running for the same service and load balancer: reconcileService waits for it (1 s, then doubling), then reconciles what it left and succeeds', async () => {
  const runs = new Runs(ts.env.client, worker.taskQueue);
  const uid = 'fast-busy-child';
  const spec = exampleSpec([BUSY], { serviceUid: uid });
  const v = validateSpec(spec);
  assert.ok(v.ok);
  const desired = desiredObjects(v.spec, BUSY)
    .map((d) => `${d.kind} ${d.name}`)
    .sort();
  // The fake Engine holds only this service's objects: the pass plans no cleanup of the earlier test's load balancers.
  engine.clear();
  closeGate();

  try {
    // Started directly, as another client would: its creation is held at the gate, so it is still running.
    const running = await runs.loadBalancer({ spec, loadBalancer: BUSY });
    await until('the running reconciliation creating objects', () => calls.realize.some((c) => c.loadBalancer === BUSY), 60_000);

    const parent = await runs.service({ spec }, 'busy');
    const refused = await until(
      'reconcileService refused the busy child id twice and waiting',
      async () => {
        const events = await eventsOf(parent);
        const failedStart = events.find((e) => e.startChildWorkflowExecutionFailedEventAttributes);
        // Two waits: the second is the first one doubled.
        const waiting = events.filter((e) => e.timerStartedEventAttributes).length >= 2;
        return failedStart && waiting ? failedStart.startChildWorkflowExecutionFailedEventAttributes : undefined;
      },
      60_000,
      50,
    );
    assert.equal(refused?.workflowId, workflowIds.loadBalancer(uid, BUSY));
    assert.equal((await parent.describe()).status.name, 'RUNNING');
    assert.equal((await running.describe()).status.name, 'RUNNING');

    openGate();
    const firstResult = await running.result();
    const r = await parent.result();

    assert.deepEqual([firstResult.converged, firstResult.created, firstResult.destroyed], [true, desired.length, 0]);
    assert.equal(r.converged, true);
    // The parent's child found the other run's work done: nothing created, one pass.
    assert.deepEqual(r.loadBalancers[BUSY], { converged: true, status: r.status, created: 0, destroyed: 0, recovered: 0, passes: 1, cleanup: false });
    const events = await eventsOf(parent);
    assert.equal(events.filter((e) => e.workflowTaskFailedEventAttributes).length, 0, 'the parent never crashed');
    assert.equal(events.filter((e) => e.childWorkflowExecutionCompletedEventAttributes).length, 1);
    // Each refused start was followed by a wait of 1 s, 2 s, 4 s ... (at most 30 s), then a start tried again.
    const waits = events.filter((e) => e.timerStartedEventAttributes).map((e) => tsToMs(e.timerStartedEventAttributes?.startToFireTimeout));
    assert.ok(waits.length >= 2);
    assert.deepEqual(
      waits,
      waits.map((_, i) => Math.min(30_000, 1000 * 2 ** i)),
    );
    assert.equal(events.filter((e) => e.startChildWorkflowExecutionFailedEventAttributes).length, waits.length);
    // The parent's child is a run of its own under the same id, after the first one.
    const latest = await ts.env.client.workflow.getHandle(workflowIds.loadBalancer(uid, BUSY)).describe();
    assert.notEqual(latest.runId, running.firstExecutionRunId);
    assert.equal(latest.status.name, 'COMPLETED');
    // Exactly the desired objects, each created once.
    assert.deepEqual(on(BUSY).map((o) => `${o.kind} ${o.name}`).sort(), desired);
  } finally {
    openGate();
    await runs.terminateRunning();
  }
});
