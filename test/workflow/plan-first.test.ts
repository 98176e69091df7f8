/**
 * The Engine request economy of a pass (target: a no-op full resync costs at most 31 requests per service): reconcileService
 * observes the service once and plans before starting children (planObservedService, workflows/reconcile-service.ts),
 * and fullResync's orphan scan finds the objects of services with a controller by one list by tag each
 * (activities/scan.ts). Real Temporal dev server, simulator over HTTP; request counts are exact because each test
 * resets the simulator's counters right before the pass it measures and the file's tests run one after the other.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { WorkflowNotFoundError } from '@temporalio/client';
import { scanTaggedServices } from '../../activities/scan';
import { workflowIds } from '../../contract';
import { describeObjects, expectedLines, objectsOn, seedConverged, tagOf, writeRequests } from '../helpers/engine-state';
import { exampleSpec, seedLoadBalancer } from '../helpers/fixtures';
import { FAST_READINESS, ORACLE, reconcile, runs, simLog, stack, STATUS, useReconcileStack } from '../helpers/reconcile-kit';
import { temporal } from '@temporalio/proto';
import { eventsOf, scheduledActivities, type HistoryEvent } from '../helpers/workflows';

useReconcileStack(FAST_READINESS);

/** The example spec's objects on one load balancer: 2 Backends, 2 Frontends, 4 Binds, 4 Servers. */
const PER_LB = 12;
const LIST_BY_TAG = 'GET /api/core/v1/resource.json';

function fresh(count: number) {
  const uid = `plan-first-${randomUUID()}`;
  const lbs = Array.from({ length: count }, (_, i) => seedLoadBalancer(stack.sim, `lb-${i + 1}`));
  return { uid, lbs, spec: exampleSpec(lbs, { serviceUid: uid }) };
}

