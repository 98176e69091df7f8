import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { EngineNotFoundError, EngineProtocolError, EngineValidationError } from '../../activities/engine';
import { calculatedVip } from '../../activities/discover-vip';
import { firstFree } from '../../activities/service-vip';
import { harness } from '../helpers/engine-mock';

const PREFIX_ID = 'a'.repeat(32);
const ADDRESS_ID = 'c'.repeat(32);
/** A prefix as go-anxcloud's `prefix.Info` reads it, with fields we do not read. */
const PREFIX = { identifier: PREFIX_ID, name: '198.51.100.0/28', version: 4, netmask: 28, role_text: 'Default', locations: [], vlans: [], type: 0 };
const ADDRESS = { identifier: ADDRESS_ID, name: '198.51.100.9', version: 4, prefix: PREFIX_ID, vlan: '', rdns_name: '', status: 'Active' };

/** The client's IPAM v1 reads (docs/engine-api.md#ipam-prefixes-and-addresses). */
describe('EngineClient reads IPAM prefixes and addresses', () => {
  test('getPrefix sends GET /api/ipam/v1/prefix.json/<id> and returns the identifier and CIDR, dropping other fields', async () => {
    const h = harness();
    h.reply({ status: 200, body: PREFIX });
    assert.deepEqual(await h.client.getPrefix(PREFIX_ID), { identifier: PREFIX_ID, name: '198.51.100.0/28' });
    assert.equal(h.seen[0]?.method, 'GET');
    assert.equal(h.seen[0]?.path, `/api/ipam/v1/prefix.json/${PREFIX_ID}`);
    await h.done();
  });

  test('getAddress sends GET /api/ipam/v1/address.json/<id> and returns the address and its prefix identifier; a null prefix reads as ""', async () => {
    const h = harness();
    h.reply({ status: 200, body: ADDRESS });
    h.reply({ status: 200, body: { ...ADDRESS, prefix: null } });
    assert.deepEqual(await h.client.getAddress(ADDRESS_ID), { identifier: ADDRESS_ID, name: '198.51.100.9', prefix: PREFIX_ID });
    assert.deepEqual(await h.client.getAddress(ADDRESS_ID), { identifier: ADDRESS_ID, name: '198.51.100.9', prefix: '' });
    assert.equal(h.seen[0]?.path, `/api/ipam/v1/address.json/${ADDRESS_ID}`);
    await h.done();
  });

  test('a prefix whose name is not CIDR and an address whose name is not an IP are EngineProtocolError naming the object', async () => {
    const h = harness();
    h.reply({ status: 200, body: { ...PREFIX, name: 'office network' } });
    h.reply({ status: 200, body: { ...ADDRESS, name: '198.51.100.300' } });
    await assert.rejects(h.client.getPrefix(PREFIX_ID), (err: unknown) => err instanceof EngineProtocolError && /prefix/.test(err.message) && /CIDR/.test(err.message));
    await assert.rejects(h.client.getAddress(ADDRESS_ID), (err: unknown) => err instanceof EngineProtocolError && /address/.test(err.message) && /not an IP address/.test(err.message));
    await h.done();
  });

  test('404 is EngineNotFoundError naming the request path', async () => {
    const h = harness();
    h.reply({ status: 404, body: { error: { code: 404, message: 'Prefix not found.' } } });
    await assert.rejects(h.client.getPrefix(PREFIX_ID), (err: unknown) => err instanceof EngineNotFoundError && err.message.includes(`GET /api/ipam/v1/prefix.json/${PREFIX_ID}`));
    await h.done();
  });
});

const summary = (i: number, name: string, description = '') => ({ identifier: i.toString(16).padStart(32, '0'), name, description_customer: description, role_text: 'Default', rdns_name: '' });
const addressPage = (n: number, totalPages: number, items: unknown[]) => ({ state: 'success', messages: [], data: { page: n, total_pages: totalPages, total_items: items.length, limit: 100, data: items } });

