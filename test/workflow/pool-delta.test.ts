/**
 * Pool-delta passes (workflows/reconcile-delta.ts) on the real dev server and the simulator over HTTP: one service on
 * two load balancers with two ports uses a pool. A node join and a node leave write exactly the changed node's Servers
 * and cost at most 3 Engine requests per Server written (counted by route); a create whose answer is lost creates no
 * duplicate; tag requests failing for a while (Servers created, untagged) are retried to the same end; a delta that finds a Backend gone falls
 * back to the full pass, which converges. The tests run in order and share the service. Then two services of their own
 * servers from empty: the Binds and Servers under the parents a pass created are created without a look-alike list, and
 * lost create answers there still leave no duplicate and nothing untagged.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { LbaasClient } from '../../client/service-client';
import { validateSpec } from '../../domain';
import { workflowIds } from '../../contract';
import { exampleSpec, seedLoadBalancer, taggedLines } from '../helpers/fixtures';
import { expectedOnTwo, writeRequests } from '../helpers/engine-state';
import { startStack, stopTemporalServer, type Stack } from '../helpers/stack';
import { passTypesAfter } from '../helpers/workflows';
import type { ReconcilePoolDeltaResult } from '../../workflows/reconcile-delta';

let stack: Stack;
let lbaas: LbaasClient;
let lbs: string[];
const UID = 'delta-svc';
const SFX = 'delta.default';
const TAG = `anxccm-svc-uid=${UID}`;
const PORTS = ['http', 'https'];
/** Servers a node has: one per port and load balancer. */
const PER_NODE = PORTS.length * 2;

before(async () => {
  // Deploys of a few ms: every readiness poll finds the Server ready, so the request counts are exact.
  stack = await startStack({ sim: { deployMs: { min: 1, max: 5 } } });
  lbaas = new LbaasClient(stack.client, stack.taskQueue);
  lbs = [seedLoadBalancer(stack.sim, 'lb-delta-a'), seedLoadBalancer(stack.sim, 'lb-delta-b')];
});
after(async () => {
  await stack?.stop();
  await stopTemporalServer();
});

const expected = (nodes: readonly string[]) => expectedOnTwo(SFX, PORTS, nodes);

/** Every Server of a node, tagged or not, with its tags. */
const serversOf = (node: string) => stack.sim.objects().filter((o) => o.kind === 'server' && o.name.startsWith(`${node}.`));

/** The workflow type of each pass the controller ran after pass `after`, in order. */
const passesAfter = (after: number) => passTypesAfter(stack.client, async () => (await lbaas.status(UID)).lastPass?.pass ?? 0, UID, after);

async function change(fn: () => Promise<{ revision: number }>) {
  const before = (await lbaas.status(UID)).lastPass?.pass ?? 0;
  stack.sim.resetStats();
  const r = await fn();
  const w = await lbaas.pools.waitConverged('nodes', r.revision);
  assert.equal(w.converged, true, JSON.stringify(w.services));
  const stats = stack.sim.stats();
  return { before, stats, revision: r.revision };
}

test('setup: a pool of two nodes, the service on two load balancers converges with a full pass', async () => {
  await lbaas.pools.set({ name: 'nodes', servers: [{ name: 'node-1', address: '10.0.0.11' }, { name: 'node-2', address: '10.0.0.12' }] });
  const raw = exampleSpec(lbs, { serviceUid: UID, nameSuffix: SFX, externalAddresses: ['203.0.113.10'], serverPool: 'nodes' });
  delete raw.servers;
  const v = validateSpec(raw);
  if (!v.ok) throw new Error(JSON.stringify(v.issues));
  const { revision } = await lbaas.apply(raw, v.spec);
  const r = await lbaas.waitConverged(UID, revision);
  assert.equal(r.converged, true, r.error);
  assert.deepEqual(taggedLines(stack.sim, TAG), expected(['node-1', 'node-2']));
  assert.deepEqual(await passesAfter(0), ['reconcileService']);
});

test(`a node join is a pool-delta pass: exactly its ${PER_NODE} Servers created, tagged and polled once each, 3 Engine requests per Server`, async () => {
  const { before, stats, revision } = await change(() => lbaas.pools.add('nodes', [{ name: 'node-3', address: '10.0.0.13' }]));
  assert.deepEqual(await passesAfter(before), ['reconcilePoolDelta']);
  assert.deepEqual(stats.requests, {
    'POST /api/LBaaS/v1/server.json': PER_NODE,
    'POST /api/core/v1/resource.json/{id}/tags/{tag}': PER_NODE,
    'GET /api/LBaaS/v1/server.json/{id}': PER_NODE,
  });
  console.log(`# join: ${stats.total} Engine requests for ${PER_NODE} Servers written (${(stats.total / PER_NODE).toFixed(2)} per Server)`);
  assert.ok(stats.total / PER_NODE <= 3);
  assert.deepEqual(taggedLines(stack.sim, TAG), expected(['node-1', 'node-2', 'node-3']));
  const st = await lbaas.status(UID);
  assert.deepEqual({ phase: st.phase, converged: st.lastPass?.converged, poolRevision: st.lastPass?.poolRevision }, { phase: 'Converged', converged: true, poolRevision: revision });
  // The result keeps every object of the service, the new Servers among them.
  assert.equal(st.objects.filter((o) => o.kind === 'server' && o.name.startsWith('node-3.')).length, PER_NODE);
  assert.equal(st.objects.length, expected(['node-1', 'node-2', 'node-3']).length);
});

