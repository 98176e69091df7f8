import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { EngineNotFoundError, EngineProtocolError } from '../../activities/engine';
import { calculatedVip } from '../../activities/discover-vip';
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
