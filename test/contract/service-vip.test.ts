/**
 * A Service's own VIP (activities/service-vip.ts) with the real Engine client against the simulator over HTTP: a
 * reservation adopted by tag, a lost create answer or a failed tag found again by the address's description (one
 * address, never two), two Services racing for one free address, and a release that deletes only what carries the
 * Service's tag.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { EngineClient, EngineError, EngineServerError } from '../../activities/engine';
import { allocateServiceVips, releaseServiceVips, vipTag } from '../../activities/service-vip';
import { startSimulator, type RunningSimulator } from '../../simulator/index';
import { rawRequest } from '../../simulator/testkit';

const TOKEN = 'test-token';
const CIDR = '198.51.100.64/28';

let sim: RunningSimulator;
let client: EngineClient;
let prefix: string;

async function seed(body: Record<string, unknown>): Promise<string> {
  const res = await rawRequest(sim.url, 'POST', '/_sim/objects', { body });
  assert.equal(res.status, 201, res.text);
  return (res.json as { identifier: string }).identifier;
}

async function faults(body: Record<string, unknown>): Promise<void> {
  const res = await rawRequest(sim.url, 'PUT', '/_sim/faults', { body });
  assert.equal(res.status, 200, res.text);
}

/** The prefix's addresses as "address description [tags]" lines. */
const addresses = () =>
  sim
    .objects()
    .filter((o) => o.kind === 'address' && o.fields.prefix === prefix)
    .map((o) => `${o.name} ${String(o.fields.description_customer)} [${o.tags.join(',')}]`)
    .sort();

const input = (serviceUid: string, reserved: string[] = []) => ({ serviceUid, prefixes: [{ identifier: prefix, cidr: CIDR, family: 4 as const }], reserved });
const creates = () => sim.stats().requests['POST /api/ipam/v1/address.json'] ?? 0;

before(async () => {
  sim = await startSimulator({ port: 0, token: TOKEN, deployMs: { min: 10, max: 10 }, seed: 5 });
  client = new EngineClient({ baseUrl: sim.url, token: TOKEN });
});
after(async () => {
  await client.close();
  await sim.close();
});
beforeEach(async () => {
  sim.reset();
  prefix = await seed({ kind: 'prefix', name: CIDR, tags: ['kubernetes-lb-prefix-prod'] });
});

describe('allocateServiceVips against the simulator', () => {
  test('reserves the first free address (not the reserved ones), describes and tags it with the uid; the next call adopts it with no write', async () => {
    const first = await allocateServiceVips(client, input('u1', ['198.51.100.66']));
    assert.deepEqual(
      first.vips.map((v) => [v.address, v.family, v.prefix, v.how]),
      [['198.51.100.67', 4, prefix, 'reserved']],
    );
    assert.deepEqual(addresses(), [`198.51.100.67 ${vipTag('u1')} [${vipTag('u1')}]`]);
    sim.resetStats();
    const again = await allocateServiceVips(client, input('u1', ['198.51.100.66']));
    assert.deepEqual(again.vips, first.vips.map((v) => ({ ...v, how: 'adopted' })));
    assert.equal(sim.stats().mutations, 0);
  });

  test('a create whose answer is lost (applied, then 502) is found again by its description on the retry and tagged: one address, one create', async () => {
    await faults({ rates: { dropAfterCommit: 1 }, routes: '^POST /api/ipam/v1/address\\.json$' });
    // A 502 or a reset connection: either way a retryable failure whose create was applied.
    await assert.rejects(allocateServiceVips(client, input('u1')), (err: unknown) => err instanceof EngineError && err.retryable);
    assert.deepEqual(addresses(), [`198.51.100.66 ${vipTag('u1')} []`], 'created, not yet tagged');
    await faults({});
    const retried = await allocateServiceVips(client, input('u1'));
    assert.deepEqual(retried.vips.map((v) => [v.address, v.how]), [['198.51.100.66', 'adopted']]);
    assert.deepEqual(addresses(), [`198.51.100.66 ${vipTag('u1')} [${vipTag('u1')}]`]);
    assert.equal(creates(), 1);
  });

  test('a tag request that fails after the create: the retry tags the address it created instead of reserving another', async () => {
    await faults({ rates: { serverError: 1 }, routes: '^POST /api/core/v1/resource\\.json/[0-9a-f]+/tags/' });
    await assert.rejects(allocateServiceVips(client, input('u1')), EngineServerError);
    await faults({});
    const retried = await allocateServiceVips(client, input('u1'));
    assert.deepEqual(retried.vips.map((v) => [v.address, v.how]), [['198.51.100.66', 'adopted']]);
    assert.deepEqual(addresses(), [`198.51.100.66 ${vipTag('u1')} [${vipTag('u1')}]`]);
    assert.equal(creates(), 1);
  });

  test('two Services allocating at once get two distinct addresses', async () => {
    const [a, b] = await Promise.all([allocateServiceVips(client, input('u1')), allocateServiceVips(client, input('u2'))]);
    assert.deepEqual([a.vips[0]?.address, b.vips[0]?.address].sort(), ['198.51.100.66', '198.51.100.67']);
    assert.deepEqual(addresses(), [
      `198.51.100.66 ${vipTag(a.vips[0]?.address === '198.51.100.66' ? 'u1' : 'u2')} [${vipTag(a.vips[0]?.address === '198.51.100.66' ? 'u1' : 'u2')}]`,
      `198.51.100.67 ${vipTag(a.vips[0]?.address === '198.51.100.67' ? 'u1' : 'u2')} [${vipTag(a.vips[0]?.address === '198.51.100.67' ? 'u1' : 'u2')}]`,
    ]);
  });

  test('a full prefix is a non-retryable failure naming it, and nothing is created', async () => {
    const reserved = Array.from({ length: 12 }, (_, i) => `198.51.100.${66 + i}`);
    await assert.rejects(allocateServiceVips(client, input('u1', reserved)), (err: unknown) => {
      const e = err as { nonRetryable?: boolean; message: string };
      return e.nonRetryable === true && e.message === `prefix ${CIDR} (${prefix}) has no free address left for a VIP (0 addresses in use)`;
    });
    assert.equal(creates(), 0);
  });
});

describe('releaseServiceVips against the simulator', () => {
  test("deletes only the addresses carrying the Service's tag: another Service's VIP, a foreign address and a non-address under the tag stay", async () => {
    await allocateServiceVips(client, input('u1'));
    await allocateServiceVips(client, input('u2'));
    const foreign = await seed({ kind: 'address', name: '198.51.100.70', fields: { prefix, description_customer: vipTag('u1') } });
    const lb = await seed({ kind: 'loadbalancer', name: 'lb', tags: [vipTag('u1')] });
    const r = await releaseServiceVips(client, { serviceUid: 'u1' });
    assert.deepEqual(r.released.map((a) => a.address), ['198.51.100.66']);
    assert.deepEqual(r.skipped.map((x) => x.identifier), [lb]);
    assert.match(r.skipped[0]?.reason ?? '', /^not an IPAM address/);
    assert.deepEqual(addresses(), [`198.51.100.67 ${vipTag('u2')} [${vipTag('u2')}]`, `198.51.100.70 ${vipTag('u1')} []`]);
    assert.ok(sim.objects().some((o) => o.identifier === foreign));
    assert.ok(sim.objects().some((o) => o.identifier === lb));
    const again = await releaseServiceVips(client, { serviceUid: 'u1' });
    assert.deepEqual(again.released, []);
  });
});
