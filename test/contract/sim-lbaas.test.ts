/**
 * (Longer than 300 lines: the LBaaS v1 contract in one place: shapes, lifecycle, lists and errors share one simulator
 * and the same shape helpers.)
 *
 * Contract tests of the simulator's LBaaS v1 API (docs/engine-api.md#lbaas-v1-objects) over raw HTTP: exact shapes,
 * lifecycle, paging, filters, auth and referential integrity.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type RunningSimulator, startSimulator } from '../../simulator/index';
import { rawRequest, type RawResponse, waitFor } from '../../simulator/testkit';

type Json = Record<string, unknown>;

const REF_KEYS = ['identifier', 'name'];
const COMMON = ['identifier', 'name', 'state', 'customer_identifier', 'reseller_identifier', 'automation_rules'];
const KEYS: Record<string, string[]> = {
  loadbalancer: [...COMMON, 'ip_address'],
  frontend: [...COMMON, 'load_balancer', 'default_backend', 'mode', 'client_timeout'],
  backend: [...COMMON, 'load_balancer', 'mode', 'health_check', 'server_timeout'],
  bind: [...COMMON, 'frontend', 'address', 'port', 'ssl', 'ssl_certificate_path'],
  server: [...COMMON, 'backend', 'ip', 'port', 'check'],
};

let sim: RunningSimulator;

/** Every response, errors included, must be JSON (or a bodiless 204). */
function assertJson(res: RawResponse): void {
  if (res.status === 204) {
    assert.equal(res.text, '');
    return;
  }
  assert.match(String(res.headers['content-type']), /^application\/json/, `content type of a ${res.status}`);
  assert.notEqual(res.text, '', `empty body on a ${res.status}`);
  assert.notEqual(res.json, undefined, 'body is JSON');
}

async function api(method: string, path: string, body?: unknown, token: string | null = 'dev-token'): Promise<RawResponse> {
  const res = await rawRequest(sim.url, method, path, { body, token });
  assertJson(res);
  return res;
}

const col = (kind: string): string => `/api/LBaaS/v1/${kind}.json`;

async function create(kind: string, body: Json): Promise<Json> {
  const res = await api('POST', col(kind), body);
  assert.equal(res.status, 200, res.text);
  return res.json as Json;
}

async function seedLb(name = 'lb'): Promise<string> {
  const res = await rawRequest(sim.url, 'POST', '/_sim/objects', { body: { kind: 'loadbalancer', fields: { name, ip_address: '192.0.2.1' } } });
  assert.equal(res.status, 201, res.text);
  return (res.json as { identifier: string }).identifier;
}

/** LB -> backend -> frontend -> bind, and a server on the backend. */
async function tree(): Promise<{ lb: string; be: string; fe: string; bind: string; srv: string }> {
  const lb = await seedLb();
  const be = (await create('backend', { name: 'http.x', mode: 'tcp', health_check: '"adv_check": "tcp-check"', load_balancer: lb })).identifier as string;
  const fe = (await create('frontend', { name: 'http.x', mode: 'tcp', load_balancer: lb, default_backend: be })).identifier as string;
  const bind = (await create('bind', { name: 'v4.http.x', address: '203.0.113.10', port: 80, frontend: fe })).identifier as string;
  const srv = (await create('server', { name: 'node-1.http.x', ip: '10.0.0.11', port: 30080, check: 'enabled', backend: be })).identifier as string;
  return { lb, be, fe, bind, srv };
}

async function getState(kind: string, id: string): Promise<string> {
  const res = await api('GET', `${col(kind)}/${id}`);
  return ((res.json as Json).state as { title: string }).title;
}

function assertState(obj: Json, id: string, title: string, type: number): void {
  assert.deepEqual(obj.state, { id, title, text: title, type });
  const s = obj.state as Json;
  assert.equal(typeof s.id, 'string');
  assert.equal(typeof s.type, 'number');
}

before(async () => {
  sim = await startSimulator({ port: 0, seed: 11, deployMs: { min: 20, max: 20 } });
});
after(async () => sim.close());
beforeEach(() => sim.reset());

