/**
 * Server pools on the real dev server and the simulator over HTTP: 6 services on two load balancers share a pool;
 * every pool change reaches each of them and writes exactly the Server objects of the changed node. The tests run in
 * order and share the services (setting them up is the expensive part). The pool's own loop (delivery rounds, reports,
 * waits, delete) is tested on the time-skipping server in test/fast/pools.test.ts; a worker killed during a fan-out
 * and continue-as-new in pools-crash.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PoolNotFoundError } from '../../client/pool-client';
import { LbaasClient } from '../../client/service-client';
import { validateSpec, type ServerSpec } from '../../domain';
import { exampleSpec, seedLoadBalancer, taggedLines } from '../helpers/fixtures';
import { writeRequests } from '../helpers/engine-state';
import { startStack, stopTemporalServer, type Stack } from '../helpers/stack';

let stack: Stack;
let lbaas: LbaasClient;
let lbs: string[];
const N = 6;
const PORTS = ['http', 'https'];
const uids = Array.from({ length: N }, (_, i) => `pool-svc-${String(i).padStart(2, '0')}`);
const suffixOf = (uid: string) => `${uid}.default`;

before(async () => {
  stack = await startStack();
  lbaas = new LbaasClient(stack.client, stack.taskQueue);
  lbs = [seedLoadBalancer(stack.sim, 'lb-pool-a'), seedLoadBalancer(stack.sim, 'lb-pool-b')];
});
after(async () => {
  await stack?.stop();
  await stopTemporalServer();
});

function spec(uid: string, source: { serverPool: string } | { servers: ServerSpec[] }): Record<string, unknown> {
  const raw = exampleSpec(lbs, { serviceUid: uid, nameSuffix: suffixOf(uid), externalAddresses: ['203.0.113.10'], ...source });
  if ('serverPool' in source) delete raw.servers;
  return raw;
}

async function apply(raw: Record<string, unknown>) {
  const r = validateSpec(raw);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return lbaas.apply(raw, r.spec);
}

/** The service's objects on both load balancers, as "kind name" lines, for `servers`. */
function expected(uid: string, servers: readonly string[]): string[] {
  const sfx = suffixOf(uid);
  const perLb = [
    ...PORTS.map((p) => `backend ${p}.${sfx}`),
    ...PORTS.map((p) => `frontend ${p}.${sfx}`),
    ...PORTS.map((p) => `bind v4.${p}.${sfx}`),
    ...PORTS.flatMap((p) => servers.map((s) => `server ${s}.${p}.${sfx}`)),
  ];
  return [...perLb, ...perLb].sort();
}

const tagged = (uid: string) => taggedLines(stack.sim, `anxccm-svc-uid=${uid}`);

/** Identifier and address of every Server object of the pool services, by "lb name". */
function serverObjects(): Map<string, { id: string; ip: unknown }> {
  const out = new Map<string, { id: string; ip: unknown }>();
  for (const o of stack.sim.objects()) {
    if (o.kind === 'server' && o.tags.some((t) => t.startsWith('anxccm-svc-uid=pool-svc-'))) out.set(`${o.identifier}`, { id: o.identifier, ip: (o.fields as Record<string, unknown>).ip });
  }
  return out;
}

const serversNamed = (node: string) => stack.sim.objects().filter((o) => o.kind === 'server' && o.name.startsWith(`${node}.`) && o.tags.some((t) => t.startsWith('anxccm-svc-uid=pool-svc-')));

async function waitPool(revision: number) {
  const r = await lbaas.pools.waitConverged('nodes', revision);
  assert.equal(r.converged, true, JSON.stringify(r.services.filter((s) => s.last && !s.last.converged)));
  assert.equal(r.services.length, N);
  return r;
}

