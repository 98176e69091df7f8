/**
 * The import activity's Engine reads against the simulator over HTTP, without Temporal: what one load balancer's
 * inventory holds (tagged and untagged objects, links as identifiers, service tags), and that attempts failing
 * part-way under random 5xx resume from the progress the previous attempt recorded instead of starting over.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { EngineClient } from '../../activities/engine';
import type { Heartbeat } from '../../activities/heartbeat';
import { readLoadBalancer } from '../../activities/import';
import type { LoadBalancerInventory } from '../../domain/import-types';
import { startSimulator, type RunningSimulator } from '../../simulator';
import { seedLoadBalancer } from '../helpers/fixtures';
import { seedOverHttp, seedUpstream } from '../helpers/upstream';

let sim: RunningSimulator;
let engine: EngineClient;
before(async () => {
  sim = await startSimulator({ port: 0, token: 'import-read-token', seed: 11 });
  engine = new EngineClient({ baseUrl: sim.url, token: 'import-read-token' });
});
after(async () => {
  await engine.close();
  await sim.close();
});

const web = { uid: 'read-1', suffix: 'web.x', ports: { http: [80, 30080] as [number, number] }, addresses: ['203.0.113.10', '2001:db8::10'], nodes: [['node-1', '10.0.0.11']] as [string, string][] };
const lines = (inv: LoadBalancerInventory) => inv.objects.map((o) => `${o.kind} ${o.name} [${o.serviceUids.join(',')}] ${o.state}`).sort();

test('an inventory lists every object of the four kinds on the load balancer, with its service tags; nothing is written', async () => {
  const lb = seedLoadBalancer(sim, 'read-lb');
  const other = seedLoadBalancer(sim, 'read-other');
  const ids = await seedUpstream(sim, lb, web);
  await seedUpstream(sim, other, { ...web, uid: 'elsewhere' });
  await seedOverHttp(sim, { kind: 'server', fields: { name: 'stray', ip: '10.0.0.99', port: 1, check: 'enabled', backend: ids['backend http.web.x'] }, state: 'Deployed' });
  sim.resetStats();
  const inv = await readLoadBalancer(engine, lb);
  assert.equal(sim.stats().mutations, 0);
  assert.deepEqual(lines(inv), [
    'backend http.web.x [read-1] Deployed',
    'bind v4.http.web.x [read-1] Deployed',
    'bind v6.http.web.x [read-1] Deployed',
    'frontend http.web.x [read-1] Deployed',
    'server node-1.http.web.x [read-1] Deployed',
    'server stray [] Deployed',
  ]);
  const fe = inv.objects.find((o) => o.kind === 'frontend');
  assert.deepEqual(fe?.fields, { name: 'http.web.x', mode: 'tcp', load_balancer: lb, default_backend: ids['backend http.web.x'] });
  assert.deepEqual(await readLoadBalancer(engine, 'f'.repeat(32)), { loadBalancer: 'f'.repeat(32), found: false, objects: [] });
});

test('under random 5xx, each attempt keeps what it read: the attempts together read each object once', async () => {
  const lb = seedLoadBalancer(sim, 'read-faults');
  const many = { ...web, uid: 'read-2', ports: { a: [1, 30001], b: [2, 30002], c: [3, 30003] } as Record<string, [number, number]>, nodes: [['n1', '10.0.0.1'], ['n2', '10.0.0.2'], ['n3', '10.0.0.3']] as [string, string][] };
  await seedUpstream(sim, lb, many);
  const clean = await readLoadBalancer(engine, lb);
  sim.setFaults({ seed: 5, rates: { serverError: 0.2 } });
  sim.resetStats();
  let previous: unknown;
  let attempts = 0;
  let inv: LoadBalancerInventory | null = null;
  while (inv === null && attempts < 100) {
    attempts++;
    const hb = { previous, record: (d: unknown) => (previous = d) } as unknown as Heartbeat<never>;
    try {
      inv = await readLoadBalancer(engine, lb, hb);
    } catch {
      // The next attempt resumes from `previous`.
    }
  }
  sim.setFaults({});
  assert.ok(inv, `finished within ${attempts} attempts`);
  assert.ok(attempts > 1, 'some attempt failed part-way (the fault rate is high enough)');
  assert.deepEqual(lines(inv), lines(clean));
  // 3 ports x (2 + 2 + 3) = 21 objects, each read by one GET of the object and one of its Core resource that succeeded.
  const requests = sim.stats().requests;
  const ok200 = (route: string) => requests[route] ?? 0;
  const objectGets = ['backend', 'frontend', 'bind', 'server'].reduce((n, k) => n + ok200(`GET /api/LBaaS/v1/${k}.json/{id}`), 0);
  assert.ok(objectGets < 21 * 2, `object GETs ${objectGets}: fewer than two full reads of 21 objects, so attempts did not start over`);
});