describe('LBaaS v1 object shapes', () => {
  test('POST answers every field of 2.1 per kind, NewlyCreated, with references as {identifier,name} objects', async () => {
    const t = await tree();
    for (const [kind, id] of [['backend', t.be], ['frontend', t.fe], ['bind', t.bind], ['server', t.srv], ['loadbalancer', t.lb]] as const) {
      const obj = (await api('GET', `${col(kind)}/${id}`)).json as Json;
      assert.deepEqual(Object.keys(obj).sort(), [...(KEYS[kind] ?? [])].sort(), kind);
      assert.match(obj.identifier as string, /^[0-9a-f]{32}$/);
      assert.deepEqual(obj.automation_rules, []);
      assert.equal(typeof obj.customer_identifier, 'string');
      assert.equal(typeof obj.reseller_identifier, 'string');
    }
    const fe = (await api('GET', `${col('frontend')}/${t.fe}`)).json as Json;
    assert.deepEqual(fe.load_balancer, { identifier: t.lb, name: 'lb' });
    assert.deepEqual(fe.default_backend, { identifier: t.be, name: 'http.x' });
    assert.deepEqual(Object.keys(fe.load_balancer as Json), REF_KEYS);
    const srv = (await api('GET', `${col('server')}/${t.srv}`)).json as Json;
    assert.deepEqual(srv.backend, { identifier: t.be, name: 'http.x' });
    assert.equal(srv.port, 30080);
    const bind = (await api('GET', `${col('bind')}/${t.bind}`)).json as Json;
    assert.deepEqual(bind.frontend, { identifier: t.fe, name: 'http.x' });
    assert.equal(bind.ssl, false);

    const created = await create('server', { name: 'n2', ip: '10.0.0.12', port: 1, backend: t.be });
    assertState(created, '4', 'NewlyCreated', 2);
    assert.deepEqual(Object.keys(created).sort(), [...(KEYS.server ?? [])].sort());
  });

  test('every string field is echoed byte for byte (quotes, unicode, spaces, numeric strings)', async () => {
    const lb = await seedLb();
    const hc = '"adv_check": "tcp-check"\n  option  httpchk GET /health  ';
    const be = await create('backend', { name: ' Ünïcode.名前 "q" ', mode: 'http', health_check: hc, server_timeout: 30, load_balancer: lb });
    const fe = await create('frontend', { name: 'f\\e', mode: 'http', client_timeout: '50000', load_balancer: lb, default_backend: be.identifier });
    const bind = await create('bind', { name: 'b', address: '2001:DB8::10', port: 443, ssl: true, ssl_certificate_path: '/etc/x y.pem', frontend: fe.identifier });
    for (const [kind, sent, keys] of [
      ['backend', be, ['name', 'health_check']],
      ['frontend', fe, ['name', 'client_timeout']],
      ['bind', bind, ['address', 'ssl_certificate_path']],
    ] as const) {
      const got = (await api('GET', `${col(kind)}/${sent.identifier as string}`)).json as Json;
      for (const k of keys) assert.equal(got[k], sent[k], `${kind}.${k}`);
    }
    assert.equal(be.health_check, hc);
    assert.equal(be.name, ' Ünïcode.名前 "q" ');
    assert.equal(fe.client_timeout, '50000');
    assert.equal(bind.address, '2001:DB8::10');
  });
});