test(`a node leave is a pool-delta pass: exactly its ${PER_NODE} Servers deleted (tag checked, deleted, seen gone), 3 Engine requests per Server`, async () => {
  const { before, stats } = await change(() => lbaas.pools.remove('nodes', ['node-1']));
  assert.deepEqual(await passesAfter(before), ['reconcilePoolDelta']);
  assert.deepEqual(stats.requests, {
    'GET /api/core/v1/resource.json/{id}': PER_NODE,
    'DELETE /api/LBaaS/v1/server.json/{id}': PER_NODE,
    'GET /api/LBaaS/v1/server.json/{id}': PER_NODE,
  });
  console.log(`# leave: ${stats.total} Engine requests for ${PER_NODE} Servers written (${(stats.total / PER_NODE).toFixed(2)} per Server)`);
  assert.ok(stats.total / PER_NODE <= 3);
  assert.deepEqual(taggedLines(stack.sim, TAG), expected(['node-2', 'node-3']));
  assert.deepEqual(serversOf('node-1'), []);
  const st = await lbaas.status(UID);
  assert.equal(st.objects.filter((o) => o.name.startsWith('node-1.')).length, 0);
});

test('a join whose every Server create answer is lost (created, then 502) makes no duplicate: the retry adopts and tags what it created', async () => {
  stack.sim.setFaults({ seed: 3, deployMs: { min: 1, max: 5 }, rates: { dropAfterCommit: 1 }, routes: '^POST /api/LBaaS/v1/server\\.json$' });
  try {
    const { before, stats } = await change(() => lbaas.pools.add('nodes', [{ name: 'node-4', address: '10.0.0.14' }]));
    assert.deepEqual(await passesAfter(before), ['reconcilePoolDelta']);
    assert.deepEqual(writeRequests(stats), { 'POST /api/LBaaS/v1/server.json': PER_NODE, 'POST /api/core/v1/resource.json/{id}/tags/{tag}': PER_NODE });
  } finally {
    stack.sim.setFaults({ deployMs: { min: 1, max: 5 } });
  }
  const node4 = serversOf('node-4');
  assert.equal(node4.length, PER_NODE, 'one Server per port and load balancer, no duplicate');
  assert.ok(node4.every((o) => o.tags.includes(TAG)), 'every one tagged');
  assert.deepEqual(taggedLines(stack.sim, TAG), expected(['node-2', 'node-3', 'node-4']));
});

test('a delta that finds a Backend gone (deleted out of band) ends stale and the full pass follows and converges', async () => {
  const backend = stack.sim.objects().find((o) => o.kind === 'backend' && o.name === `http.${SFX}` && (o.fields as { load_balancer?: string }).load_balancer === lbs[0]);
  assert.ok(backend, 'the http Backend on the first load balancer');
  // Drops the Backend with everything under or pointing at it (its Servers, its Frontend and that one's Bind).
  await fetch(`${stack.sim.url}/_sim/objects/${backend.identifier}`, { method: 'DELETE' });
  const { before } = await change(() => lbaas.pools.add('nodes', [{ name: 'node-5', address: '10.0.0.15' }]));
  assert.deepEqual(await passesAfter(before), ['reconcilePoolDelta', 'reconcileService']);
  const delta = (await stack.client.workflow.getHandle(workflowIds.pass(UID, before + 1)).result()) as ReconcilePoolDeltaResult;
  assert.match(delta.stale ?? '', /backend/i);
  assert.deepEqual(taggedLines(stack.sim, TAG), expected(['node-2', 'node-3', 'node-4', 'node-5']));
  for (const n of ['node-2', 'node-3', 'node-4', 'node-5']) assert.equal(serversOf(n).length, PER_NODE, `${n}: no duplicate, none untagged`);
  const st = await lbaas.status(UID);
  assert.deepEqual({ phase: st.phase, converged: st.lastPass?.converged }, { phase: 'Converged', converged: true });
});

test('after the full pass, the next join is a pool-delta pass again', async () => {
  const { before, stats } = await change(() => lbaas.pools.add('nodes', [{ name: 'node-6', address: '10.0.0.16' }]));
  assert.deepEqual(await passesAfter(before), ['reconcilePoolDelta']);
  assert.deepEqual(writeRequests(stats), { 'POST /api/LBaaS/v1/server.json': PER_NODE, 'POST /api/core/v1/resource.json/{id}/tags/{tag}': PER_NODE });
  assert.ok(stats.total / PER_NODE <= 3, `${stats.total} requests`);
});

