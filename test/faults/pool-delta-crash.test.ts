/**
 * A worker process SIGKILLed in the middle of a pool-delta pass (workflows/reconcile-delta.ts) loses nothing: a new
 * worker process picks the same pass up and the service converges with exactly its Servers, each created once and
 * tagged. Killed during a join (some Servers created, the other creates and the tags still in flight lost with the
 * worker), and mid-leave (some DELETEs accepted, the Servers still being deleted when
 * the new worker's attempt reads them, others not sent yet). The Engine's objects and request counts are read through
 * the simulator's admin API; the new worker's requests are counted exactly. The tests run in order and share the
 * service.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LbaasClient } from '../../client/service-client';
import { validateSpec } from '../../domain';
import { workflowIds } from '../../contract';
import type { AdminObject, StatsSnapshot } from '../../simulator';
import type { ReconcilePoolDeltaResult } from '../../workflows/reconcile-delta';
import { crashStack, type ChildWorker } from '../helpers/child-worker';
import { admin, countByName, expectedOnTwo, writeRequests } from '../helpers/engine-state';
import { exampleSpec, seedLoadBalancer } from '../helpers/fixtures';
import { activityRuns, historyOf } from '../helpers/ops-services';
import { passTypesAfter, until } from '../helpers/workflows';

let lbaas: LbaasClient;
let lbs: string[];
const UID = 'delta-crash-svc';
const SFX = 'delta-crash.default';
const TAG = `anxccm-svc-uid=${UID}`;
const PORTS = ['http', 'https'];
/** Servers a node has: one per port and load balancer. */
const PER_NODE = PORTS.length * 2;
/** Deploys of a few ms: every readiness poll finds the Server ready. */
const QUICK = { deployMs: { min: 1, max: 5 } };

const crash = crashStack(QUICK, (stack) => {
  lbaas = new LbaasClient(stack.client, stack.taskQueue);
  lbs = [seedLoadBalancer(stack.sim, 'lb-delta-crash-a'), seedLoadBalancer(stack.sim, 'lb-delta-crash-b')];
});
const childWorker = (identity: string) => crash.childWorker(identity);

/** The simulator's objects, read over its admin API. */
async function engineObjects(): Promise<AdminObject[]> {
  const res = await fetch(`${crash.stack.sim.url}/_sim/objects`);
  assert.equal(res.status, 200);
  return ((await res.json()) as { objects: AdminObject[] }).objects;
}
async function resetStats(): Promise<void> {
  const res = await fetch(`${crash.stack.sim.url}/_sim/stats/reset`, { method: 'POST' });
  assert.equal(res.status, 204);
}
const stats = (): Promise<StatsSnapshot> => admin.stats(crash.stack.sim);

const serversOf = (objects: readonly AdminObject[], nodes: readonly string[]) => objects.filter((o) => o.kind === 'server' && nodes.some((n) => o.name.startsWith(`${n}.`)));
const lines = (objects: readonly AdminObject[]) => objects.map((o) => `${o.kind} ${o.name}`).sort();

/** Every object of the service a converged pass leaves: per load balancer, its Backends, Frontends, Binds and Servers. */
const expected = (nodes: readonly string[]) => expectedOnTwo(SFX, PORTS, nodes);

/** The service's objects in the Engine are exactly those of `nodes`, each once per load balancer, each tagged. */
async function assertExactly(nodes: readonly string[]): Promise<AdminObject[]> {
  const objects = await engineObjects();
  const mine = objects.filter((o) => o.kind !== 'loadbalancer');
  assert.deepEqual(lines(mine.filter((o) => o.tags.includes(TAG))), expected(nodes));
  assert.deepEqual(lines(mine.filter((o) => !o.tags.includes(TAG))), [], 'nothing untagged');
  assert.deepEqual(mine.filter((o) => o.deleting).map((o) => o.name), [], 'nothing still being deleted');
  // One of each name per load balancer.
  assert.deepEqual(Object.values(countByName(mine)).filter((c) => c !== 2), []);
  return mine;
}

/** The workflow type of each pass the controller ran after pass `after`, in order. */
const passesAfter = (after: number) => passTypesAfter(crash.stack.client, async () => (await lbaas.status(UID)).lastPass?.pass ?? 0, UID, after);

let worker: ChildWorker;
let workerIdentity = '';

test('setup: a pool of two nodes, the service on two load balancers converges with a full pass', async () => {
  workerIdentity = 'delta-crash-1';
  worker = await childWorker(workerIdentity);
  await lbaas.pools.set({ name: 'nodes', servers: [{ name: 'node-1', address: '10.0.0.11' }, { name: 'node-2', address: '10.0.0.12' }] });
  const raw = exampleSpec(lbs, { serviceUid: UID, nameSuffix: SFX, externalAddresses: ['203.0.113.10'], serverPool: 'nodes' });
  delete raw.servers;
  const v = validateSpec(raw);
  if (!v.ok) throw new Error(JSON.stringify(v.issues));
  const { revision } = await lbaas.apply(raw, v.spec);
  const r = await lbaas.waitConverged(UID, revision);
  assert.equal(r.converged, true, r.error);
  await assertExactly(['node-1', 'node-2']);
  assert.deepEqual(await passesAfter(0), ['reconcileService']);
});