describe('LBaaS v1 lifecycle', () => {
  test('NewlyCreated becomes Deployed after the deploy delay', async () => {
    const lb = await seedLb();
    const be = await create('backend', { name: 'b', load_balancer: lb });
    assertState(be, '4', 'NewlyCreated', 2);
    await waitFor(async () => ((await getState('backend', be.identifier as string)) === 'Deployed' ? true : undefined));
    assertState((await api('GET', `${col('backend')}/${be.identifier as string}`)).json as Json, '3', 'Deployed', 1);
  });

  test('PUT with state "0" applies the fields, answers Updating, then becomes Updated', async () => {
    const lb = await seedLb();
    const be = await create('backend', { name: 'b', mode: 'tcp', load_balancer: lb });
    await waitFor(async () => ((await getState('backend', be.identifier as string)) === 'Deployed' ? true : undefined));
    const full = (await api('GET', `${col('backend')}/${be.identifier as string}`)).json as Json;
    const body = { ...full, load_balancer: lb, mode: 'http', health_check: 'x', state: '0', automation_rules: [], enable: true };
    const res = await api('PUT', `${col('backend')}/${be.identifier as string}`, body);
    assert.equal(res.status, 200, res.text);
    const put = res.json as Json;
    assertState(put, '0', 'Updating', 1);
    assert.equal(put.mode, 'http');
    assert.equal(put.health_check, 'x');
    assert.deepEqual(put.load_balancer, { identifier: lb, name: 'lb' });
    await waitFor(async () => ((await getState('backend', be.identifier as string)) === 'Updated' ? true : undefined));
  });

  test('deploymentError rate 1 ends deploys in DeploymentError; a PUT with state "0" redeploys the failed object', async () => {
    sim.setFaults({ rates: { deploymentError: 1 } });
    const lb = await seedLb();
    const be = await create('backend', { name: 'b', load_balancer: lb });
    const id = be.identifier as string;
    await waitFor(async () => ((await getState('backend', id)) === 'DeploymentError' ? true : undefined));
    assertState((await api('GET', `${col('backend')}/${id}`)).json as Json, '2', 'DeploymentError', 0);
    sim.setFaults({ rates: { deploymentError: 0 } });
    const res = await api('PUT', `${col('backend')}/${id}`, { name: 'b', load_balancer: lb, state: '0' });
    assertState(res.json as Json, '0', 'Updating', 1);
    await waitFor(async () => ((await getState('backend', id)) === 'Updated' ? true : undefined));
  });

  test('DELETE answers 200 {}; the object is gone (404) and a second DELETE is 404', async () => {
    const lb = await seedLb();
    const be = await create('backend', { name: 'b', load_balancer: lb });
    const del = await api('DELETE', `${col('backend')}/${be.identifier as string}`);
    assert.equal(del.status, 200);
    assert.deepEqual(del.json, {});
    assert.equal((await api('GET', `${col('backend')}/${be.identifier as string}`)).status, 404);
    assert.equal((await api('DELETE', `${col('backend')}/${be.identifier as string}`)).status, 404);
  });

  test('asynchronous delete: with deleteMs the object stays readable, leaves lists at once, then answers 404', async () => {
    sim.setFaults({ deleteMs: { min: 300, max: 300 } });
    const lb = await seedLb();
    const be = await create('backend', { name: 'b', load_balancer: lb });
    const id = be.identifier as string;
    assert.equal((await api('DELETE', `${col('backend')}/${id}`)).status, 200);
    assert.equal((await api('GET', `${col('backend')}/${id}`)).status, 200, 'still readable right after DELETE');
    const list = (await api('GET', `${col('backend')}?filters=${encodeURIComponent(`load_balancer=${lb}`)}`)).json as { data: { data: unknown[] } };
    assert.deepEqual(list.data.data, []);
    assert.equal((await api('DELETE', `${col('backend')}/${id}`)).status, 200, 'a repeated DELETE while deleting is still fine');
    await waitFor(async () => ((await api('GET', `${col('backend')}/${id}`)).status === 404 ? true : undefined));
    assert.equal((await api('DELETE', `${col('backend')}/${id}`)).status, 404, 'DELETE after the object is gone');
  });
});

