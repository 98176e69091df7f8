/**
 * (Longer than 300 lines: each realistic manner is tested on the same simulator with the same fault-switching helpers,
 * which one file per manner would repeat.)
 *
 * Contract tests of the realistic profile over raw HTTP: the real Engine's manners (simulator/README.md), each
 * switched on alone through `PUT /_sim/faults` on top of the ideal profile, and the profile that turns them all on.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type RunningSimulator, startSimulator } from '../../simulator/index';
import { rawRequest, type RawResponse, waitFor } from '../../simulator/testkit';

type Json = Record<string, unknown>;
const LB = '/api/LBaaS/v1/loadbalancer.json';
const BE = '/api/LBaaS/v1/backend.json';
const SRV = '/api/LBaaS/v1/server.json';
const RES = '/api/core/v1/resource.json';
const TAG = 'anxccm-svc-uid=2f6b1c0e-8d3a-4e5f-9a7b-1c2d3e4f5a6b';

let sim: RunningSimulator;

async function api(method: string, path: string, body?: unknown, token: string | null = 'dev-token'): Promise<RawResponse> {
  const res = await rawRequest(sim.url, method, path, { body, token });
  if (res.status !== 204) assert.match(String(res.headers['content-type']), /^application\/json/, `${method} ${path} -> ${res.status}`);
  return res;
}

async function faults(body: Json): Promise<Json> {
  const res = await api('PUT', '/_sim/faults', body);
  assert.equal(res.status, 200, res.text);
  return res.json as Json;
}

async function seed(kind: string, fields: Json, tags: string[] = []): Promise<string> {
  const res = await api('POST', '/_sim/objects', { kind, fields, tags });
  assert.equal(res.status, 201, res.text);
  return (res.json as { identifier: string }).identifier;
}

const filterBy = (key: string, id: string): string => `?filters=${encodeURIComponent(`${key}=${id}`)}`;
const listed = async (path: string): Promise<string[]> => {
  const res = await api('GET', path);
  if (res.status === 422) return [];
  assert.equal(res.status, 200, res.text);
  const env = res.json as Json;
  const page = (path.startsWith(RES) ? env : env.data) as { data: { identifier: string }[] };
  return page.data.map((d) => d.identifier);
};
const byTag = (tag: string): string => `${RES}?tag_name=${encodeURIComponent(tag)}`;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** Until the simulator has received a tag request (counted on arrival, applied at once, answered later). */
const inFlight = (method: string): Promise<true> =>
  waitFor(async () => ((sim.stats().requests[`${method} ${RES}/{id}/tags/{tag}`] ?? 0) > 0 ? true : undefined), 3000, 2);

before(async () => {
  sim = await startSimulator({ port: 0, seed: 14, deployMs: { min: 10, max: 10 } });
});
after(async () => sim.close());
beforeEach(() => sim.reset());

