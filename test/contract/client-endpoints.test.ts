/**
 * The Engine client against the simulator over real HTTP: every endpoint of docs/engine-api.md#lbaas-v1-objects and
 * docs/engine-api.md#core-resources-and-tags.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import {
  EngineClient,
  EngineNotFoundError,
  EngineValidationError,
  stateName,
  toUpdateBody,
  type EngineCreateBodyMap,
  type EngineObjectMap,
  type EngineResponseEvent,
  type LbaasKind,
} from '../../activities/engine';
import { startSimulator, type RunningSimulator } from '../../simulator/index';

const TOKEN = 'test-token';
const TAG = 'anxccm-svc-uid=0b5e3c1a-5d3f-4b8e-9e1d-2f0c6a7b8c9d';
const BACKEND_TYPE = { identifier: '33164a3066a04a52be43c607f0c5dd8c', name: 'Backend' };

let sim: RunningSimulator;
let client: EngineClient;
const events: EngineResponseEvent[] = [];

before(async () => {
  sim = await startSimulator({ port: 0, token: TOKEN, deployMs: { min: 20, max: 40 }, seed: 1 });
  client = new EngineClient({ baseUrl: sim.url, token: TOKEN, onResponse: (e) => events.push(e) });
});

after(async () => {
  await client.close();
  await sim.close();
});

beforeEach(async () => {
  await admin('POST', '/_sim/reset');
  events.length = 0;
});

/** The simulator's admin API (docs/engine-api.md#admin-api), over HTTP like any other user of it. */
async function admin<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${sim.url}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (res.status === 204 ? undefined : await res.json()) as T;
}

async function requestCounts(): Promise<Record<string, number>> {
  return (await admin<{ requests: Record<string, number> }>('GET', '/_sim/stats')).requests;
}