describe('LBaaS v1 lists', () => {
  test('paging 25 items with limit 10: exact envelope keys, 10/10/5, then an empty page past the end', async () => {
    const lb = await seedLb();
    for (let i = 0; i < 25; i++) await create('backend', { name: `b${String(i).padStart(2, '0')}`, load_balancer: lb });
    const names: string[] = [];
    for (const [page, n] of [[1, 10], [2, 10], [3, 5], [4, 0], [9, 0]] as const) {
      const res = await api('GET', `${col('backend')}?page=${page}&limit=10`);
      assert.equal(res.status, 200);
      const env = res.json as { state: string; messages: unknown[]; data: Json & { data: Json[] } };
      assert.deepEqual(Object.keys(env).sort(), ['data', 'messages', 'state']);
      assert.equal(env.state, 'success');
      assert.deepEqual(env.messages, []);
      assert.deepEqual(Object.keys(env.data).sort(), ['data', 'limit', 'page', 'total_items', 'total_pages']);
      assert.deepEqual({ ...env.data, data: undefined }, { page, total_pages: 3, total_items: 25, limit: 10, data: undefined });
      assert.equal(env.data.data.length, n);
      for (const item of env.data.data) {
        assert.deepEqual(Object.keys(item), ['identifier', 'name']);
        names.push(item.name as string);
      }
    }
    assert.equal(new Set(names).size, 25, 'every item exactly once across pages');
    const def = (await api('GET', col('backend'))).json as { data: Json & { data: unknown[] } };
    assert.equal(def.data.limit, 10, 'default limit 10');
    assert.equal(def.data.page, 1);
    const big = (await api('GET', `${col('backend')}?limit=1000`)).json as { data: Json & { data: unknown[] } };
    assert.equal(big.data.limit, 100, 'limit capped at 100');
    assert.equal(big.data.data.length, 25);
  });

  test('filters: load_balancer, mode, both combined, the empty filters= and unknown filter keys', async () => {
    const lb1 = await seedLb('lb1');
    const lb2 = await seedLb('lb2');
    await create('backend', { name: 'a', mode: 'tcp', load_balancer: lb1 });
    await create('backend', { name: 'b', mode: 'http', load_balancer: lb1 });
    await create('backend', { name: 'c', mode: 'tcp', load_balancer: lb2 });
    const names = async (query: string): Promise<string[]> => {
      const res = await api('GET', `${col('backend')}${query}`);
      assert.equal(res.status, 200, res.text);
      return ((res.json as { data: { data: { name: string }[] } }).data.data.map((i) => i.name)).sort();
    };
    assert.deepEqual(await names(`?filters=load_balancer%3D${lb1}`), ['a', 'b']);
    assert.deepEqual(await names(`?filters=load_balancer%3D${lb1}%26mode%3Dtcp`), ['a']);
    assert.deepEqual(await names(`?page=1&filters=mode%3Dtcp&limit=10`), ['a', 'c']);
    assert.deepEqual(await names('?filters='), ['a', 'b', 'c']);
    assert.deepEqual(await names('?filters=&page=1&limit=10'), ['a', 'b', 'c']);
    assert.deepEqual(await names(`?filters=load_balancer%3D${'0'.repeat(32)}`), []);
    assert.deepEqual(await names(`?filters=${encodeURIComponent('name=b&load_balancer=' + lb1)}`), ['b']);
    assert.deepEqual(await names('?filters=nonsense%3D1'), ['a', 'b', 'c']);
  });

  test('bind lists filter by frontend and server lists by backend', async () => {
    const t = await tree();
    await create('server', { name: 'node-2', ip: '10.0.0.12', port: 30080, backend: t.be });
    const be2 = (await create('backend', { name: 'other', load_balancer: t.lb })).identifier as string;
    await create('server', { name: 'elsewhere', ip: '10.0.0.13', port: 1, backend: be2 });
    const srv = (await api('GET', `${col('server')}?filters=backend%3D${t.be}`)).json as { data: { total_items: number } };
    assert.equal(srv.data.total_items, 2);
    const binds = (await api('GET', `${col('bind')}?filters=frontend%3D${t.fe}`)).json as { data: { data: { identifier: string }[] } };
    assert.deepEqual(binds.data.data.map((b) => b.identifier), [t.bind]);
  });
});

