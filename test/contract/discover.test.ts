/**
 * The discovery activity (activities/discover.ts) with the real Engine client against the simulator over HTTP:
 * what k8s-anexia-ccm would find for a cluster, seeded through the admin API.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { EngineClient, EngineServerError } from '../../activities/engine';
import { discoverCluster } from '../../activities/discover';
import { startSimulator, type RunningSimulator } from '../../simulator/index';
import { rawRequest } from '../../simulator/testkit';

const TOKEN = 'test-token';
const INPUT = { clusterName: 'prod', tagPrefix: 'anxkube-ccm-lb' };

let sim: RunningSimulator;
let client: EngineClient;

async function seed(body: Record<string, unknown>): Promise<string> {
  const res = await rawRequest(sim.url, 'POST', '/_sim/objects', { body });
  assert.equal(res.status, 201, res.text);
  return (res.json as { identifier: string }).identifier;
}

before(async () => {
  sim = await startSimulator({ port: 0, token: TOKEN, deployMs: { min: 10, max: 10 }, seed: 3 });
  client = new EngineClient({ baseUrl: sim.url, token: TOKEN });
});
after(async () => {
  await client.close();
  await sim.close();
});
beforeEach(() => sim.reset());

describe('discoverCluster against the simulator', () => {
  test('nothing tagged: no load balancers, no addresses, nothing skipped (the Engine\'s 422 is an empty list)', async () => {
    await seed({ kind: 'loadbalancer', name: 'untagged' });
    assert.deepEqual(await discoverCluster(client, INPUT), {
      clusterName: 'prod',
      loadBalancerTag: 'anxkube-ccm-lb-prod',
      loadBalancers: [],
      externalAddresses: [],
      prefixes: [],
      skipped: [],
    });
  });

  test('load balancers by <prefix>-<cluster>: other clusters\' and other kinds tagged so are left out, the latter reported', async () => {
    const lb1 = await seed({ kind: 'loadbalancer', name: 'lb-1', tags: ['anxkube-ccm-lb-prod'] });
    const lb2 = await seed({ kind: 'loadbalancer', name: 'lb-2', tags: ['anxkube-ccm-lb-prod'] });
    await seed({ kind: 'loadbalancer', name: 'staging', tags: ['anxkube-ccm-lb-staging'] });
    const stray = await seed({ kind: 'backend', name: 'stray', fields: { load_balancer: lb1 }, tags: ['anxkube-ccm-lb-prod'] });
    const found = await discoverCluster(client, INPUT);
    assert.deepEqual([...found.loadBalancers].sort(), [lb1, lb2].sort());
    assert.equal(found.skipped.length, 1);
    assert.equal(found.skipped[0]?.identifier, stray);
    assert.match(found.skipped[0]?.reason ?? '', /^not a load balancer \(GET \/api\/LBaaS\/v1\/loadbalancer\.json\/[0-9a-f]{32}: 404/);
    const custom = await discoverCluster(client, { clusterName: 'staging', tagPrefix: 'anxkube-ccm-lb' });
    assert.equal(custom.loadBalancers.length, 1);
  });

  test('external addresses: the tagged VIP of a prefix, else the calculated one; one per family, from the first prefix of each', async () => {
    const v4 = await seed({ kind: 'prefix', name: '198.51.100.0/28', tags: ['kubernetes-lb-prefix-prod'] });
    const v6 = await seed({ kind: 'prefix', name: '2001:db8:1::/64', tags: ['kubernetes-lb-prefix-prod'] });
    // A VIP of another prefix (not the cluster's) is ignored; the one of the IPv4 prefix is taken.
    const other = await seed({ kind: 'prefix', name: '203.0.113.0/24' });
    await seed({ kind: 'address', name: '203.0.113.7', fields: { prefix: other }, tags: ['kubernetes-lb-vip-prod'] });
    await seed({ kind: 'address', name: '198.51.100.5', fields: { prefix: v4 }, tags: ['kubernetes-lb-vip-prod'] });
    const found = await discoverCluster(client, INPUT);
    assert.deepEqual(found.externalAddresses, ['198.51.100.5', '2001:db8:1:0:ffff:ffff:ffff:fffe']);
    assert.deepEqual(
      [...found.prefixes].sort((a, b) => a.family - b.family),
      [
        { identifier: v4, cidr: '198.51.100.0/28', family: 4, vip: '198.51.100.5', vipSource: 'tagged' },
        { identifier: v6, cidr: '2001:db8:1::/64', family: 6, vip: '2001:db8:1:0:ffff:ffff:ffff:fffe', vipSource: 'calculated' },
      ],
    );
    assert.deepEqual(found.skipped, []);
  });

  test('a resource tagged as prefix that is not one, and a /32 prefix without tagged VIP, are skipped with the reason', async () => {
    const lb = await seed({ kind: 'loadbalancer', name: 'lb', tags: ['kubernetes-lb-prefix-prod'] });
    const tiny = await seed({ kind: 'prefix', name: '192.0.2.4/32', tags: ['kubernetes-lb-prefix-prod'] });
    const found = await discoverCluster(client, INPUT);
    assert.deepEqual(found.externalAddresses, []);
    const reasons = Object.fromEntries(found.skipped.map((s) => [s.identifier, s.reason]));
    assert.match(reasons[lb] ?? '', /^not an IPAM prefix \(GET \/api\/ipam\/v1\/prefix\.json\/[0-9a-f]{32}: 404/);
    assert.equal(reasons[tiny], 'prefix 192.0.2.4/32 has no address below its broadcast address and no tagged VIP');
  });

  test('an Engine failure (5xx) fails the discovery instead of reporting less than is there', async () => {
    await seed({ kind: 'loadbalancer', name: 'lb', tags: ['anxkube-ccm-lb-prod'] });
    const res = await rawRequest(sim.url, 'PUT', '/_sim/faults', { body: { rates: { serverError: 1 }, routes: '^GET /api/LBaaS/v1/loadbalancer\\.json/' } });
    assert.equal(res.status, 200, res.text);
    await assert.rejects(discoverCluster(client, INPUT), EngineServerError);
  });
});
