/**
 * activities/service-vip.ts request by request against a mock Engine: the order that makes a reservation idempotent
 * (tag, then description, then create), a create refused as taken picking the next address, and an unreadable create
 * answer tagged by the identifier it carried.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allocateServiceVips, vipTag } from '../../activities/service-vip';
import { harness } from '../helpers/engine-mock';

const PREFIX_ID = 'a'.repeat(32);
const NEW_ID = 'b'.repeat(32);
const OTHER_ID = 'c'.repeat(32);
const INPUT = { serviceUid: 'u1', prefixes: [{ identifier: PREFIX_ID, cidr: '198.51.100.64/28', family: 4 as const }], reserved: [] };
const NOT_TAGGED = { status: 422, body: { error: { code: 422, message: 'No resource is tagged.' } } };
const list = (items: unknown[]) => ({ status: 200, body: { state: 'success', messages: [], data: { page: 1, total_pages: 1, total_items: items.length, limit: 100, data: items } } });

test('a create refused as taken (another client took the address after our list) lists again and creates the next free one', async () => {
  const h = harness();
  h.reply(NOT_TAGGED);
  h.reply(list([]));
  h.reply({ status: 422, body: { error: { code: 422, message: 'Validation failed.', validation: { name: 'Address 198.51.100.66 is already in use.' } } } });
  h.reply(list([{ identifier: OTHER_ID, name: '198.51.100.66', description_customer: 'someone else' }]));
  h.reply({ status: 200, body: { identifier: NEW_ID, name: '198.51.100.67', description_customer: vipTag('u1') } });
  h.reply({ status: 200, body: {} });
  const r = await allocateServiceVips(h.client, INPUT);
  assert.deepEqual(r.vips, [{ identifier: NEW_ID, address: '198.51.100.67', family: 4, prefix: PREFIX_ID, how: 'reserved' }]);
  assert.deepEqual(
    h.seen.map((s) => `${s.method} ${s.path.split('?')[0]}${s.method === 'POST' && s.body?.startsWith('{') ? ` ${(JSON.parse(s.body) as { name: string }).name}` : ''}`),
    [
      'GET /api/core/v1/resource.json',
      'GET /api/ipam/v1/address/filtered.json',
      'POST /api/ipam/v1/address.json 198.51.100.66',
      'GET /api/ipam/v1/address/filtered.json',
      'POST /api/ipam/v1/address.json 198.51.100.67',
      `POST /api/core/v1/resource.json/${NEW_ID}/tags/lbaas-kube-vip=u1`,
    ],
  );
  await h.done();
});

test('an address of the prefix already described with the marker is tagged and adopted, never created again', async () => {
  const h = harness();
  h.reply(NOT_TAGGED);
  h.reply(list([{ identifier: NEW_ID, name: '198.51.100.66', description_customer: vipTag('u1') }]));
  h.reply({ status: 200, body: {} });
  const r = await allocateServiceVips(h.client, INPUT);
  assert.deepEqual(r.vips.map((v) => [v.identifier, v.address, v.how]), [[NEW_ID, '198.51.100.66', 'adopted']]);
  assert.equal(h.seen.filter((s) => s.method === 'POST' && s.path === '/api/ipam/v1/address.json').length, 0);
  await h.done();
});

test('a create whose answer cannot be read is tagged by the identifier it carried and returned as the address asked for', async () => {
  const h = harness();
  h.reply(NOT_TAGGED);
  h.reply(list([]));
  h.reply({ status: 200, body: { identifier: NEW_ID, name: 'garbled' } });
  h.reply({ status: 200, body: {} });
  const r = await allocateServiceVips(h.client, INPUT);
  assert.deepEqual(r.vips, [{ identifier: NEW_ID, address: '198.51.100.66', family: 4, prefix: PREFIX_ID, how: 'reserved' }]);
  assert.equal(h.seen.at(-1)?.path, `/api/core/v1/resource.json/${NEW_ID}/tags/lbaas-kube-vip=u1`);
  await h.done();
});

test('a tag answered 422 because the address carries it already (a retry after a lost tag answer) counts as tagged', async () => {
  const h = harness();
  h.reply(NOT_TAGGED);
  h.reply(list([{ identifier: NEW_ID, name: '198.51.100.66', description_customer: vipTag('u1') }]));
  h.reply({ status: 422, body: { error: { code: 422, message: 'Tag already assigned.' } } });
  h.reply({ status: 200, body: { identifier: NEW_ID, name: '198.51.100.66', resource_type: { identifier: 'x', name: 'Address' }, tags: [{ identifier: 't', name: vipTag('u1') }] } });
  const r = await allocateServiceVips(h.client, INPUT);
  assert.deepEqual(r.vips.map((v) => v.how), ['adopted']);
  await h.done();
});
