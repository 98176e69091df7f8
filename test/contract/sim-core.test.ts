/**
 * Contract tests of the simulator's Core v1 resources and tags (docs/engine-api.md#core-resources-and-tags) over raw
 * HTTP.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LOADBALANCER_TYPE_ID, type RunningSimulator, startSimulator } from '../../simulator/index';
import { rawRequest, type RawResponse, waitFor } from '../../simulator/testkit';

type Json = Record<string, unknown>;
const RES = '/api/core/v1/resource.json';
const TAG = 'anxccm-svc-uid=9a5f0c1e-3b7d-4c7a-9d8e-0f1a2b3c4d5e';

let sim: RunningSimulator;

async function api(method: string, path: string, body?: unknown): Promise<RawResponse> {
  const res = await rawRequest(sim.url, method, path, { body });
  if (res.status !== 204) assert.match(String(res.headers['content-type']), /^application\/json/, `${method} ${path} -> ${res.status}`);
  return res;
}

async function seed(kind: string, fields: Json, tags: string[] = []): Promise<string> {
  const res = await rawRequest(sim.url, 'POST', '/_sim/objects', { body: { kind, fields, tags } });
  assert.equal(res.status, 201, res.text);
  return (res.json as { identifier: string }).identifier;
}

const tagPath = (id: string, tag: string): string => `${RES}/${id}/tags/${tag}`;
const byTag = (tag: string, extra = ''): string => `${RES}?tag_name=${encodeURIComponent(tag)}${extra}`;

before(async () => {
  sim = await startSimulator({ port: 0, seed: 5, deployMs: { min: 10, max: 10 } });
});
after(async () => sim.close());
beforeEach(() => sim.reset());

describe('Core v1 tags', () => {
  test('tag POST with the tag literally in the path (= unescaped) and body "" answers exactly 200 and the resource lists under the tag', async () => {
    const lb = await seed('loadbalancer', { name: 'lb' });
    const be = await seed('backend', { name: 'http.web', load_balancer: lb });
    const res = await api('POST', tagPath(be, TAG), '""');
    assert.equal(res.status, 200);
    const list = await api('GET', byTag(TAG, '&page=1&limit=10'));
    assert.equal(list.status, 200);
    assert.deepEqual(list.json, { page: 1, total_pages: 1, total_items: 1, limit: 10, data: [{ identifier: be, name: 'http.web' }] });
  });

  test('a percent-encoded tag in the path is the same tag as the literal one', async () => {
    const lb = await seed('loadbalancer', { name: 'lb' });
    assert.equal((await api('POST', tagPath(lb, encodeURIComponent(TAG)), '""')).status, 200);
    assert.equal((await api('POST', tagPath(lb, TAG), '""')).status, 422, 'already tagged under the decoded name');
    const res = (await api('GET', `${RES}/${lb}`)).json as { tags: Json[] };
    assert.deepEqual(res.tags.map((t) => t.name), [TAG]);
  });

  test('422 when nothing carries the tag (list by tag on page 1, and for a tag whose last object was untagged)', async () => {
    const res = await api('GET', byTag('nobody=here'));
    assert.equal(res.status, 422);
    assert.equal(((res.json as Json).error as Json).code, 422);
    const lb = await seed('loadbalancer', { name: 'lb' }, ['t=1']);
    assert.equal((await api('GET', byTag('t=1'))).status, 200);
    assert.equal((await api('DELETE', tagPath(lb, 't=1'))).status, 200);
    assert.equal((await api('GET', byTag('t=1'))).status, 422);
  });

  test('tag list paging: flat envelope with exactly the documented keys, 25 items over limit 10, empty page past the end', async () => {
    const lb = await seed('loadbalancer', { name: 'lb' });
    for (let i = 0; i < 25; i++) await seed('backend', { name: `b${i}`, load_balancer: lb }, [TAG]);
    await seed('backend', { name: 'untagged', load_balancer: lb });
    const seen = new Set<string>();
    for (const [page, n] of [[1, 10], [2, 10], [3, 5], [4, 0]] as const) {
      const res = await api('GET', byTag(TAG, `&page=${page}&limit=10`));
      assert.equal(res.status, 200);
      const env = res.json as Json & { data: Json[] };
      assert.deepEqual(Object.keys(env).sort(), ['data', 'limit', 'page', 'total_items', 'total_pages']);
      assert.deepEqual({ ...env, data: null }, { page, total_pages: 3, total_items: 25, limit: 10, data: null });
      assert.equal(env.data.length, n);
      for (const item of env.data) {
        assert.deepEqual(Object.keys(item), ['identifier', 'name']);
        seen.add(item.identifier as string);
      }
    }
    assert.equal(seen.size, 25);
  });

  test('tagging an already tagged resource is 422; untag answers 200, then 404 when not tagged; unknown resource 404', async () => {
    const lb = await seed('loadbalancer', { name: 'lb' });
    assert.equal((await api('POST', tagPath(lb, 'a=b'), '""')).status, 200);
    assert.equal((await api('POST', tagPath(lb, 'a=b'), '""')).status, 422);
    assert.equal((await api('DELETE', tagPath(lb, 'a=b'))).status, 200);
    assert.equal((await api('DELETE', tagPath(lb, 'a=b'))).status, 404);
    assert.equal((await api('POST', tagPath('0'.repeat(32), 'a=b'), '""')).status, 404);
    assert.equal((await api('GET', `${RES}/${'0'.repeat(32)}`)).status, 404);
  });
});

describe('Core v1 resources', () => {
  test('resource GET: identifier, name, resource_type with the documented type ids, tags as objects, ISO dates, attributes {}', async () => {
    const lb = await seed('loadbalancer', { name: 'lb' }, ['x=1']);
    const be = await seed('backend', { name: 'be', load_balancer: lb }, [TAG, 'x=1']);
    const fe = await seed('frontend', { name: 'fe', load_balancer: lb, default_backend: be });
    const bind = await seed('bind', { name: 'bind', frontend: fe, port: 80 });
    const srv = await seed('server', { name: 'srv', backend: be, port: 80 });
    const types: [string, string][] = [
      [lb, LOADBALANCER_TYPE_ID],
      [fe, 'da9d14b9d95840c08213de67f9cee6e2'],
      [be, '33164a3066a04a52be43c607f0c5dd8c'],
      [bind, 'bd24def982aa478fb3352cb5f49aab47'],
      [srv, '01f321a4875446409d7d8469503a905f'],
    ];
    for (const [id, typeId] of types) {
      const r = (await api('GET', `${RES}/${id}`)).json as Json;
      assert.deepEqual(Object.keys(r).sort(), ['attributes', 'created_at', 'identifier', 'name', 'resource_type', 'tags', 'updated_at']);
      assert.equal(r.identifier, id);
      assert.deepEqual(Object.keys(r.resource_type as Json).sort(), ['identifier', 'name']);
      assert.equal((r.resource_type as Json).identifier, typeId);
      assert.deepEqual(r.attributes, {});
      for (const k of ['created_at', 'updated_at']) assert.equal(new Date(r[k] as string).toISOString(), r[k]);
    }
    const r = (await api('GET', `${RES}/${be}`)).json as { tags: Json[] };
    assert.deepEqual(r.tags.map((t) => t.name), [TAG, 'x=1']);
    for (const t of r.tags) {
      assert.deepEqual(Object.keys(t).sort(), ['identifier', 'name']);
      assert.match(t.identifier as string, /^[0-9a-f]{32}$/);
    }
    const lbTags = ((await api('GET', `${RES}/${lb}`)).json as { tags: Json[] }).tags;
    assert.equal(lbTags[0]?.identifier, r.tags[1]?.identifier, 'one identifier per tag name');
  });

  test('tag index stays consistent with deletions: a deleted object leaves the tag list no later than its own GET', async () => {
    const lb = await seed('loadbalancer', { name: 'lb' });
    const a = await seed('backend', { name: 'a', load_balancer: lb }, [TAG]);
    const b = await seed('backend', { name: 'b', load_balancer: lb }, [TAG]);
    assert.equal((await api('DELETE', `/api/LBaaS/v1/backend.json/${a}`)).status, 200);
    assert.equal((await api('GET', `${RES}/${a}`)).status, 404);
    let list = (await api('GET', byTag(TAG))).json as { data: Json[]; total_items: number };
    assert.deepEqual(list.data.map((i) => i.identifier), [b]);

    sim.setFaults({ deleteMs: { min: 300, max: 300 } });
    assert.equal((await api('DELETE', `/api/LBaaS/v1/backend.json/${b}`)).status, 200);
    assert.equal((await api('GET', `/api/LBaaS/v1/backend.json/${b}`)).status, 200, 'still readable while deleting');
    assert.equal((await api('GET', byTag(TAG))).status, 422, 'but already gone from the tag list');
    await waitFor(async () => ((await api('GET', `/api/LBaaS/v1/backend.json/${b}`)).status === 404 ? true : undefined));
    assert.equal((await api('GET', byTag(TAG))).status, 422);

    const c = await seed('backend', { name: 'c', load_balancer: lb }, [TAG]);
    const del = await rawRequest(sim.url, 'DELETE', `/_sim/objects/${lb}`);
    assert.equal(del.status, 204, 'out-of-band delete of the LB takes its backend along');
    assert.equal((await api('GET', `${RES}/${c}`)).status, 404);
    assert.equal((await api('GET', byTag(TAG))).status, 422);
    list = (await api('GET', RES)).json as { data: Json[]; total_items: number };
    assert.equal(list.total_items, 0);
  });

  test('resource list without tag_name lists every resource', async () => {
    const lb = await seed('loadbalancer', { name: 'lb' });
    await seed('backend', { name: 'be', load_balancer: lb });
    const list = (await api('GET', RES)).json as { total_items: number };
    assert.equal(list.total_items, 2);
  });
});