/**
 * Engine answers drawn between 200 ms and 3 s per request while the first worker runs: its concurrent requests land
 * apart, so the kill finds some of them answered and others not.
 */
const SLOW_ANSWERS = { min: 200, max: 3000 };

interface Crash {
  /** The Engine's objects the moment the kill came. */
  atKill: AdminObject[];
  /** The objects once the dead worker's requests in flight had landed, when the new worker started. */
  atRestart: AdminObject[];
  /** The Engine requests of the new worker alone. */
  afterRestart: StatsSnapshot;
  delta: ReconcilePoolDeltaResult;
}

/**
 * Makes a pool change while the first worker's Engine answers are slow, kills that worker once `reached` answers
 * (given the Engine's objects), lets the requests it left in flight land under `inFlight` faults, starts a new worker
 * on `restart` faults (quick answers), waits for the change to converge and checks that the one delta pass did it
 * across both workers, with an Engine call retried on the new one.
 */
async function crashDuring(
  what: string,
  o: { change: () => Promise<{ revision: number }>; faults: Record<string, unknown>; reached: (objects: AdminObject[]) => boolean; inFlight: Record<string, unknown>; restart: Record<string, unknown> },
): Promise<Crash> {
  const before = (await lbaas.status(UID)).lastPass?.pass ?? 0;
  const first = worker;
  const firstIdentity = workerIdentity;
  await admin.putFaults(crash.stack.sim, { ...o.faults, latencyMs: SLOW_ANSWERS });
  const change = await o.change();
  const atKill = await until(what, async () => {
    const objects = await engineObjects();
    return o.reached(objects) ? objects : undefined;
  }, 30_000, 5);
  first.process.kill('SIGKILL');
  assert.deepEqual(await first.exited, { code: null, signal: 'SIGKILL' });
  await admin.putFaults(crash.stack.sim, { ...o.inFlight, latencyMs: SLOW_ANSWERS });
  const handle = crash.stack.client.workflow.getHandle(workflowIds.pass(UID, before + 1));
  const running = await handle.describe();
  assert.deepEqual([running.type, running.status.name], ['reconcilePoolDelta', 'RUNNING'], 'the kill came in the middle of the delta pass');
  // A request the dead worker sent still lands (the Engine does not know its client died), within the longest answer
  // time drawn; after that the Engine stays as the kill left it.
  await new Promise((r) => setTimeout(r, SLOW_ANSWERS.max + 500));
  const atRestart = await engineObjects();
  await admin.putFaults(crash.stack.sim, o.restart);
  await resetStats();

  const next = `delta-crash-${crash.children.length + 1}`;
  workerIdentity = next;
  worker = await childWorker(next);
  const w = await lbaas.pools.waitConverged('nodes', change.revision);
  assert.equal(w.converged, true, JSON.stringify(w.services));
  const afterRestart = await stats();
  // The same delta pass finished: no stale end, no full pass after it.
  assert.deepEqual(await passesAfter(before), ['reconcilePoolDelta']);
  const delta = (await handle.result()) as ReconcilePoolDeltaResult;
  assert.equal(delta.stale, undefined);
  const st = await lbaas.status(UID);
  assert.deepEqual({ phase: st.phase, converged: st.lastPass?.converged, poolRevision: st.lastPass?.poolRevision }, { phase: 'Converged', converged: true, poolRevision: change.revision });

  // Both workers worked on it (history records an activity's last attempt only: the first worker shows in the
  // workflow tasks), and an Engine call running at the kill ran again on the new worker.
  const events = await historyOf(handle);
  const runs = activityRuns(events);
  const identities = new Set([...events.flatMap((e) => e.workflowTaskStartedEventAttributes?.identity ?? []), ...runs.map((r) => r.identity)]);
  assert.deepEqual([...identities].sort(), [firstIdentity, next].sort(), JSON.stringify(runs));
  assert.ok(runs.some((r) => r.identity === next && r.attempt > 1), `an attempt retried on the new worker: ${JSON.stringify(runs)}`);
  return { atKill, atRestart, afterRestart, delta };
}

const JOINING = ['node-3', 'node-4'];
const JOIN_SERVERS = JOINING.length * PER_NODE;
const TAG_ROUTE = '^POST /api/core/v1/resource\\.json/';