describe('the realistic profile', () => {
  test('PUT /_sim/faults {"profile":"realistic"} turns every manner on with the stated defaults; {"profile":"ideal"} turns them off', async () => {
    const on = await faults({ profile: 'realistic' });
    assert.deepEqual(
      {
        profile: on.profile,
        deleteMs: on.deleteMs,
        rateLimit: on.rateLimit,
        deleteListed: on.deleteListed,
        tagLagMs: on.tagLagMs,
        tagInFlightMs: on.tagInFlightMs,
        tagConflictStatus: on.tagConflictStatus,
        sparse: on.sparse,
      },
      {
        profile: 'realistic',
        deleteMs: { min: 2000, max: 5000 },
        rateLimit: { rps: 5, burst: 10, retryAfter: false },
        deleteListed: true,
        tagLagMs: { min: 1000, max: 4000 },
        tagInFlightMs: 300,
        tagConflictStatus: 500,
        sparse: { nullFields: true, tagsNull: true, zonelessTimes: true, typeOnlyState: true, noTotalPages: true },
      },
    );
    assert.deepEqual(on.deployMs, { min: 10, max: 10 }, 'deploy delays stay the startup ones');
    const partial = await faults({ profile: 'realistic', rateLimit: { rps: 2 }, sparse: { tagsNull: false } });
    assert.deepEqual(partial.rateLimit, { rps: 2, burst: 10, retryAfter: false }, 'a partial rate limit merges over the profile');
    assert.equal((partial.sparse as Json).tagsNull, false);
    assert.equal((partial.sparse as Json).noTotalPages, true);
    const off = await faults({ profile: 'ideal' });
    assert.equal(off.rateLimit, null);
    assert.equal(off.deleteListed, false);
    assert.deepEqual(off.deleteMs, { min: 0, max: 0 });
    for (const bad of [{ profile: 'harsh' }, { rateLimit: { rps: 0 } }, { sparse: { everything: true } }, { tagConflictStatus: 200 }]) {
      assert.equal((await api('PUT', '/_sim/faults', bad)).status, 422, JSON.stringify(bad));
    }
  });

  test('startSimulator({ profile: "realistic" }) starts with every manner on, and reset returns to it', async () => {
    const real = await startSimulator({ port: 0, seed: 14, profile: 'realistic', deployMs: { min: 10, max: 10 } });
    try {
      const get = async (): Promise<Json> => (await rawRequest(real.url, 'GET', '/_sim/faults')).json as Json;
      assert.equal((await get()).profile, 'realistic');
      assert.deepEqual((await get()).deleteMs, { min: 2000, max: 5000 });
      real.setFaults({ profile: 'ideal' });
      assert.equal((await get()).rateLimit, null);
      real.reset();
      assert.deepEqual((await get()).rateLimit, { rps: 5, burst: 10, retryAfter: false });
      const res = await rawRequest(real.url, 'GET', LB);
      assert.equal(res.status, 200);
      assert.deepEqual(Object.keys((res.json as { data: Json }).data).sort(), ['data', 'limit', 'page', 'total_items'], 'no total_pages');
    } finally {
      await real.close();
    }
  });
});

describe('rate limit per token', () => {
  test('over the bucket the Engine answers 429 without Retry-After and applies nothing; the bucket refills at rps', async () => {
    await faults({ rateLimit: { rps: 1, burst: 3 } });
    const lb = await seed('loadbalancer', { name: 'lb' });
    for (let i = 0; i < 3; i++) assert.equal((await api('GET', LB)).status, 200, `request ${i + 1} of the burst`);
    const res = await api('POST', BE, { name: 'throttled', load_balancer: lb });
    assert.equal(res.status, 429);
    assert.equal(res.headers['retry-after'], undefined);
    assert.deepEqual(res.json, { error: { code: 429, message: 'Request was throttled.' } });
    assert.deepEqual(sim.objects().map((o) => o.kind), ['loadbalancer'], 'the throttled POST was not applied');
    assert.equal((await api('GET', '/_sim/objects')).status, 200, 'the admin API is not limited');
    await sleep(1100); // one token at 1/s
    assert.equal((await api('GET', LB)).status, 200);
    assert.equal((await api('GET', LB)).status, 429);
    assert.equal(sim.stats().requests[`GET ${LB}`], 5, 'throttled requests are counted as requests');
    assert.equal(sim.stats().throttled, 2, 'and as throttled');
  });

  test('the bucket is per API token', async () => {
    const open = await startSimulator({ port: 0, seed: 1, token: '' });
    try {
      open.setFaults({ rateLimit: { rps: 1, burst: 2 } });
      const get = (token: string): Promise<number> => rawRequest(open.url, 'GET', LB, { token }).then((r) => r.status);
      assert.deepEqual([await get('a'), await get('a'), await get('a')], [200, 200, 429]);
      assert.deepEqual([await get('b'), await get('b'), await get('b')], [200, 200, 429]);
    } finally {
      await open.close();
    }
  });

  test('with retryAfter the 429 carries Retry-After in whole seconds until a token is free', async () => {
    await faults({ rateLimit: { rps: 0.5, burst: 1, retryAfter: true } });
    assert.equal((await api('GET', LB)).status, 200);
    const res = await api('GET', LB);
    assert.equal(res.status, 429);
    assert.equal(res.headers['retry-after'], '2');
  });
});