describe('LBaaS v1 errors', () => {
  test('401 without a token, with a wrong token, and with the wrong scheme (JSON error body)', async () => {
    for (const token of [null, 'wrong']) {
      const res = await api('GET', col('backend'), undefined, token);
      assert.equal(res.status, 401);
      assert.equal(((res.json as Json).error as Json).code, 401);
    }
    const bearer = await rawRequest(sim.url, 'GET', col('backend'), { token: null, headers: { authorization: 'Bearer dev-token' } });
    assertJson(bearer);
    assert.equal(bearer.status, 401);
  });

  test('422 with the validation shape for a link to a missing object, to an object of the wrong kind, and missing fields', async () => {
    const lb = await seedLb();
    const missing = await api('POST', col('backend'), { name: 'b', load_balancer: 'f'.repeat(32) });
    assert.equal(missing.status, 422);
    const err = (missing.json as { error: Json }).error;
    assert.deepEqual(Object.keys(err).sort(), ['code', 'message', 'validation']);
    assert.equal(err.code, 422);
    assert.equal(typeof (err.validation as Json).load_balancer, 'string');

    const wrongKind = await api('POST', col('frontend'), { name: 'f', load_balancer: lb, default_backend: lb });
    assert.equal(wrongKind.status, 422);
    assert.deepEqual(Object.keys(((wrongKind.json as { error: Json }).error.validation as Json)), ['default_backend']);

    const noLinks = await api('POST', col('server'), { name: 's', port: 'eighty' });
    assert.equal(noLinks.status, 422);
    assert.deepEqual(Object.keys(((noLinks.json as { error: Json }).error.validation as Json)).sort(), ['backend', 'port']);

    const be = await create('backend', { name: 'b', load_balancer: lb });
    const badPut = await api('PUT', `${col('backend')}/${be.identifier as string}`, { name: 'b', load_balancer: '0'.repeat(32), state: '0' });
    assert.equal(badPut.status, 422);
    assert.notEqual(await getState('backend', be.identifier as string), 'Updating', 'a rejected PUT changes nothing');
  });

  test('409 when deleting a referenced object (backend with servers and a frontend, frontend with binds, LB with children)', async () => {
    const t = await tree();
    for (const [kind, id] of [['backend', t.be], ['frontend', t.fe], ['loadbalancer', t.lb]] as const) {
      const res = await api('DELETE', `${col(kind)}/${id}`);
      assert.equal(res.status, 409, kind);
      assert.equal(((res.json as Json).error as Json).code, 409);
    }
    for (const [kind, id] of [['bind', t.bind], ['server', t.srv], ['frontend', t.fe], ['backend', t.be], ['loadbalancer', t.lb]] as const) {
      assert.equal((await api('DELETE', `${col(kind)}/${id}`)).status, 200, `dependents first: ${kind}`);
    }
  });

  test('404 for unknown identifiers and for identifiers of another kind; 404/405 for unknown routes; 400 for bad JSON', async () => {
    const lb = await seedLb();
    assert.equal((await api('GET', `${col('backend')}/${'a'.repeat(32)}`)).status, 404);
    assert.equal((await api('PUT', `${col('backend')}/${'a'.repeat(32)}`, { name: 'x', state: '0' })).status, 404);
    assert.equal((await api('GET', `${col('backend')}/${lb}`)).status, 404, 'an LB is not a backend');
    assert.equal((await api('GET', '/api/LBaaS/v1/nothing.json')).status, 404);
    assert.equal((await api('GET', '/nowhere')).status, 404);
    const m = await api('PATCH', col('backend'), {});
    assert.equal(m.status, 405);
    assert.equal(m.headers.allow, 'GET, POST');
    assert.equal((await api('POST', `${col('backend')}/${lb}`, {})).status, 405);
    assert.equal((await api('POST', col('backend'), '{not json')).status, 400);
    assert.equal((await api('POST', col('backend'), '[]')).status, 400);
  });

  test('unknown request keys are ignored and links may also be given as {identifier} objects', async () => {
    const lb = await seedLb();
    const be = await create('backend', { identifier: 'ignored', customer_identifier: 'x', automation_rules: [1], enable: true, name: 'b', load_balancer: { identifier: lb, name: 'lb' } });
    assert.notEqual(be.identifier, 'ignored');
    assert.deepEqual(be.load_balancer, { identifier: lb, name: 'lb' });
  });
});