test('a resync still runs the full pass', async () => {
  const before = (await lbaas.status(UID)).lastPass?.pass ?? 0;
  await lbaas.resync(UID);
  for (;;) {
    const st = await lbaas.status(UID);
    if ((st.lastPass?.pass ?? 0) > before && st.running === null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(await passesAfter(before), ['reconcileService']);
  assert.deepEqual(taggedLines(stack.sim, TAG), expected(['node-2', 'node-3', 'node-4', 'node-5', 'node-6']));
});

test('Engine errors mid-delta (every tag request answers 5xx, so the new Servers exist untagged) are retried until the Engine recovers: exactly the joining Servers, all tagged', async () => {
  const tagPosts = () => stack.sim.stats().requests['POST /api/core/v1/resource.json/{id}/tags/{tag}'] ?? 0;
  const before = (await lbaas.status(UID)).lastPass?.pass ?? 0;
  stack.sim.resetStats();
  stack.sim.setFaults({ deployMs: { min: 1, max: 5 }, rates: { serverError: 1 }, routes: '^POST /api/core/v1/resource\\.json/' });
  let change: { revision: number };
  try {
    change = await lbaas.pools.add('nodes', [{ name: 'node-7', address: '10.0.0.17' }]);
    // Every Server created and its tag refused, then refused again by the retry.
    await until(() => serversOf('node-7').length === PER_NODE && tagPosts() >= 2 * PER_NODE);
    assert.ok(serversOf('node-7').every((o) => !o.tags.includes(TAG)), 'created, not yet tagged');
  } finally {
    stack.sim.setFaults({ deployMs: { min: 1, max: 5 } });
  }
  const w = await lbaas.pools.waitConverged('nodes', change.revision);
  assert.equal(w.converged, true, JSON.stringify(w.services));
  assert.deepEqual(await passesAfter(before), ['reconcilePoolDelta']);
  assert.equal(stack.sim.stats().requests['POST /api/LBaaS/v1/server.json'], PER_NODE, 'no Server created twice');
  const node7 = serversOf('node-7');
  assert.equal(node7.length, PER_NODE, 'one Server per port and load balancer, no duplicate');
  assert.ok(node7.every((o) => o.tags.includes(TAG)), 'every one tagged');
  assert.deepEqual(taggedLines(stack.sim, TAG), expected(['node-2', 'node-3', 'node-4', 'node-5', 'node-6', 'node-7']));
});

/** Applies a service with its own servers (no pool) on both load balancers and waits for its pass. */
async function applyFromEmpty(uid: string, sfx: string) {
  const raw = exampleSpec(lbs, { serviceUid: uid, nameSuffix: sfx, externalAddresses: ['203.0.113.10'] });
  const v = validateSpec(raw);
  if (!v.ok) throw new Error(JSON.stringify(v.issues));
  const { revision } = await lbaas.apply(raw, v.spec);
  const r = await lbaas.waitConverged(uid, revision);
  assert.equal(r.converged, true, r.error);
}

test('a service applied from empty lists look-alikes only under its load balancers: the Binds of its new Frontends and the Servers of its new Backends are created without a list', async () => {
  stack.sim.resetStats();
  await applyFromEmpty('fresh-svc', 'fresh.default');
  const lists = Object.fromEntries(Object.entries(stack.sim.stats().requests).filter(([route]) => /^GET \/api\/LBaaS\/v1\/\w+\.json$/.test(route)));
  // The Frontend and Backend lists of the load balancers may be the recent ones of the tests before (RECENT_LIST_MS).
  assert.deepEqual(Object.keys(lists).filter((route) => !/\/(frontend|backend)\.json$/.test(route)), [], 'no Bind or Server list');
  assert.equal(stack.sim.stats().requests['POST /api/LBaaS/v1/server.json'], 2 * PER_NODE);
  assert.deepEqual(taggedLines(stack.sim, 'anxccm-svc-uid=fresh-svc'), expectedOnTwo('fresh.default', PORTS, ['node-1', 'node-2']));
});

test('from empty, with every Server create answer lost (created, then 502), the retries adopt and tag what the lost attempts created: no duplicate, none untagged', async () => {
  const sfx = 'lost.default';
  stack.sim.setFaults({ seed: 5, deployMs: { min: 1, max: 5 }, rates: { dropAfterCommit: 1 }, routes: '^POST /api/LBaaS/v1/server\\.json$' });
  try {
    await applyFromEmpty('lost-svc', sfx);
  } finally {
    stack.sim.setFaults({ deployMs: { min: 1, max: 5 } });
  }
  const servers = stack.sim.objects().filter((o) => o.kind === 'server' && o.name.endsWith(`.${sfx}`));
  assert.equal(servers.length, 2 * PER_NODE, 'one Server per node, port and load balancer, no duplicate');
  assert.ok(servers.every((o) => o.tags.includes('anxccm-svc-uid=lost-svc')), 'every one tagged');
  assert.deepEqual(taggedLines(stack.sim, 'anxccm-svc-uid=lost-svc'), expectedOnTwo(sfx, PORTS, ['node-1', 'node-2']));
});

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
}
