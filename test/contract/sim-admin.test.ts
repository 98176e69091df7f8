/**
 * Contract tests of the simulator's admin API (docs/engine-api.md#admin-api): stats, faults, seeding, drift, reset
 * and seeded determinism, over raw HTTP.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { type RunningSimulator, startSimulator } from '../../simulator/index';
import { rawRequest, type RawResponse, waitFor } from '../../simulator/testkit';

type Json = Record<string, unknown>;
const BE = '/api/LBaaS/v1/backend.json';
const RES = '/api/core/v1/resource.json';

let sim: RunningSimulator;

async function api(method: string, path: string, body?: unknown): Promise<RawResponse> {
  const res = await rawRequest(sim.url, method, path, { body });
  if (res.status !== 204) assert.match(String(res.headers['content-type']), /^application\/json/, `${method} ${path} -> ${res.status}`);
  return res;
}

const admin = (method: string, path: string, body?: unknown): Promise<RawResponse> => api(method, `/_sim/${path}`, body);

async function seedLb(extra: Json = {}): Promise<string> {
  const res = await admin('POST', 'objects', { kind: 'loadbalancer', fields: { name: 'lb' }, ...extra });
  assert.equal(res.status, 201, res.text);
  return (res.json as { identifier: string }).identifier;
}

async function objectCount(): Promise<number> {
  return ((await admin('GET', 'objects')).json as { objects: unknown[] }).objects.length;
}

async function faults(body: Json): Promise<void> {
  const res = await admin('PUT', 'faults', body);
  assert.equal(res.status, 200, res.text);
}

before(async () => {
  sim = await startSimulator({ port: 0, seed: 99, deployMs: { min: 10, max: 10 } });
});
after(async () => sim.close());
beforeEach(() => sim.reset());

describe('admin stats', () => {
  test('stats count Engine requests by "<METHOD> <route pattern>" with {id}/{tag}, skip /_sim calls, and count only mutations that changed something', async () => {
    const lb = await seedLb();
    const be = (await api('POST', BE, { name: 'b', load_balancer: lb })).json as { identifier: string };
    await api('GET', `${BE}/${be.identifier}`);
    await api('GET', `${BE}?filters=`);
    await api('PUT', `${BE}/${be.identifier}`, { name: 'b2', load_balancer: lb, state: '0' });
    await api('POST', `${RES}/${be.identifier}/tags/a=b`, '""');
    await api('POST', `${RES}/${be.identifier}/tags/a=b`, '""'); // 422: no change
    await api('DELETE', `/api/LBaaS/v1/loadbalancer.json/${lb}`); // 409: no change
    await api('DELETE', `${BE}/${'0'.repeat(32)}`); // 404: no change
    await api('POST', BE, { name: 'bad' }); // 422: no change
    await api('DELETE', `${BE}/${be.identifier}`);
    await admin('GET', 'objects');
    const stats = (await admin('GET', 'stats')).json as Json;
    assert.deepEqual(Object.keys(stats).sort(), ['mutations', 'requests', 'throttled', 'total']);
    assert.deepEqual(stats.requests, {
      'DELETE /api/LBaaS/v1/backend.json/{id}': 2,
      'DELETE /api/LBaaS/v1/loadbalancer.json/{id}': 1,
      'GET /api/LBaaS/v1/backend.json': 1,
      'GET /api/LBaaS/v1/backend.json/{id}': 1,
      'POST /api/LBaaS/v1/backend.json': 2,
      'POST /api/core/v1/resource.json/{id}/tags/{tag}': 2,
      'PUT /api/LBaaS/v1/backend.json/{id}': 1,
    });
    assert.equal(stats.total, 10);
    assert.equal(stats.mutations, 4, 'POST, PUT, tag, DELETE');
    assert.equal((await admin('POST', 'stats/reset')).status, 204);
    assert.deepEqual((await admin('GET', 'stats')).json, { requests: {}, total: 0, mutations: 0, throttled: 0 });
  });
});

describe('admin faults', () => {
  test('serverError rate 1: every Engine request answers 500/502/503 and nothing is applied', async () => {
    const lb = await seedLb();
    await faults({ rates: { serverError: 1 } });
    for (let i = 0; i < 6; i++) {
      const res = await api('POST', BE, { name: `b${i}`, load_balancer: lb });
      assert.ok([500, 502, 503].includes(res.status), String(res.status));
      assert.equal(((res.json as Json).error as Json).code, res.status);
    }
    assert.equal(await objectCount(), 1, 'no backend was created');
    assert.equal(((await admin('GET', 'stats')).json as Json).mutations, 0);
  });

  test('rateLimited rate 1: 429 with Retry-After: 1 and nothing applied', async () => {
    const lb = await seedLb();
    await faults({ rates: { rateLimited: 1 } });
    const res = await api('POST', BE, { name: 'b', load_balancer: lb });
    assert.equal(res.status, 429);
    assert.equal(res.headers['retry-after'], '1');
    assert.equal(await objectCount(), 1);
  });

  test('dropAfterCommit rate 1: the create is applied but the caller gets a 502 (or a reset connection)', async () => {
    const lb = await seedLb();
    await faults({ rates: { dropAfterCommit: 1 }, dropMode: '502' });
    const res = await api('POST', BE, { name: 'lost', load_balancer: lb });
    assert.equal(res.status, 502);
    await faults({ rates: { dropAfterCommit: 1 }, dropMode: 'reset' });
    await assert.rejects(
      request(`${sim.url}${BE}`, { method: 'POST', headers: { authorization: 'Token dev-token' }, body: JSON.stringify({ name: 'lost2', load_balancer: lb }) }),
    );
    await faults({});
    const names = ((await admin('GET', 'objects?kind=backend')).json as { objects: Json[] }).objects.map((o) => o.name).sort();
    assert.deepEqual(names, ['lost', 'lost2']);
    assert.equal(((await admin('GET', 'stats')).json as Json).mutations, 2);
  });

  test('the routes regex limits request faults to matching "<METHOD> <path>"', async () => {
    const lb = await seedLb();
    await faults({ rates: { serverError: 1 }, routes: '^POST /api/LBaaS/v1/backend\\.json$' });
    assert.equal((await api('GET', BE)).status, 200);
    assert.equal((await api('GET', `/api/LBaaS/v1/loadbalancer.json/${lb}`)).status, 200);
    assert.ok((await api('POST', BE, { name: 'b', load_balancer: lb })).status >= 500);
  });

  test('faults GET returns the full effective model; PUT replaces it; bad models are 422 and change nothing', async () => {
    const def = (await admin('GET', 'faults')).json as Json;
    assert.deepEqual(def, {
      profile: 'ideal',
      seed: 99,
      latencyMs: { min: 0, max: 0 },
      deployMs: { min: 10, max: 10 },
      deleteMs: { min: 0, max: 0 },
      rates: { serverError: 0, rateLimited: 0, dropAfterCommit: 0, deploymentError: 0 },
      routes: null,
      dropMode: 'mixed',
      rateLimit: null,
      deleteListed: false,
      tagLagMs: { min: 0, max: 0 },
      tagInFlightMs: 0,
      tagConflictStatus: 500,
      sparse: { nullFields: false, tagsNull: false, zonelessTimes: false, typeOnlyState: false, noTotalPages: false },
    });
    await faults({ seed: 3, latencyMs: { min: 1, max: 2 }, deployMs: 5, rates: { deploymentError: 0.5 } });
    const got = (await admin('GET', 'faults')).json as Json;
    assert.deepEqual(got.deployMs, { min: 5, max: 5 });
    assert.deepEqual(got.rates, { serverError: 0, rateLimited: 0, dropAfterCommit: 0, deploymentError: 0.5 });
    for (const bad of [{ rates: { serverError: 2 } }, { deployMs: { min: 5, max: 1 } }, { routes: '(' }, { typo: 1 }]) {
      const res = await admin('PUT', 'faults', bad);
      assert.equal(res.status, 422, JSON.stringify(bad));
      assert.ok((((res.json as Json).error as Json).validation as Json) !== undefined);
    }
    assert.deepEqual((await admin('GET', 'faults')).json, got);
  });

  test('latencyMs delays Engine answers', async () => {
    await faults({ latencyMs: { min: 40, max: 40 } });
    const t0 = Date.now();
    await api('GET', BE);
    assert.ok(Date.now() - t0 >= 35);
  });
});

describe('admin objects', () => {
  test('seeding: default state Deployed; NewlyCreated without force deploys after the delay; force keeps the state and skips integrity checks', async () => {
    const lb = await seedLb({ tags: ['t=1'] });
    const pending = (await admin('POST', 'objects', { kind: 'backend', fields: { name: 'p', load_balancer: lb }, state: 'NewlyCreated' })).json as Json;
    const forced = (await admin('POST', 'objects', { kind: 'backend', fields: { name: 'f', load_balancer: 'f'.repeat(32) }, state: 'Updating', force: true })).json as Json;
    const bad = await admin('POST', 'objects', { kind: 'backend', fields: { name: 'x', load_balancer: 'f'.repeat(32) } });
    assert.equal(bad.status, 422);
    assert.equal((await admin('POST', 'objects', { kind: 'loadbalancer', identifier: lb, fields: { name: 'dup' } })).status, 409);
    assert.equal((await admin('POST', 'objects', { kind: 'nope' })).status, 422);
    await waitFor(async () => {
      const o = (await admin('GET', `objects/${pending.identifier as string}`)).json as Json;
      return o.state === 'Deployed' ? o : undefined;
    });
    await new Promise((r) => setTimeout(r, 30));
    const f = (await admin('GET', `objects/${forced.identifier as string}`)).json as Json;
    assert.equal(f.state, 'Updating');
    const lbView = (await admin('GET', `objects/${lb}`)).json as Json;
    assert.equal(lbView.state, 'Deployed');
    assert.deepEqual(lbView.tags, ['t=1']);
  });

  test('GET /_sim/objects lists every object with kind, state title, tags, fields (links as ids), drawn deployMs and timestamps', async () => {
    const lb = await seedLb();
    await api('POST', BE, { name: 'b', load_balancer: lb });
    const { objects } = (await admin('GET', 'objects')).json as { objects: Json[] };
    assert.equal(objects.length, 2);
    const be = objects.find((o) => o.kind === 'backend') as Json;
    for (const k of ['kind', 'identifier', 'name', 'state', 'tags', 'fields', 'deployMs', 'createdAt', 'deployedAt']) assert.ok(k in be, k);
    assert.equal(be.deployMs, 10);
    assert.equal((be.fields as Json).load_balancer, lb);
    const settled = await waitFor(async () => {
      const o = (await admin('GET', `objects/${be.identifier as string}`)).json as Json;
      return o.deployedAt ? o : undefined;
    });
    assert.ok(Date.parse(settled.deployedAt as string) - Date.parse(settled.deployStartedAt as string) >= 9);
  });

  test('deploySeenAt: null until a GET answers the settled deploy, then the time of that first GET (later GETs leave it); an update deploy clears it', async () => {
    // Deploys of 1 s (this file's 10 ms were over before a GET on a busy CI machine), so that the first GET below
    // answers the deploy in progress.
    await faults({ deployMs: 1000 });
    const lb = await seedLb();
    const be = (await api('POST', BE, { name: 'b', mode: 'tcp', load_balancer: lb })).json as { identifier: string };
    const view = async () => (await admin('GET', `objects/${be.identifier}`)).json as Json;
    const during = await api('GET', `${BE}/${be.identifier}`);
    assert.equal(during.status, 200);
    assert.notEqual(((during.json as Json).state as Json).title, 'Deployed', 'the first GET came within the 1 s deploy');
    assert.equal((await view()).deploySeenAt, null, 'a GET during the deploy saw nothing settled');
    const settled = await waitFor(async () => ((await view()).deployedAt ? await view() : undefined));
    assert.equal(settled.deploySeenAt, null, 'the admin view is not a GET');
    await new Promise((r) => setTimeout(r, 20));
    const before = Date.now();
    await api('GET', `${BE}/${be.identifier}`);
    const seen = (await view()).deploySeenAt as string;
    assert.ok(Date.parse(seen) >= before - 1 && Date.parse(seen) >= Date.parse(settled.deployedAt as string) + 20, `seen ${seen}, deployed ${settled.deployedAt as string}`);
    await new Promise((r) => setTimeout(r, 20));
    await api('GET', `${BE}/${be.identifier}`);
    assert.equal((await view()).deploySeenAt, seen, 'a later GET leaves it');
    const got = (await api('GET', `${BE}/${be.identifier}`)).json as Json;
    assert.equal((await api('PUT', `${BE}/${be.identifier}`, { ...got, load_balancer: lb, state: '0' })).status, 200);
    assert.equal((await view()).deploySeenAt, null, 'an update starts a new deploy');
  });

  test('PATCH injects drift (state and fields) on one object; DELETE removes it out of band', async () => {
    const lb = await seedLb();
    const be = (await api('POST', BE, { name: 'b', mode: 'tcp', load_balancer: lb })).json as { identifier: string };
    const res = await admin('PATCH', `objects/${be.identifier}`, { state: 'DeploymentError', fields: { mode: 'http' } });
    assert.equal(res.status, 200);
    assert.equal((res.json as Json).state, 'DeploymentError');
    await new Promise((r) => setTimeout(r, 30));
    const got = (await api('GET', `${BE}/${be.identifier}`)).json as Json;
    assert.equal((got.state as Json).title, 'DeploymentError', 'the pending deploy no longer overrides the injected state');
    assert.equal(got.mode, 'http');
    assert.equal((await admin('PATCH', `objects/${be.identifier}`, { fields: { load_balancer: '0'.repeat(32) } })).status, 422);
    assert.equal((await admin('DELETE', `objects/${be.identifier}`)).status, 204);
    assert.equal((await api('GET', `${BE}/${be.identifier}`)).status, 404);
    assert.equal((await admin('DELETE', `objects/${be.identifier}`)).status, 404);
  });

  test('reset clears objects, tags, counters and faults', async () => {
    await seedLb({ tags: ['t=1'] });
    await api('GET', BE);
    await faults({ rates: { serverError: 1 } });
    assert.equal((await admin('POST', 'reset')).status, 204);
    assert.equal(await objectCount(), 0);
    assert.deepEqual((await admin('GET', 'stats')).json, { requests: {}, total: 0, mutations: 0, throttled: 0 });
    assert.equal(((await admin('GET', 'faults')).json as { rates: Json }).rates.serverError, 0);
    assert.equal((await api('GET', `${RES}?tag_name=t%3D1`)).status, 422);
  });
});

describe('seeded determinism', () => {
  async function identifiers(s: RunningSimulator): Promise<string[]> {
    const lb = s.seedObject({ kind: 'loadbalancer', fields: { name: 'lb' } });
    const ids = [lb];
    for (let i = 0; i < 3; i++) {
      const res = await rawRequest(s.url, 'POST', BE, { body: { name: `b${i}`, load_balancer: lb } });
      ids.push((res.json as { identifier: string }).identifier);
    }
    return ids;
  }

  test('the same seed gives the same identifiers (in another simulator and after a reset); another seed gives others', async () => {
    const a = await startSimulator({ port: 0, seed: 1234, deployMs: { min: 0, max: 0 } });
    const b = await startSimulator({ port: 0, seed: 1234, deployMs: { min: 0, max: 0 } });
    const c = await startSimulator({ port: 0, seed: 4321, deployMs: { min: 0, max: 0 } });
    try {
      const ia = await identifiers(a);
      for (const id of ia) assert.match(id, /^[0-9a-f]{32}$/);
      assert.deepEqual(await identifiers(b), ia);
      a.reset();
      assert.deepEqual(await identifiers(a), ia);
      const ic = await identifiers(c);
      assert.equal(ic.filter((id) => ia.includes(id)).length, 0);
    } finally {
      await Promise.all([a.close(), b.close(), c.close()]);
    }
  });

  test('the same fault seed draws the same faults and deploy delays', async () => {
    const run = async (): Promise<number[]> => {
      const s = await startSimulator({ port: 0, seed: 8 });
      try {
        s.setFaults({ seed: 77, deployMs: { min: 1, max: 1000 }, rates: { serverError: 0.5 } });
        const lb = s.seedObject({ kind: 'loadbalancer', fields: { name: 'lb' } });
        const out: number[] = [];
        for (let i = 0; i < 12; i++) out.push((await rawRequest(s.url, 'POST', BE, { body: { name: `b${i}`, load_balancer: lb } })).status);
        for (const o of s.objects()) if (o.deployMs !== null) out.push(o.deployMs);
        return out;
      } finally {
        await s.close();
      }
    };
    const first = await run();
    assert.deepEqual(await run(), first);
    assert.ok(first.some((st) => st === 200) && first.some((st) => st >= 500), 'both outcomes occur at rate 0.5');
  });

  test('a deploy delay belongs to the object (seed, kind, name, load balancer), not to the order objects were created in', async () => {
    const run = async (order: number[]): Promise<Record<string, number | null>> => {
      const s = await startSimulator({ port: 0, seed: 8 });
      try {
        s.setFaults({ seed: 77, deployMs: { min: 1, max: 100_000 } });
        const lbs = ['lb-a', 'lb-b'].map((name) => s.seedObject({ kind: 'loadbalancer', fields: { name } }));
        for (const i of order) for (const lb of lbs) assert.equal((await rawRequest(s.url, 'POST', BE, { body: { name: `b${i}`, load_balancer: lb } })).status, 200);
        return Object.fromEntries(s.objects().filter((o) => o.kind === 'backend').map((o) => [`${o.name}@${lbs.indexOf(String(o.fields.load_balancer))}`, o.deployMs]));
      } finally {
        await s.close();
      }
    };
    const forward = await run([0, 1, 2, 3, 4, 5]);
    assert.deepEqual(await run([5, 3, 1, 0, 4, 2]), forward);
    const delays = Object.values(forward);
    assert.equal(new Set(delays).size, 12, `12 Backends, 12 different delays: ${JSON.stringify(forward)}`);
  });
});