test(`setup: a pool of two nodes, ${N} services on two load balancers naming it converge with its members`, async () => {
  const set = await lbaas.pools.set({ name: 'nodes', servers: [{ name: 'node-1', address: '10.0.0.11' }, { name: 'node-2', address: '10.0.0.12' }] });
  assert.deepEqual({ revision: set.revision, changed: set.changed, added: set.added }, { revision: 1, changed: true, added: ['node-1', 'node-2'] });
  await Promise.all(uids.map((uid) => apply(spec(uid, { serverPool: 'nodes' }))));
  const results = await Promise.all(uids.map((uid) => lbaas.waitConverged(uid, 1)));
  for (const r of results) {
    assert.equal(r.converged, true, r.error);
    assert.deepEqual(r.pool, { name: 'nodes', revision: 1 });
  }
  for (const uid of uids) assert.deepEqual(tagged(uid), expected(uid, ['node-1', 'node-2']));
  const st = await lbaas.pools.status('nodes');
  assert.deepEqual(st.services.map((s) => s.serviceUid), uids);
  const cs = await lbaas.status(uids[0] as string);
  assert.deepEqual(cs.pool, { name: 'nodes', revision: 1, servers: 2 });
});

test(`adding a node makes exactly ports x load balancers new Server objects per service (${PORTS.length * 2 * N}) and nothing else`, async () => {
  const before = serverObjects();
  stack.sim.resetStats();
  const r = await lbaas.pools.add('nodes', [{ name: 'node-3', address: '10.0.0.13' }]);
  assert.deepEqual({ revision: r.revision, added: r.added, services: r.services }, { revision: 2, added: ['node-3'], services: N });
  await waitPool(2);
  const creates = PORTS.length * lbs.length * N;
  assert.deepEqual(writeRequests(stack.sim.stats()), { 'POST /api/LBaaS/v1/server.json': creates, 'POST /api/core/v1/resource.json/{id}/tags/{tag}': creates });
  for (const uid of uids) assert.deepEqual(tagged(uid), expected(uid, ['node-1', 'node-2', 'node-3']));
  const now = serverObjects();
  for (const [id, o] of before) assert.deepEqual(now.get(id), o, 'every Server that was there is untouched');
  assert.equal(serversNamed('node-3').length, creates);
});

test('adding the same node with the same address again is a no-op: no new revision, no Engine request that writes', async () => {
  stack.sim.resetStats();
  const r = await lbaas.pools.add('nodes', [{ name: 'node-3', address: '10.0.0.13' }]);
  assert.deepEqual({ revision: r.revision, changed: r.changed }, { revision: 2, changed: false });
  assert.equal((await lbaas.pools.status('nodes')).revision, 2);
  assert.deepEqual(writeRequests(stack.sim.stats()), {});
});

test("an address change replaces only that node's Servers", async () => {
  const others = [...serverObjects()].filter(([id]) => !serversNamed('node-3').some((o) => o.identifier === id));
  stack.sim.resetStats();
  const r = await lbaas.pools.add('nodes', [{ name: 'node-3', address: '10.0.0.23' }]);
  assert.deepEqual({ revision: r.revision, readdressed: r.readdressed }, { revision: 3, readdressed: ['node-3'] });
  await waitPool(3);
  const n = PORTS.length * lbs.length * N;
  assert.deepEqual(writeRequests(stack.sim.stats()), {
    'DELETE /api/LBaaS/v1/server.json/{id}': n,
    'POST /api/LBaaS/v1/server.json': n,
    'POST /api/core/v1/resource.json/{id}/tags/{tag}': n,
  });
  const now = serverObjects();
  for (const [id, o] of others) assert.deepEqual(now.get(id), o);
  assert.deepEqual([...new Set(serversNamed('node-3').map((o) => (o.fields as Record<string, unknown>).ip))], ['10.0.0.23']);
});

test('removing a node deletes exactly its Server objects', async () => {
  stack.sim.resetStats();
  const r = await lbaas.pools.remove('nodes', ['node-3', 'not-a-member']);
  assert.deepEqual({ revision: r.revision, removed: r.removed }, { revision: 4, removed: ['node-3'] });
  await waitPool(4);
  assert.deepEqual(writeRequests(stack.sim.stats()), { 'DELETE /api/LBaaS/v1/server.json/{id}': PORTS.length * lbs.length * N });
  for (const uid of uids) assert.deepEqual(tagged(uid), expected(uid, ['node-1', 'node-2']));
});

