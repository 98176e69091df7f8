/**
 * Contract tests of the simulator's IPAM v1 reads (docs/engine-api.md#ipam-prefixes-and-addresses) over raw HTTP:
 * prefixes and addresses seeded through the admin API, found by tag through Core v1, read in go-anxcloud's shapes.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type RunningSimulator, startSimulator } from '../../simulator/index';
import { rawRequest } from '../../simulator/testkit';

let sim: RunningSimulator;
const J = (r: { json: unknown }): Record<string, unknown> => r.json as Record<string, unknown>;

async function seed(body: Record<string, unknown>): Promise<string> {
  const res = await rawRequest(sim.url, 'POST', '/_sim/objects', { body });
  assert.equal(res.status, 201, res.text);
  return (res.json as { identifier: string }).identifier;
}

before(async () => {
  sim = await startSimulator({ port: 0, seed: 7, deployMs: { min: 10, max: 10 } });
});
after(async () => sim.close());
beforeEach(() => sim.reset());

describe('IPAM v1 prefixes and addresses', () => {
  test('GET prefix.json/<id> answers the seeded CIDR as name with its version and netmask (IPv4 and IPv6)', async () => {
    const v4 = await seed({ kind: 'prefix', name: '198.51.100.0/28' });
    const v6 = await seed({ kind: 'prefix', name: '2001:db8:1::/64' });
    const a = await rawRequest(sim.url, 'GET', `/api/ipam/v1/prefix.json/${v4}`);
    assert.equal(a.status, 200);
    assert.deepEqual(
      { identifier: J(a).identifier, name: J(a).name, version: J(a).version, netmask: J(a).netmask },
      { identifier: v4, name: '198.51.100.0/28', version: 4, netmask: 28 },
    );
    const b = await rawRequest(sim.url, 'GET', `/api/ipam/v1/prefix.json/${v6}`);
    assert.deepEqual({ name: J(b).name, version: J(b).version, netmask: J(b).netmask }, { name: '2001:db8:1::/64', version: 6, netmask: 64 });
  });

  test('GET address.json/<id> answers the address as name and its prefix as a bare identifier', async () => {
    const p = await seed({ kind: 'prefix', name: '198.51.100.0/28' });
    const addr = await seed({ kind: 'address', name: '198.51.100.9', fields: { prefix: p } });
    const res = await rawRequest(sim.url, 'GET', `/api/ipam/v1/address.json/${addr}`);
    assert.equal(res.status, 200);
    assert.deepEqual({ identifier: J(res).identifier, name: J(res).name, version: J(res).version, prefix: J(res).prefix }, { identifier: addr, name: '198.51.100.9', version: 4, prefix: p });
  });

  test('an unknown identifier, or one of another kind, answers 404; writes are 405', async () => {
    const p = await seed({ kind: 'prefix', name: '198.51.100.0/28' });
    const lb = await seed({ kind: 'loadbalancer', name: 'lb' });
    assert.equal((await rawRequest(sim.url, 'GET', `/api/ipam/v1/address.json/${p}`)).status, 404);
    assert.equal((await rawRequest(sim.url, 'GET', `/api/ipam/v1/prefix.json/${lb}`)).status, 404);
    assert.equal((await rawRequest(sim.url, 'GET', `/api/ipam/v1/prefix.json/${'0'.repeat(32)}`)).status, 404);
    assert.equal((await rawRequest(sim.url, 'DELETE', `/api/ipam/v1/prefix.json/${p}`)).status, 405);
    // IPAM kinds are not LBaaS collections.
    assert.equal((await rawRequest(sim.url, 'GET', '/api/LBaaS/v1/prefix.json')).status, 404);
  });

  test('seeding refuses a prefix that is not CIDR, an address that is not an IP, and an address without a prefix (422 naming the field), and stores nothing', async () => {
    for (const body of [
      { kind: 'prefix', name: '198.51.100.0' },
      { kind: 'prefix', name: '198.51.100.0/33' },
      { kind: 'address', name: 'not-an-ip', fields: { prefix: '0'.repeat(32) } },
    ]) {
      const res = await rawRequest(sim.url, 'POST', '/_sim/objects', { body });
      assert.equal(res.status, 422, JSON.stringify(body));
      assert.ok('name' in (J(res).error as { validation: Record<string, string> }).validation, res.text);
    }
    const noPrefix = await rawRequest(sim.url, 'POST', '/_sim/objects', { body: { kind: 'address', name: '198.51.100.9' } });
    assert.equal(noPrefix.status, 422);
    assert.ok('prefix' in (J(noPrefix).error as { validation: Record<string, string> }).validation, noPrefix.text);
    const all = await rawRequest(sim.url, 'GET', '/_sim/objects');
    assert.deepEqual((all.json as { objects: unknown[] }).objects, []);
  });

  test('prefixes and addresses carry Core tags: listed by tag_name with their own resource type', async () => {
    const tag = 'kubernetes-lb-prefix-prod';
    const p = await seed({ kind: 'prefix', name: '198.51.100.0/28', tags: [tag] });
    const list = await rawRequest(sim.url, 'GET', `/api/core/v1/resource.json?tag_name=${tag}`);
    assert.equal(list.status, 200);
    assert.deepEqual((list.json as { data: unknown[] }).data, [{ identifier: p, name: '198.51.100.0/28' }]);
    const res = await rawRequest(sim.url, 'GET', `/api/core/v1/resource.json/${p}`);
    assert.equal((J(res).resource_type as { name: string }).name, 'Prefix');
  });
});