describe('asynchronous deletion, listed', () => {
  test('a deleted object stays readable, listed, filtered and listed by tag until deprovisioned, then 404 and gone from every list', async () => {
    await faults({ deleteListed: true, deleteMs: 1500 });
    const lb = await seed('loadbalancer', { name: 'lb' });
    const be = await seed('backend', { name: 'b', load_balancer: lb });
    const srv = await seed('server', { name: 's', backend: be, ip: '10.0.0.1', port: 80 }, [TAG]);
    const del = await api('DELETE', `${SRV}/${srv}`);
    assert.equal(del.status, 200);
    assert.equal((await api('GET', `${SRV}/${srv}`)).status, 200);
    assert.deepEqual(await listed(SRV), [srv]);
    assert.deepEqual(await listed(SRV + filterBy('backend', be)), [srv]);
    assert.deepEqual(await listed(byTag(TAG)), [srv]);
    assert.ok((await listed(RES)).includes(srv), 'the Core resource list');
    assert.equal((await api('GET', `${RES}/${srv}`)).status, 200);
    assert.equal((await api('DELETE', `${SRV}/${srv}`)).status, 200, 'a second DELETE meanwhile is accepted and changes nothing');
    assert.equal(sim.objects().find((o) => o.identifier === srv)?.deleting, true);

    await waitFor(async () => ((await api('GET', `${SRV}/${srv}`)).status === 404 ? true : undefined), 5000);
    assert.deepEqual(await listed(SRV), []);
    assert.deepEqual(await listed(SRV + filterBy('backend', be)), []);
    assert.equal((await api('GET', byTag(TAG))).status, 422);
    assert.equal((await api('GET', `${RES}/${srv}`)).status, 404);
  });

  test('deleting a parent while a dependent deprovisions is 409, and 200 once it is gone', async () => {
    await faults({ deleteListed: true, deleteMs: 1000 });
    const lb = await seed('loadbalancer', { name: 'lb' });
    const be = await seed('backend', { name: 'b', load_balancer: lb });
    const srv = await seed('server', { name: 's', backend: be });
    assert.equal((await api('DELETE', `${BE}/${be}`)).status, 409, 'a live dependent');
    assert.equal((await api('DELETE', `${SRV}/${srv}`)).status, 200);
    const conflict = await api('DELETE', `${BE}/${be}`);
    assert.equal(conflict.status, 409, 'a dependent being deleted');
    assert.match(((conflict.json as Json).error as Json).message as string, /still referenced by 1 Server\(s\) via backend/);
    assert.equal((await api('GET', `${BE}/${be}`)).status, 200, 'the parent is untouched');
    await waitFor(async () => ((await api('GET', `${SRV}/${srv}`)).status === 404 ? true : undefined), 3000);
    assert.equal((await api('DELETE', `${BE}/${be}`)).status, 200);
  });

  test('PUT and tagging of an object being deleted are 409 (it exists, but cannot change), and change nothing', async () => {
    await faults({ deleteListed: true, deleteMs: 2000 });
    const lb = await seed('loadbalancer', { name: 'lb' });
    const be = await seed('backend', { name: 'b', load_balancer: lb }, [TAG]);
    assert.equal((await api('DELETE', `${BE}/${be}`)).status, 200);
    const put = await api('PUT', `${BE}/${be}`, { name: 'b2', load_balancer: lb, state: '0' });
    assert.equal(put.status, 409);
    assert.match(((put.json as Json).error as Json).message as string, /being deleted/);
    assert.equal((await api('POST', `${RES}/${be}/tags/other=1`, '""')).status, 409);
    assert.equal((await api('DELETE', `${RES}/${be}/tags/${TAG}`)).status, 409);
    const view = sim.objects().find((o) => o.identifier === be);
    assert.equal(view?.name, 'b');
    assert.deepEqual(view?.tags, [TAG]);
  });
});