test('a service that starts using the pool while a change is being delivered ends on the latest revision', async () => {
  const uid = 'pool-late';
  // Applied right after the change: either the delivery round lists it, or it reads the pool after visibility shows it
  // (activities/pools.ts); both end on the change.
  const r = await lbaas.pools.add('nodes', [{ name: 'node-9', address: '10.0.0.19' }]);
  const { revision } = await apply(spec(uid, { serverPool: 'nodes' }));
  await until(async () => {
    const s = await lbaas.status(uid);
    return s.lastPass?.poolRevision === r.revision && s.lastPass.converged && s.phase === 'Converged';
  }, 60_000);
  assert.ok(revision >= 1);
  const members = (await lbaas.pools.status('nodes')).servers.map((m) => m.name);
  assert.ok(members.includes('node-9'));
  assert.deepEqual(tagged(uid), expected(uid, members));
  // Its own state says where it is: the pool's status reads it from visibility.
  await until(async () => (await lbaas.pools.status('nodes')).services.find((x) => x.serviceUid === uid)?.convergedRevision === r.revision);
  await lbaas.delete(uid);
  await waitPool(r.revision);
});

test('a service switched from inline servers to an equal pool makes 0 writes', async () => {
  const members = (await lbaas.pools.status('nodes')).servers;
  const uid = 'pool-switch';
  const { revision } = await apply(spec(uid, { servers: [...members].reverse() }));
  assert.equal((await lbaas.waitConverged(uid, revision)).converged, true);
  stack.sim.resetStats();
  const r2 = await apply(spec(uid, { serverPool: 'nodes' }));
  const pass = await lbaas.waitConverged(uid, r2.revision);
  assert.equal(pass.converged, true, pass.error);
  assert.deepEqual(pass.pool?.name, 'nodes');
  assert.deepEqual(writeRequests(stack.sim.stats()), {});
  // And back to inline servers: it unsubscribes, the pool no longer lists it.
  const r3 = await apply(spec(uid, { servers: members }));
  assert.equal((await lbaas.waitConverged(uid, r3.revision)).converged, true);
  await until(async () => !(await lbaas.pools.status('nodes')).services.some((s) => s.serviceUid === uid));
  assert.deepEqual(writeRequests(stack.sim.stats()), {});
  await lbaas.delete(uid);
});

test('a pool change never touches services that do not reference it', async () => {
  await lbaas.pools.set({ name: 'other', servers: [{ name: 'x-1', address: '10.9.0.1' }] });
  const uid = 'pool-other';
  const { revision } = await apply(spec(uid, { serverPool: 'other' }));
  assert.equal((await lbaas.waitConverged(uid, revision)).converged, true);
  const passesBefore = (await lbaas.status(uid)).lastPass?.pass;
  const r = await lbaas.pools.add('nodes', [{ name: 'node-6', address: '10.0.0.16' }]);
  await waitPool(r.revision);
  assert.equal((await lbaas.status(uid)).lastPass?.pass, passesBefore, 'no pass ran for the service of the other pool');
  assert.deepEqual(tagged(uid), expected(uid, ['x-1']));
});

test('an empty pool means no Server objects: Backends, Frontends and Binds stay', async () => {
  const r = await lbaas.pools.set({ name: 'other', servers: [] });
  const w = await lbaas.pools.waitConverged('other', r.revision);
  assert.equal(w.converged, true);
  assert.deepEqual(tagged('pool-other'), expected('pool-other', []));
  const st = await lbaas.status('pool-other');
  assert.equal(st.phase, 'Converged');
});

test('applyAccepted told the pool is known sends no check of it: a pool gone since fails the revision naming it, and nothing is written', async () => {
  const raw = spec('pool-known-missing', { serverPool: 'no-such-pool' });
  const r = validateSpec(raw);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  await assert.rejects(lbaas.applyAccepted(raw, r.spec), (err) => err instanceof PoolNotFoundError);
  stack.sim.resetStats();
  const applied = await lbaas.applyAccepted(raw, r.spec, { poolKnown: true });
  const { result } = await applied.converged();
  assert.equal(result.converged, false);
  assert.equal(result.error, 'serverPool no-such-pool: no such server pool (create it with: lbaas pool set -f FILE)');
  assert.deepEqual(writeRequests(stack.sim.stats()), {});
  assert.deepEqual(tagged('pool-known-missing'), []);
  await lbaas.delete('pool-known-missing');
});

async function until(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 200));
  }
}