/** The client's IPAM address writes and the filtered list a Service's VIP needs (go-anxcloud's ipam address API). */
describe('EngineClient reserves, lists and releases IPAM addresses', () => {
  test('listPrefixAddresses sends GET address/filtered.json?prefix=<id> page by page until total_pages, each address once, with its description ("" when null)', async () => {
    const h = harness();
    h.reply({ status: 200, body: addressPage(1, 2, [summary(1, '198.51.100.66', 'a customer VM'), summary(2, '198.51.100.67', 'lbaas-kube-vip=u1')]) });
    h.reply({ status: 200, body: addressPage(2, 2, [summary(2, '198.51.100.67', 'lbaas-kube-vip=u1'), { ...summary(3, '2001:db8::2'), description_customer: null }]) });
    const listed = await h.client.listPrefixAddresses(PREFIX_ID);
    assert.deepEqual(listed, [
      { identifier: summary(1, '').identifier, name: '198.51.100.66', description_customer: 'a customer VM' },
      { identifier: summary(2, '').identifier, name: '198.51.100.67', description_customer: 'lbaas-kube-vip=u1' },
      { identifier: summary(3, '').identifier, name: '2001:db8::2', description_customer: '' },
    ]);
    const urls = h.seen.map((r) => new URL(r.path, 'http://x'));
    assert.deepEqual(
      urls.map((u) => [u.pathname, u.searchParams.get('prefix'), u.searchParams.get('page'), u.searchParams.get('limit')]),
      [
        ['/api/ipam/v1/address/filtered.json', PREFIX_ID, '1', '100'],
        ['/api/ipam/v1/address/filtered.json', PREFIX_ID, '2', '100'],
      ],
    );
    await h.done();
  });

  test('listPrefixAddresses stops at an empty page when the Engine sends no total_pages', async () => {
    const h = harness();
    h.reply({ status: 200, body: { data: { data: [summary(1, '198.51.100.66')] } } });
    h.reply({ status: 200, body: { data: { data: [] } } });
    assert.equal((await h.client.listPrefixAddresses(PREFIX_ID)).length, 1);
    assert.equal(h.seen.length, 2);
    await h.done();
  });

  test('createAddress POSTs {prefix, name, description_customer, role: "Default"} to address.json and returns the summary', async () => {
    const h = harness();
    h.reply({ status: 200, body: summary(9, '198.51.100.67', 'lbaas-kube-vip=u1') });
    const created = await h.client.createAddress({ prefix: PREFIX_ID, name: '198.51.100.67', description_customer: 'lbaas-kube-vip=u1' });
    assert.deepEqual(created, { identifier: summary(9, '').identifier, name: '198.51.100.67', description_customer: 'lbaas-kube-vip=u1' });
    assert.equal(h.seen[0]?.method, 'POST');
    assert.equal(h.seen[0]?.path, '/api/ipam/v1/address.json');
    assert.deepEqual(JSON.parse(h.seen[0]?.body ?? 'null'), { prefix: PREFIX_ID, name: '198.51.100.67', description_customer: 'lbaas-kube-vip=u1', role: 'Default' });
    await h.done();
  });

  test('a create refused as taken is EngineValidationError; one whose answer is unreadable still names the created identifier', async () => {
    const h = harness();
    h.reply({ status: 422, body: { error: { code: 422, message: 'Validation failed.', validation: { name: 'Address 198.51.100.67 is already in use.' } } } });
    h.reply({ status: 200, body: { identifier: ADDRESS_ID, name: 'garbled' } });
    await assert.rejects(h.client.createAddress({ prefix: PREFIX_ID, name: '198.51.100.67', description_customer: 'm' }), EngineValidationError);
    await assert.rejects(h.client.createAddress({ prefix: PREFIX_ID, name: '198.51.100.67', description_customer: 'm' }), (err: unknown) => err instanceof EngineProtocolError && err.createdIdentifier === ADDRESS_ID);
    await h.done();
  });

  test('deleteAddress sends DELETE address.json/<id>; a 404 is EngineNotFoundError for the caller to judge', async () => {
    const h = harness();
    h.reply({ status: 200, body: {} });
    h.reply({ status: 404, body: { error: { code: 404, message: 'Address not found.' } } });
    await h.client.deleteAddress(ADDRESS_ID);
    await assert.rejects(h.client.deleteAddress(ADDRESS_ID), EngineNotFoundError);
    assert.deepEqual(h.seen.map((x) => `${x.method} ${x.path}`), [`DELETE /api/ipam/v1/address.json/${ADDRESS_ID}`, `DELETE /api/ipam/v1/address.json/${ADDRESS_ID}`]);
    await h.done();
  });
});

describe('firstFree: the first address of a prefix a VIP may take', () => {
  const v4 = { identifier: PREFIX_ID, cidr: '198.51.100.64/28', family: 4 as const };
  test('skips the network address and the gateway after it: .66 in 198.51.100.64/28', () => {
    assert.equal(firstFree(v4, new Set()), '198.51.100.66');
  });
  test('skips what is taken or reserved', () => {
    assert.equal(firstFree(v4, new Set(['198.51.100.66', '198.51.100.67'])), '198.51.100.68');
  });
  test('never the address below the broadcast address (the calculated VIP) nor the broadcast address: none left when .66-.77 are taken', () => {
    const taken = new Set(Array.from({ length: 12 }, (_, i) => `198.51.100.${66 + i}`));
    assert.equal(firstFree(v4, taken), null);
  });
  test('IPv6: ::2 of a /64, in RFC 5952 text', () => {
    assert.equal(firstFree({ identifier: PREFIX_ID, cidr: '2001:db8:7::/64', family: 6 }, new Set()), '2001:db8:7::2');
  });
  test('a prefix too small for a VIP of its own (/30 and smaller) has none', () => {
    assert.equal(firstFree({ identifier: PREFIX_ID, cidr: '192.0.2.4/30', family: 4 }, new Set()), null);
  });
});

describe('calculatedVip: the address below the broadcast address, as k8s-anexia-ccm computes it', () => {
  const cases: [string, string | null][] = [
    ['198.51.100.0/28', '198.51.100.14'],
    ['10.0.0.0/8', '10.255.255.254'],
    ['192.0.2.64/30', '192.0.2.66'],
    ['192.0.2.5/24', '192.0.2.254'], // host bits in the name do not matter
    ['2001:db8::/64', '2001:db8::ffff:ffff:ffff:fffe'],
    ['2001:db8:1:2::/120', '2001:db8:1:2::fe'],
    ['192.0.2.4/31', null],
    ['192.0.2.4/32', null],
    ['2001:db8::/127', null],
    ['not-a-prefix', null],
  ];
  for (const [cidr, vip] of cases) {
    test(`${cidr} -> ${vip ?? 'none'}`, () => {
      assert.equal(calculatedVip(cidr)?.address ?? null, vip);
    });
  }
});