describe('tag index lag', () => {
  test('a tag POST answers 200 before the tag index lists the object; the resource itself carries the tag at once', async () => {
    await faults({ tagLagMs: 1000 });
    const lb = await seed('loadbalancer', { name: 'lb' });
    const be = await seed('backend', { name: 'b', load_balancer: lb });
    assert.equal((await api('POST', `${RES}/${be}/tags/${TAG}`, '""')).status, 200);
    const early = await api('GET', byTag(TAG));
    assert.equal(early.status, 422, 'not listed yet');
    assert.deepEqual(((await api('GET', `${RES}/${be}`)).json as { tags: Json[] }).tags.map((t) => t.name), [TAG]);
    assert.equal((await api('POST', `${RES}/${be}/tags/${TAG}`, '""')).status, 422, 'tagging again is "already tagged" at once');
    await waitFor(async () => ((await listed(byTag(TAG))).includes(be) ? true : undefined), 3000);

    assert.equal((await api('DELETE', `${RES}/${be}/tags/${TAG}`)).status, 200);
    assert.deepEqual(await listed(byTag(TAG)), [be], 'an untag lags too');
    await waitFor(async () => ((await api('GET', byTag(TAG))).status === 422 ? true : undefined), 3000);
  });
});

describe('overlapping tag requests', () => {
  test('a second tag request for a resource while one is in flight fails with tagConflictStatus and is not applied; other resources are unaffected', async () => {
    await faults({ tagInFlightMs: 300 });
    const lb = await seed('loadbalancer', { name: 'lb' });
    const be = await seed('backend', { name: 'b', load_balancer: lb });
    const t0 = Date.now();
    const first = api('POST', `${RES}/${be}/tags/${TAG}`, '""');
    await inFlight('POST');
    const second = await api('POST', `${RES}/${be}/tags/second=1`, '""');
    assert.equal(second.status, 500);
    assert.match(((second.json as Json).error as Json).message as string, /Another tag request for resource .* is in progress/);
    assert.equal((await api('POST', `${RES}/${lb}/tags/${TAG}`, '""')).status, 200, 'another resource');
    assert.equal((await first).status, 200);
    assert.ok(Date.now() - t0 >= 290, 'the first answer was held while in flight');
    assert.deepEqual(sim.objects().find((o) => o.identifier === be)?.tags, [TAG]);
    assert.equal((await api('POST', `${RES}/${be}/tags/second=1`, '""')).status, 200, 'after the first one ended');
  });

  test('the conflict status is configurable', async () => {
    await faults({ tagInFlightMs: 200, tagConflictStatus: 409 });
    const lb = await seed('loadbalancer', { name: 'lb' });
    const first = api('DELETE', `${RES}/${lb}/tags/none`);
    await inFlight('DELETE');
    assert.equal((await api('POST', `${RES}/${lb}/tags/${TAG}`, '""')).status, 409);
    assert.equal((await first).status, 404, 'an untag of a missing tag is in flight too');
  });
});