async function hasRun(workflowId: string): Promise<boolean> {
  try {
    await stack.client.workflow.getHandle(workflowId).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

const objectGets = (requests: Record<string, number>) =>
  Object.entries(requests)
    .filter(([route]) => /^GET \/api\/LBaaS\/v1\/\w+\.json\/\{id\}$/.test(route))
    .reduce((sum, [, count]) => sum + count, 0);

test('a no-op pass on 2 converged load balancers is one list by tag and one GET per object, writes nothing and starts no reconcileLoadBalancer', async () => {
  const { uid, lbs, spec } = fresh(2);
  for (const lb of lbs) seedConverged(stack.sim, lb, ORACLE, { tags: [tagOf(uid)] });
  // The first pass teaches the worker each object's kind (one Core read per object); the second is the steady state.
  assert.equal((await reconcile(spec)).converged, true);
  stack.sim.resetStats();
  const r = await reconcile(spec);
  const stats = stack.sim.stats();

  assert.equal(r.converged, true);
  assert.deepEqual(r.status, STATUS);
  assert.equal(r.objects.length, 2 * PER_LB);
  for (const lb of lbs) assert.deepEqual({ ...r.loadBalancers[lb] }, { converged: true, status: STATUS, created: 0, destroyed: 0, recovered: 0, passes: 1, cleanup: false });
  assert.equal(stats.mutations, 0);
  assert.deepEqual(writeRequests(stats), {});
  assert.equal(stats.requests[LIST_BY_TAG], 1);
  assert.equal(objectGets(stats.requests), 2 * PER_LB);
  assert.equal(stats.total, 1 + 2 * PER_LB);
  for (const lb of lbs) assert.equal(await hasRun(workflowIds.loadBalancer(uid, lb)), false, `no reconcileLoadBalancer ran on ${lb}`);
});

test("from empty, each child acts on the outline of its parent's plan in its first round (no retrieveState before its first create, 3 lists by tag in all); the observation that closes each round takes what the round watched to Deployed from those reads: after its deploy ends, each object is read once (the poll that saw it), and the next pass reads every object again", async () => {
  const { uid, lbs, spec } = fresh(2);
  stack.sim.resetStats();
  const r = await reconcile(spec);
  assert.equal(r.converged, true);
  assert.equal(r.objects.length, 2 * PER_LB);
  // The parent's observation (1), then each child's closing observation (1 each); no list at the end of the pass.
  assert.equal(stack.sim.stats().requests[LIST_BY_TAG], 3);
  for (const lb of lbs) {
    const activities = scheduledActivities(await eventsOf(stack.client.workflow.getHandle(workflowIds.loadBalancer(uid, lb))));
    assert.equal(activities[0], 'realizeObjects', `${lb}: first activity ${activities[0]}`);
    assert.equal(activities.filter((a) => a === 'retrieveState').length, 1, `${lb}: one observation, after the creates`);
  }
  // The simulator's log, in order: "deploy <Kind> <id> -> Deployed" when a deploy ends, "GET <path> -> <status>" per request.
  const readsAfterDeploy = (log: readonly string[]) => {
    const deployedAt = new Map<string, number>();
    const reads = new Map<string, number>();
    log.forEach((line, i) => {
      const d = / (\w{32}) -> Deployed$/.exec(line);
      if (d?.[1] && line.startsWith('deploy ')) deployedAt.set(d[1], i);
      const g = /^GET \/api\/LBaaS\/v1\/\w+\.json\/(\w{32}) -> 200/.exec(line);
      if (g?.[1] && (deployedAt.get(g[1]) ?? Infinity) < i) reads.set(g[1], (reads.get(g[1]) ?? 0) + 1);
    });
    return { deployed: [...deployedAt.keys()].sort(), reads };
  };
  const first = readsAfterDeploy(simLog);
  const ids = r.objects.map((o) => o.identifier as string).sort();
  assert.deepEqual(first.deployed, ids, 'every object created and deployed in this pass');
  const kindOf = new Map(r.objects.map((o) => [o.identifier as string, `${o.kind} ${o.name}`]));
  assert.deepEqual(
    ids.filter((id) => first.reads.get(id) !== 1).map((id) => `${kindOf.get(id)}: ${first.reads.get(id) ?? 0} reads`),
    [],
    'read once after its deploy ended: by the readiness poll, not again by the closing observation',
  );

  // A new pass (here a no-op) trusts no earlier read: one GET per object.
  stack.sim.resetStats();
  assert.equal((await reconcile(spec)).converged, true);
  assert.equal(objectGets(stack.sim.stats().requests), 2 * PER_LB);
  for (const lb of lbs) assert.deepEqual(describeObjects(objectsOn(stack.sim, lb), stack.sim), expectedLines(ORACLE));
});

/** The first payload of an event's input or result, parsed (the default JSON converter). */
const firstPayload = (p: { payloads?: { data?: Uint8Array | null }[] | null } | null | undefined): Record<string, unknown> =>
  JSON.parse(Buffer.from(p?.payloads?.[0]?.data ?? new Uint8Array()).toString('utf8')) as Record<string, unknown>;
/** What planObservedService returned per load balancer, from the pass's history. */
const outlooksIn = (events: readonly HistoryEvent[]) => {
  const completed = events.filter((e) => e.activityTaskCompletedEventAttributes);
  assert.equal(completed.length, 1, 'one activity in the pass: planObservedService');
  return firstPayload(completed[0]?.activityTaskCompletedEventAttributes?.result).loadBalancers as Record<string, Record<string, unknown>>;
};

/** Every payload of a history's events (inputs, results, details), decoded as text. */
const payloadTexts = (events: readonly HistoryEvent[]): string[] => {
  const texts: string[] = [];
  const walk = (v: unknown): void => {
    if (v instanceof Uint8Array) return;
    if (Array.isArray(v)) for (const x of v) walk(x);
    else if (v && typeof v === 'object') {
      const o = v as { payloads?: { data?: Uint8Array | null }[] };
      if (Array.isArray(o.payloads)) for (const p of o.payloads) if (p.data) texts.push(Buffer.from(p.data).toString('utf8'));
      for (const x of Object.values(v)) walk(x);
    }
  };
  walk(events);
  return texts;
};
/** The bytes of a history as Temporal stores and sends it (protobuf). */
const historyBytes = (events: readonly HistoryEvent[]) => temporal.api.history.v1.History.encode({ events: [...events] }).finish().length;

// A plan repeats every desired object of the spec. Handed back by the observation and down to each child, it was
// written three times per load balancer (the activity's result, the child's start in the parent's history and in its
// own) and made the fleet's histories about a third larger in bytes: the Temporal server's and the worker's CPU per
// service grew with them. What travels is the plan's outline (domain/plan-outline.ts): each desired object's key and
// action and the identifier and state of the existing object, how many to create, what to destroy; the spec travels
// once per history, and the workflows get
// the plan back from the two without planning again.
test("no history of a pass carries a plan: the observation returns each plan's outline, and each child starts from the spec and its outline, without a desired object's fields anywhere", async () => {
  const { uid, lbs, spec } = fresh(2);
  const handle = await runs.service({ spec });
  assert.equal((await handle.result()).converged, true);
  const events = await eventsOf(handle);

  for (const [lb, o] of Object.entries(outlooksIn(events))) assert.deepEqual(Object.keys(o).sort(), ['cleanup', 'empty', 'held', 'outline', 'status'], `${lb}: the observation's outlook`);
  const starts = events.flatMap((e) => (e.startChildWorkflowExecutionInitiatedEventAttributes ? [firstPayload(e.startChildWorkflowExecutionInitiatedEventAttributes.input)] : []));
  assert.equal(starts.length, lbs.length);
  for (const input of starts) assert.deepEqual(Object.keys(input).sort(), ['cleanup', 'loadBalancer', 'observedSince', 'outline', 'spec'], `${String(input.loadBalancer)}: the child's input`);
  const children = await Promise.all(lbs.map((lb) => eventsOf(stack.client.workflow.getHandle(workflowIds.loadBalancer(uid, lb)))));
  children.forEach((child, i) => {
    const input = firstPayload(child[0]?.workflowExecutionStartedEventAttributes?.input);
    assert.deepEqual(input.outline, { actions: {}, creates: PER_LB, destroy: [] }, `${lbs[i]}: nothing was there yet`);
  });
  // A plan's objects carry `desired`, a desired object its `fields`: neither is in the observation's result nor in any
  // child's start (a child's own observations return observed objects, whose fields are what the Engine holds).
  const handedDown = [...payloadTexts(events.filter((e) => e.activityTaskCompletedEventAttributes || e.startChildWorkflowExecutionInitiatedEventAttributes)), ...children.flatMap((c) => payloadTexts(c.slice(0, 1)))];
  assert.equal(handedDown.length, 1 + 2 * lbs.length);
  for (const text of handedDown) assert.doesNotMatch(text, /"desired"|"fields"/);

  // A no-op pass reports both load balancers from their outlines: still no plan, and no child.
  const again = await runs.service({ spec });
  const r = await again.result();
  assert.equal(r.objects.length, 2 * PER_LB);
  assert.deepEqual(
    r.objects.filter((o) => o.state !== 'Deployed').map((o) => `${o.kind} ${o.name}: ${o.state}`),
    [],
    'every object reported Deployed from the outline',
  );
  const noOp = await eventsOf(again);
  for (const [lb, o] of Object.entries(outlooksIn(noOp))) {
    assert.deepEqual(Object.keys(o).sort(), ['cleanup', 'empty', 'held', 'outline', 'status'], `${lb}: the no-op observation's outlook`);
    assert.equal(Object.keys((o.outline as { actions: object }).actions).length, PER_LB);
  }
  for (const text of payloadTexts(noOp)) assert.doesNotMatch(text, /"desired"|"fields"/);
  // The bytes of each pass's histories, for the record (docs/scaling.md compares them across builds).
  const apply = historyBytes(events) + children.reduce((n, c) => n + historyBytes(c), 0);
  console.log(`# history bytes of the example service on 2 load balancers: apply ${apply} (reconcileService ${historyBytes(events)}, reconcileLoadBalancer ${children.map(historyBytes).join(' + ')}), no-op pass ${historyBytes(noOp)}`);
});

test("the orphan scan lists each skipped service by tag instead of reading its Backends' and Frontends' tags, and still reports every other tagged service", async () => {
  const controlled = `scan-live-${randomUUID()}`;
  const orphan = `scan-orphan-${randomUUID()}`;
  const lb = seedLoadBalancer(stack.sim, 'lb-scan');
  seedConverged(stack.sim, lb, ORACLE, { tags: [tagOf(controlled)] });
  const other = seedLoadBalancer(stack.sim, 'lb-scan-orphan');
  seedConverged(stack.sim, other, ORACLE, { tags: [tagOf(orphan)] });
  // Every Backend and Frontend in the simulator that is not the controlled service's is read, as before.
  const readable = stack.sim.objects().filter((o) => (o.kind === 'backend' || o.kind === 'frontend') && !o.tags.includes(tagOf(controlled))).length;

  stack.sim.resetStats();
  const found = await scanTaggedServices(stack.engine, [controlled]);
  const stats = stack.sim.stats();

  assert.deepEqual(found[orphan], { loadBalancers: [other], objects: 4 });
  assert.equal(found[controlled], undefined, 'the skipped service is not reported: its objects were not read');
  assert.equal(stats.requests[LIST_BY_TAG], 1, 'one list by tag for the skipped service');
  assert.equal(stats.requests['GET /api/core/v1/resource.json/{id}'], readable);

  // Without skip, the controlled service's 4 objects are read and reported too.
  const all = await scanTaggedServices(stack.engine);
  assert.deepEqual(all[controlled], { loadBalancers: [lb], objects: 4 });
  assert.deepEqual(all[orphan], { loadBalancers: [other], objects: 4 });
});
