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

  test('an unknown identifier, or one of another kind, answers 404; prefix writes are 405', async () => {
    const p = await seed({ kind: 'prefix', name: '198.51.100.0/28' });
    const lb = await seed({ kind: 'loadbalancer', name: 'lb' });
    assert.equal((await rawRequest(sim.url, 'GET', `/api/ipam/v1/address.json/${p}`)).status, 404);
    assert.equal((await rawRequest(sim.url, 'GET', `/api/ipam/v1/prefix.json/${lb}`)).status, 404);
    assert.equal((await rawRequest(sim.url, 'GET', `/api/ipam/v1/prefix.json/${'0'.repeat(32)}`)).status, 404);
    assert.equal((await rawRequest(sim.url, 'DELETE', `/api/ipam/v1/prefix.json/${p}`)).status, 405);
    assert.equal((await rawRequest(sim.url, 'DELETE', `/api/ipam/v1/address.json/${p}`)).status, 404);
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

describe('IPAM v1 address create, filtered list and delete (go-anxcloud ipam address Create, GetFiltered, Delete)', () => {
  const create = (body: Record<string, unknown>) => rawRequest(sim.url, 'POST', '/api/ipam/v1/address.json', { body });

  test('POST address.json creates an address of the prefix and answers its summary with the description; GET reads it with its prefix', async () => {
    const p = await seed({ kind: 'prefix', name: '198.51.100.64/28' });
    const res = await create({ prefix: p, name: '198.51.100.67', description_customer: 'lbaas-kube-vip=u1', role: 'Default' });
    assert.equal(res.status, 200, res.text);
    assert.match(String(J(res).identifier), /^[0-9a-f]{32}$/);
    assert.deepEqual({ ...J(res), identifier: '' }, { identifier: '', name: '198.51.100.67', description_customer: 'lbaas-kube-vip=u1', role_text: 'Default', rdns_name: '' });
    const got = await rawRequest(sim.url, 'GET', `/api/ipam/v1/address.json/${String(J(res).identifier)}`);
    assert.deepEqual({ name: J(got).name, prefix: J(got).prefix, description_customer: J(got).description_customer, version: J(got).version }, { name: '198.51.100.67', prefix: p, description_customer: 'lbaas-kube-vip=u1', version: 4 });
    const res6 = await create({ prefix: await seed({ kind: 'prefix', name: '2001:db8:7::/64' }), name: '2001:db8:7::2' });
    assert.equal(res6.status, 200, res6.text);
    assert.equal(J(res6).description_customer, '');
  });

  test('a taken address, one outside the prefix, an unknown prefix or a name that is no IP is 422 naming the field, and nothing is created', async () => {
    const p = await seed({ kind: 'prefix', name: '198.51.100.64/28' });
    await seed({ kind: 'address', name: '198.51.100.66', fields: { prefix: p } });
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ prefix: p, name: '198.51.100.66' }, 'name', /already in use/],
      [{ prefix: p, name: '198.51.100.80' }, 'name', /not inside prefix 198\.51\.100\.64\/28/],
      [{ prefix: p, name: '2001:db8::1' }, 'name', /not inside prefix/],
      [{ prefix: p, name: 'ten' }, 'name', /IPv4 or IPv6/],
      [{ prefix: 'f'.repeat(32), name: '198.51.100.70' }, 'prefix', /does not exist/],
      [{ name: '198.51.100.70' }, 'prefix', /required/],
    ];
    for (const [body, field, message] of cases) {
      const res = await create(body);
      assert.equal(res.status, 422, JSON.stringify(body));
      const validation = (J(res).error as { validation: Record<string, string> }).validation;
      assert.match(validation[field] ?? '', message, `${JSON.stringify(body)}: ${res.text}`);
    }
    const all = await rawRequest(sim.url, 'GET', '/_sim/objects?kind=address');
    assert.equal((all.json as { objects: unknown[] }).objects.length, 1);
  });

  test('GET address/filtered.json?prefix=<id> lists that prefix\'s addresses with their descriptions, paged in the LBaaS envelope', async () => {
    const p = await seed({ kind: 'prefix', name: '198.51.100.64/28' });
    const other = await seed({ kind: 'prefix', name: '198.51.100.0/28' });
    await seed({ kind: 'address', name: '198.51.100.1', fields: { prefix: other } });
    for (const n of [66, 67, 68]) assert.equal((await create({ prefix: p, name: `198.51.100.${n}`, description_customer: `d${n}` })).status, 200);
    const first = await rawRequest(sim.url, 'GET', `/api/ipam/v1/address/filtered.json?prefix=${p}&page=1&limit=2`);
    assert.equal(first.status, 200);
    assert.deepEqual({ ...J(first), data: { ...(J(first).data as Record<string, unknown>), data: null } }, { state: 'success', messages: [], data: { page: 1, total_pages: 2, total_items: 3, limit: 2, data: null } });
    const names = (r: typeof first) => ((J(r).data as { data: { name: string; description_customer: string }[] }).data).map((a) => `${a.name} ${a.description_customer}`);
    assert.deepEqual(names(first), ['198.51.100.66 d66', '198.51.100.67 d67']);
    assert.deepEqual(names(await rawRequest(sim.url, 'GET', `/api/ipam/v1/address/filtered.json?prefix=${p}&page=2&limit=2`)), ['198.51.100.68 d68']);
    assert.deepEqual(names(await rawRequest(sim.url, 'GET', `/api/ipam/v1/address/filtered.json?prefix=${p}&page=3&limit=2`)), []);
    assert.deepEqual(names(await rawRequest(sim.url, 'GET', `/api/ipam/v1/address/filtered.json?prefix=${'f'.repeat(32)}`)), []);
  });

  test('DELETE address.json/<id> releases the address: 200, then 404; its Core tags go with it and the address can be created again', async () => {
    const p = await seed({ kind: 'prefix', name: '198.51.100.64/28' });
    const made = await create({ prefix: p, name: '198.51.100.67' });
    const id = String(J(made).identifier);
    assert.equal((await rawRequest(sim.url, 'POST', `/api/core/v1/resource.json/${id}/tags/lbaas-kube-vip=u1`, { body: '""' })).status, 200);
    assert.equal((await rawRequest(sim.url, 'DELETE', `/api/ipam/v1/address.json/${id}`)).status, 200);
    assert.equal((await rawRequest(sim.url, 'GET', `/api/ipam/v1/address.json/${id}`)).status, 404);
    assert.equal((await rawRequest(sim.url, 'DELETE', `/api/ipam/v1/address.json/${id}`)).status, 404);
    assert.equal((await rawRequest(sim.url, 'GET', '/api/core/v1/resource.json?tag_name=lbaas-kube-vip=u1')).status, 422);
    assert.equal((await create({ prefix: p, name: '198.51.100.67' })).status, 200);
    const stats = await rawRequest(sim.url, 'GET', '/_sim/stats');
    const requests = (stats.json as { requests: Record<string, number> }).requests;
    assert.equal(requests['POST /api/ipam/v1/address.json'], 2);
    assert.equal(requests['DELETE /api/ipam/v1/address.json/{id}'], 2);
  });
});