describe('sparse answers', () => {
  test('optional LBaaS fields null or left out, a state with only its type, references and strict fields intact', async () => {
    await faults({ sparse: true });
    const lb = await seed('loadbalancer', { name: 'lb', ip_address: '198.51.100.7' });
    const created = await api('POST', BE, { name: 'b', mode: 'tcp', load_balancer: lb });
    assert.equal(created.status, 200);
    const be = created.json as Json;
    assert.deepEqual(be, {
      identifier: be.identifier,
      name: 'b',
      load_balancer: { identifier: lb, name: 'lb' },
      mode: 'tcp',
      state: { type: 2 },
      customer_identifier: null,
      reseller_identifier: null,
      automation_rules: null,
    });
    await sleep(30);
    const withCheck = await api('PUT', `${BE}/${be.identifier as string}`, {
      name: 'b',
      load_balancer: lb,
      health_check: '"adv_check": "tcp-check"',
      server_timeout: 30,
      state: '0',
    });
    assert.equal((withCheck.json as Json).health_check, '"adv_check": "tcp-check"', 'non-empty values are sent');
    assert.equal((withCheck.json as Json).server_timeout, 30);
    await sleep(30);
    assert.deepEqual(((await api('GET', `${BE}/${be.identifier as string}`)).json as Json).state, { type: 1 });
    const lbGet = (await api('GET', `${LB}/${lb}`)).json as Json;
    assert.equal(lbGet.ip_address, '198.51.100.7', 'ip_address is not omitempty');
  });

  test('Core resource: tags null when untagged, timestamps without a zone; list pages without total_pages', async () => {
    await faults({ sparse: true });
    const lb = await seed('loadbalancer', { name: 'lb' });
    const res = (await api('GET', `${RES}/${lb}`)).json as Json;
    assert.equal(res.tags, null);
    assert.match(res.created_at as string, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    assert.match(res.updated_at as string, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    assert.equal((await api('POST', `${RES}/${lb}/tags/${TAG}`, '""')).status, 200);
    assert.deepEqual(((await api('GET', `${RES}/${lb}`)).json as { tags: Json[] }).tags.map((t) => t.name), [TAG]);
    const core = (await api('GET', byTag(TAG))).json as Json;
    assert.deepEqual(core, { page: 1, total_items: 1, limit: 10, data: [{ identifier: lb, name: 'lb' }] });
    const lbaas = (await api('GET', LB)).json as Json;
    assert.deepEqual(lbaas, { state: 'success', messages: [], data: { page: 1, total_items: 1, limit: 10, data: [{ identifier: lb, name: 'lb' }] } });
  });

  test('each sparse part switches on alone', async () => {
    await faults({ sparse: { tagsNull: true } });
    const lb = await seed('loadbalancer', { name: 'lb' });
    const res = (await api('GET', `${RES}/${lb}`)).json as Json;
    assert.equal(res.tags, null);
    assert.match(res.created_at as string, /Z$/, 'timestamps keep their zone');
    const got = (await api('GET', `${LB}/${lb}`)).json as Json;
    assert.deepEqual(got.state, { id: '3', title: 'Deployed', text: 'Deployed', type: 1 });
    assert.deepEqual(got.automation_rules, []);
  });
});

describe('determinism under a seed', () => {
  test('the same seed and requests give the same identifiers and drawn delete delays with every manner on', async () => {
    const run = async (): Promise<unknown[]> => {
      const s = await startSimulator({ port: 0, seed: 77, profile: 'realistic', deployMs: { min: 0, max: 0 } });
      try {
        s.setFaults({ rateLimit: null, tagInFlightMs: 0 });
        const lb = s.seedObject({ kind: 'loadbalancer', fields: { name: 'lb' } });
        const out: unknown[] = [];
        for (let i = 0; i < 3; i++) {
          const be = (await rawRequest(s.url, 'POST', BE, { body: { name: `b${i}`, load_balancer: lb } })).json as Json;
          await rawRequest(s.url, 'POST', `${RES}/${be.identifier as string}/tags/${TAG}`, { body: '""' });
          await rawRequest(s.url, 'DELETE', `${BE}/${be.identifier as string}`);
          out.push(be.identifier);
        }
        out.push(...s.objects().map((o) => [o.identifier, o.deleteMs]));
        return out;
      } finally {
        await s.close();
      }
    };
    const a = await run();
    assert.deepEqual(await run(), a);
    assert.ok(a.slice(4).every((x) => Array.isArray(x) && (x[1] === null || (x[1] >= 2000 && x[1] <= 5000))));
  });
});