async function adminTags(id: string): Promise<string[]> {
  return (await admin<{ tags: string[] }>('GET', `/_sim/objects/${id}`)).tags;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls GET until the object leaves NewlyCreated/Updating (deployMs is 20-40 ms here). */
async function settled<K extends LbaasKind>(kind: K, id: string): Promise<EngineObjectMap[K]> {
  const deadline = Date.now() + 2_000;
  for (;;) {
    const object = await client.get(kind, id);
    const name = stateName(object.state);
    if (name !== 'NewlyCreated' && name !== 'Updating') return object;
    if (Date.now() > deadline) assert.fail(`${kind} ${id} still ${name} after 2 s`);
    await sleep(5);
  }
}

const LINKS: Record<LbaasKind, readonly string[]> = {
  loadbalancer: [],
  backend: ['load_balancer'],
  frontend: ['load_balancer', 'default_backend'],
  bind: ['frontend'],
  server: ['backend'],
};

interface Stack {
  ids: Record<LbaasKind, string>;
  bodies: { [K in LbaasKind]: EngineCreateBodyMap[K] };
  created: { [K in LbaasKind]: EngineObjectMap[K] };
  names: Map<string, string>;
}

/** One object of every kind, created through the client in dependency order. */
async function createStack(): Promise<Stack> {
  const names = new Map<string, string>();
  const loadbalancer = { name: 'lb-c', ip_address: '198.51.100.9' };
  const lb = await client.create('loadbalancer', loadbalancer);
  const backend = { name: 'http.web.default.prod', mode: 'tcp', health_check: '"adv_check": "tcp-check"', load_balancer: lb.identifier };
  const be = await client.create('backend', backend);
  const frontend = { name: 'http.web.default.prod', mode: 'tcp', load_balancer: lb.identifier, default_backend: be.identifier };
  const fe = await client.create('frontend', frontend);
  const bind = { name: 'v4.http.web.default.prod', frontend: fe.identifier, address: '198.51.100.9', port: 80, ssl: false };
  const bi = await client.create('bind', bind);
  const server = { name: 'node-1.http.web.default.prod', backend: be.identifier, ip: '10.0.0.5', port: 30080, check: 'enabled' };
  const sv = await client.create('server', server);
  for (const o of [lb, be, fe, bi, sv]) names.set(o.identifier, o.name);
  return {
    ids: { loadbalancer: lb.identifier, backend: be.identifier, frontend: fe.identifier, bind: bi.identifier, server: sv.identifier },
    bodies: { loadbalancer, backend, frontend, bind, server },
    created: { loadbalancer: lb, backend: be, frontend: fe, bind: bi, server: sv },
    names,
  };
}

const KINDS: readonly LbaasKind[] = ['loadbalancer', 'backend', 'frontend', 'bind', 'server'];

/** Every field sent is echoed exactly; every link comes back as the reference `{identifier, name}`. */
function assertEchoes(kind: LbaasKind, object: Record<string, unknown>, body: Record<string, unknown>, names: Map<string, string>): void {
  for (const [key, sent] of Object.entries(body)) {
    if (LINKS[kind].includes(key)) {
      assert.deepEqual(object[key], { identifier: sent, name: names.get(String(sent)) }, `${kind}.${key}`);
    } else {
      assert.equal(object[key], sent, `${kind}.${key}`);
    }
  }
}

describe('LBaaS objects of all five kinds', () => {
  test('create answers each kind in NewlyCreated with every field echoed and links as references, then it settles to Deployed', async () => {
    const stack = await createStack();
    for (const kind of KINDS) {
      const object = stack.created[kind];
      assert.deepEqual(object.state, { id: '4', title: 'NewlyCreated', text: 'NewlyCreated', type: 2 }, kind);
      assertEchoes(kind, object, { ...stack.bodies[kind] }, stack.names);
      assert.match(object.identifier, /^[0-9a-f]{32}$/);
    }
    for (const kind of KINDS) {
      assert.deepEqual((await settled(kind, stack.ids[kind])).state, { id: '3', title: 'Deployed', text: 'Deployed', type: 1 }, kind);
    }
    assert.deepEqual(
      events.filter((e) => e.method === 'POST').map((e) => [e.resource, e.status]),
      KINDS.map((k) => [k, 200]),
    );
  });

  test('get returns each kind with the fields it was created with', async () => {
    const stack = await createStack();
    for (const kind of KINDS) {
      const object = await client.get(kind, stack.ids[kind]);
      assert.deepEqual({ ...object, state: null }, { ...stack.created[kind], state: null }, kind);
    }
  });

  test('list returns the objects of each kind, filtered by their parent link where the kind has one', async () => {
    const stack = await createStack();
    const { ids, names } = stack;
    const item = (kind: LbaasKind) => ({ identifier: ids[kind], name: names.get(ids[kind]) });
    assert.deepEqual(await client.list('loadbalancer'), [item('loadbalancer')]);
    assert.deepEqual(await client.list('backend', { filters: { load_balancer: ids.loadbalancer, mode: 'tcp' } }), [item('backend')]);
    assert.deepEqual(await client.list('backend', { filters: { load_balancer: ids.loadbalancer, mode: 'http' } }), []);
    assert.deepEqual(await client.list('frontend', { filters: { load_balancer: ids.loadbalancer } }), [item('frontend')]);
    assert.deepEqual(await client.list('bind', { filters: { frontend: ids.frontend } }), [item('bind')]);
    assert.deepEqual(await client.list('server', { filters: { backend: ids.backend } }), [item('server')]);
    assert.deepEqual(await client.list('server', { filters: { backend: 'f'.repeat(32) } }), []);
  });

  test('update PUTs each kind with a changed field: Updating at once, Updated once the deploy settles', async () => {
    const stack = await createStack();
    const changes: { [K in LbaasKind]: Partial<EngineCreateBodyMap[K]> } = {
      loadbalancer: { ip_address: '198.51.100.10' },
      backend: { health_check: '"adv_check": "httpchk GET /healthz"' },
      frontend: { client_timeout: '60000' },
      bind: { port: 8080 },
      server: { check: 'disabled' },
    };
    for (const kind of KINDS) {
      const current = await settled(kind, stack.ids[kind]);
      const body = { ...toUpdateBody(kind, current as never), ...changes[kind] };
      const updated = await client.update(kind, stack.ids[kind], body as never);
      assert.deepEqual(updated.state, { id: '0', title: 'Updating', text: 'Updating', type: 1 }, kind);
      assertEchoes(kind, updated, changes[kind], stack.names);
      const after = await settled(kind, stack.ids[kind]);
      assert.equal(stateName(after.state), 'Updated', kind);
      assertEchoes(kind, after, changes[kind], stack.names);
    }
  });

  test('delete removes each kind, children first; GET then fails with EngineNotFoundError', async () => {
    const stack = await createStack();
    for (const kind of ['server', 'bind', 'frontend', 'backend', 'loadbalancer'] as const) {
      await client.delete(kind, stack.ids[kind]);
      await assert.rejects(client.get(kind, stack.ids[kind]), EngineNotFoundError);
    }
    assert.deepEqual(await admin('GET', '/_sim/objects'), { objects: [] });
  });

  test('list reads 25 servers with limit 10 in exactly 3 page requests', async () => {
    const { ids } = await createStack();
    const created = [];
    for (let i = 0; i < 24; i++) {
      created.push(await client.create('server', { name: `s${i}`, backend: ids.backend, ip: `10.0.1.${i}`, port: 80 }));
    }
    await admin('POST', '/_sim/stats/reset');
    const listed = await client.list('server', { filters: { backend: ids.backend }, limit: 10 });
    assert.equal(listed.length, 25);
    assert.equal(new Set(listed.map((s) => s.identifier)).size, 25);
    for (const s of created) assert.ok(listed.some((l) => l.identifier === s.identifier));
    assert.equal((await requestCounts())['GET /api/LBaaS/v1/server.json'], 3);
  });
});

describe('Core resources and tags', () => {
  test('tag stores a tag containing = exactly; getResource shows it by name with the resource type', async () => {
    const { ids } = await createStack();
    await client.tag(ids.backend, TAG);
    assert.deepEqual(await adminTags(ids.backend), [TAG]);
    const resource = await client.getResource(ids.backend);
    assert.deepEqual({ ...resource, createdAt: typeof resource.createdAt, updatedAt: typeof resource.updatedAt }, {
      identifier: ids.backend,
      name: 'http.web.default.prod',
      type: BACKEND_TYPE,
      tags: [TAG],
      createdAt: 'string',
      updatedAt: 'string',
    });
  });

  test('listResourcesByTag finds exactly the tagged objects, and untag removes the tag', async () => {
    const { ids } = await createStack();
    await client.tag(ids.backend, TAG);
    await client.tag(ids.server, TAG);
    await client.tag(ids.frontend, 'other=tag');
    const tagged = await client.listResourcesByTag(TAG);
    assert.deepEqual(tagged.map((r) => r.identifier).sort(), [ids.backend, ids.server].sort());
    await client.untag(ids.backend, TAG);
    assert.deepEqual(await adminTags(ids.backend), []);
    assert.deepEqual((await client.listResourcesByTag(TAG)).map((r) => r.identifier), [ids.server]);
  });

  test('listResourcesByTag of a tag nobody carries is empty (the Engine answers 422)', async () => {
    await createStack();
    events.length = 0;
    assert.deepEqual(await client.listResourcesByTag(TAG), []);
    assert.deepEqual(events.map((e) => [e.resource, e.method, e.status]), [['resource', 'GET', 422]]);
  });

  test('listResourcesByTag reads 25 tagged objects with limit 10 in exactly 3 page requests', async () => {
    const { ids } = await createStack();
    for (let i = 0; i < 25; i++) {
      await admin('POST', '/_sim/objects', { kind: 'server', fields: { name: `t${i}`, backend: ids.backend, ip: '10.0.2.1', port: 80 }, tags: [TAG] });
    }
    await admin('POST', '/_sim/stats/reset');
    const tagged = await client.listResourcesByTag(TAG, { limit: 10 });
    assert.equal(tagged.length, 25);
    assert.equal(new Set(tagged.map((t) => t.identifier)).size, 25);
    assert.equal((await requestCounts())['GET /api/core/v1/resource.json'], 3);
  });

  test('tagging twice fails with EngineValidationError (422), untagging twice with EngineNotFoundError', async () => {
    const { ids } = await createStack();
    await client.tag(ids.bind, TAG);
    await assert.rejects(client.tag(ids.bind, TAG), (err: unknown) => {
      assert.ok(err instanceof EngineValidationError);
      assert.equal(err.message, `POST /api/core/v1/resource.json/${ids.bind}/tags/${TAG}: 422 Unprocessable Entity: tag: Already tagged.`);
      assert.equal(err.engineMessage, `Resource ${ids.bind} is already tagged "${TAG}".`);
      return true;
    });
    await client.untag(ids.bind, TAG);
    await assert.rejects(client.untag(ids.bind, TAG), (err: unknown) => {
      assert.ok(err instanceof EngineNotFoundError);
      assert.equal(err.message, `DELETE /api/core/v1/resource.json/${ids.bind}/tags/${TAG}: 404 Not Found: Resource ${ids.bind} is not tagged "${TAG}".`);
      return true;
    });
  });
});