test(`a worker SIGKILLed in the middle of a join's Server creates (some created, the rest in flight, their tags lost): the new worker finishes the same delta pass, adopting and tagging what the dead one created; exactly the ${JOIN_SERVERS} joining Servers, each created once and tagged`, async () => {
  const { atKill, atRestart, afterRestart, delta } = await crashDuring('some joining Servers created, others not, one of them untagged', {
    change: () => lbaas.pools.add('nodes', JOINING.map((name, i) => ({ name, address: `10.0.0.${13 + i}` }))),
    faults: QUICK,
    reached: (objects) => {
      const joining = serversOf(objects, JOINING);
      return joining.length > 0 && joining.length < JOIN_SERVERS && joining.some((o) => !o.tags.includes(TAG));
    },
    // The dead worker's creates still in flight land (their answers lost); its tags in flight are refused, so what
    // it created stays untagged.
    inFlight: { ...QUICK, rates: { serverError: 1 }, routes: TAG_ROUTE },
    restart: QUICK,
  });
  const created = serversOf(atRestart, JOINING);
  const untagged = created.filter((o) => !o.tags.includes(TAG));
  console.log(`# join: at the kill ${serversOf(atKill, JOINING).length} of ${JOIN_SERVERS} Servers created; at the restart ${created.length}, ${untagged.length} untagged`);
  assert.ok(serversOf(atKill, JOINING).length < JOIN_SERVERS, 'killed with creates in flight');
  assert.ok(untagged.length > 0, 'the new worker found Servers created and untagged');

  const now = await assertExactly(['node-1', 'node-2', ...JOINING]);
  // What the dead worker created is what exists now (same identifiers): adopted and tagged, not created again.
  const ids = new Set(now.map((o) => o.identifier));
  for (const o of created) assert.ok(ids.has(o.identifier), `${o.name} kept its identifier`);
  assert.deepEqual(delta.created.map((c) => c.identifier).sort(), serversOf(now, JOINING).map((o) => o.identifier).sort());
  assert.deepEqual(delta.destroyed, []);
  // The new worker created only what did not exist and tagged only what was not tagged; it deleted nothing.
  const creates = JOIN_SERVERS - created.length;
  assert.deepEqual(writeRequests(afterRestart), {
    ...(creates > 0 ? { 'POST /api/LBaaS/v1/server.json': creates } : {}),
    'POST /api/core/v1/resource.json/{id}/tags/{tag}': creates + untagged.length,
  });
});

test(`a worker SIGKILLed mid-leave (some DELETEs accepted, the Servers still being deleted, others not sent): the new worker finishes the same delta pass; exactly the ${JOIN_SERVERS} leaving Servers gone, nothing else touched`, async () => {
  const before = await engineObjects();
  const kept = before.filter((o) => o.kind !== 'loadbalancer' && !serversOf(before, JOINING).includes(o));
  // The dead worker's deleted Servers stay listed (and readable, tag included) for 25 s: the new worker's retried
  // attempt, at most 15 s of heartbeat timeout after the kill, finds them still being deleted. Its own DELETEs are
  // done at once.
  const deleting = { ...QUICK, deleteMs: 25_000, deleteListed: true };
  const { atKill, atRestart, afterRestart, delta } = await crashDuring('some leaving Servers being deleted, others not', {
    change: () => lbaas.pools.remove('nodes', JOINING),
    faults: deleting,
    reached: (objects) => {
      const leaving = serversOf(objects, JOINING);
      const n = leaving.filter((o) => o.deleting).length;
      return n > 0 && n < leaving.length;
    },
    inFlight: deleting,
    restart: { ...QUICK, deleteListed: true },
  });
  const leaving = serversOf(atKill, JOINING);
  assert.ok(serversOf(atRestart, JOINING).some((o) => o.deleting), 'killed with DELETEs accepted');
  console.log(`# leave: at the kill ${leaving.filter((o) => o.deleting).length} of ${JOIN_SERVERS} Servers being deleted; at the restart ${serversOf(atRestart, JOINING).filter((o) => o.deleting).length}`);
  assert.equal(leaving.length, JOIN_SERVERS);
  assert.equal(serversOf(atRestart, JOINING).length, JOIN_SERVERS, 'every leaving Server still listed when the new worker started');

  const now = await assertExactly(['node-1', 'node-2']);
  // What stays is what was there before the leave, the same objects.
  assert.deepEqual(now.map((o) => o.identifier).sort(), kept.map((o) => o.identifier).sort());
  assert.deepEqual(delta.created, []);
  assert.deepEqual(delta.destroyed.map((d) => d.identifier).sort(), leaving.map((o) => o.identifier).sort());
  // The new worker sent one DELETE per leaving Server (accepted again for one already being deleted) and nothing else.
  assert.deepEqual(writeRequests(afterRestart), { 'DELETE /api/LBaaS/v1/server.json/{id}': JOIN_SERVERS });
});
