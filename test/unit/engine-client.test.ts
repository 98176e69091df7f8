import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { describe, test } from 'node:test';
import { MockAgent } from 'undici';
import {
  EngineClient,
  EngineNetworkError,
  EngineProtocolError,
  MAX_PAGES,
  toUpdateBody,
  type EngineClientOptions,
  type EngineResponseEvent,
} from '../../activities/engine';

const ORIGIN = 'http://engine.test';
const TOKEN = 'unit-secret-token-5f2c';

const LB_ID = '1'.repeat(32);
const BACKEND_ID = 'b'.repeat(32);
const FRONTEND_ID = 'f'.repeat(32);
const BIND_ID = 'd'.repeat(32);
const SERVER_ID = 'e'.repeat(32);
const TAG = 'anxccm-svc-uid=0b5e3c1a-5d3f-4b8e-9e1d-2f0c6a7b8c9d';

const DEPLOYED = { id: '3', title: 'Deployed', text: 'Deployed', type: 1 };
const COMMON = { customer_identifier: 'cust', reseller_identifier: 'resl', automation_rules: [] };

const BACKEND = {
  identifier: BACKEND_ID,
  name: 'http.web.default.prod',
  state: DEPLOYED,
  ...COMMON,
  load_balancer: { identifier: LB_ID, name: 'lb-1' },
  mode: 'tcp',
  health_check: '"adv_check": "tcp-check"',
  server_timeout: 30,
};
const FRONTEND = {
  identifier: FRONTEND_ID,
  name: 'http.web.default.prod',
  state: DEPLOYED,
  ...COMMON,
  load_balancer: { identifier: LB_ID, name: 'lb-1' },
  default_backend: { identifier: BACKEND_ID, name: 'http.web.default.prod' },
  mode: 'tcp',
  client_timeout: '50000',
};
const BIND = {
  identifier: BIND_ID,
  name: 'v4.http.web.default.prod',
  state: DEPLOYED,
  ...COMMON,
  frontend: { identifier: FRONTEND_ID, name: 'http.web.default.prod' },
  address: '192.0.2.10',
  port: 80,
  ssl: false,
  ssl_certificate_path: '',
};
const SERVER = {
  identifier: SERVER_ID,
  name: 'node-1.http.web.default.prod',
  state: DEPLOYED,
  ...COMMON,
  backend: { identifier: BACKEND_ID, name: 'http.web.default.prod' },
  ip: '10.0.0.5',
  port: 30080,
  check: 'enabled',
};
const LOADBALANCER = { identifier: LB_ID, name: 'lb-1', state: DEPLOYED, ...COMMON, ip_address: '192.0.2.10' };

interface Seen {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | null;
}

interface Reply {
  status: number;
  /** Sent as is when a string, JSON-encoded (with a JSON content type) otherwise. */
  body?: unknown;
  headers?: Record<string, string>;
  delayMs?: number;
}

const JSON_HEADERS = { 'content-type': 'application/json' };

/** A client on a MockAgent whose replies are queued in request order and whose requests are recorded as sent. */
function harness(options: Partial<EngineClientOptions> = {}) {
  const agent = new MockAgent();
  agent.disableNetConnect();
  const pool = agent.get(ORIGIN);
  const seen: Seen[] = [];
  const events: EngineResponseEvent[] = [];
  const client = new EngineClient({
    baseUrl: ORIGIN,
    token: TOKEN,
    dispatcher: agent,
    onResponse: (e) => events.push(e),
    ...options,
  });
  const reply = (r: Reply | ((seen: Seen) => Reply), times = 1): void => {
    const scope = pool.intercept({ path: () => true, method: () => true }).reply((req) => {
      const request: Seen = {
        method: req.method,
        path: req.path,
        headers: { ...(req.headers as Record<string, string>) },
        body: typeof req.body === 'string' ? req.body : null,
      };
      seen.push(request);
      const { status, body, headers } = typeof r === 'function' ? r(request) : r;
      const raw = typeof body === 'string' || body === undefined;
      return {
        statusCode: status,
        data: raw ? (body ?? '') : JSON.stringify(body),
        responseOptions: { headers: headers ?? (raw ? {} : JSON_HEADERS) },
      };
    });
    if (times > 1) scope.times(times);
    if (typeof r !== 'function' && r.delayMs !== undefined) scope.delay(r.delayMs);
  };
  const done = async (): Promise<void> => {
    agent.assertNoPendingInterceptors();
    await agent.close();
  };
  return { agent, client, seen, events, reply, done };
}

const page = (n: number, totalPages: number, items: { identifier: string; name: string }[]) => ({
  state: 'success',
  messages: [],
  data: { page: n, total_pages: totalPages, total_items: items.length, limit: 100, data: items },
});
const ref = (i: number) => ({ identifier: i.toString(16).padStart(32, '0'), name: `obj-${i}` });

describe('EngineClient reads LBaaS objects', () => {
  test('get sends GET <kind>.json/<id> with the Token authorization and returns the typed object with Engine field names', async () => {
    const h = harness();
    h.reply({ status: 200, body: { ...BACKEND, future_field: 'ignored' } });
    const backend = await h.client.get('backend', BACKEND_ID);
    assert.deepEqual(backend, BACKEND);
    assert.equal(h.seen.length, 1);
    assert.equal(h.seen[0]?.method, 'GET');
    assert.equal(h.seen[0]?.path, `/api/LBaaS/v1/backend.json/${BACKEND_ID}`);
    assert.equal(h.seen[0]?.headers.authorization, `Token ${TOKEN}`);
    assert.equal(h.seen[0]?.headers.accept, 'application/json');
    await h.done();
  });

  const kinds = [
    ['loadbalancer', LOADBALANCER],
    ['frontend', FRONTEND],
    ['bind', BIND],
    ['server', SERVER],
  ] as const;
  for (const [kind, object] of kinds) {
    test(`get('${kind}') parses the ${kind} shape of docs/engine-api.md#object-fields unchanged`, async () => {
      const h = harness();
      h.reply({ status: 200, body: object });
      assert.deepEqual(await h.client.get(kind, object.identifier), object);
      assert.equal(h.seen[0]?.path, `/api/LBaaS/v1/${kind}.json/${object.identifier}`);
      await h.done();
    });
  }

  test('a state without title takes its title from text, and one with title only has no text', async () => {
    const h = harness();
    h.reply({ status: 200, body: { ...BACKEND, state: { id: '4', text: 'NewlyCreated', type: 2 } } });
    h.reply({ status: 200, body: { ...BACKEND, state: { id: '0', title: 'Updating', type: 1 } } });
    assert.deepEqual((await h.client.get('backend', BACKEND_ID)).state, { id: '4', title: 'NewlyCreated', text: 'NewlyCreated', type: 2 });
    assert.deepEqual((await h.client.get('backend', BACKEND_ID)).state, { id: '0', title: 'Updating', type: 1 });
    await h.done();
  });

  test('a base path prefix of baseUrl is kept in front of every endpoint path and in error paths', async () => {
    const h = harness({ baseUrl: `${ORIGIN}/proxy/engine/` });
    h.reply({ status: 200, body: BACKEND });
    h.reply({ status: 200, body: { page: 1, total_pages: 1, total_items: 0, limit: 100, data: [] } });
    h.reply({ status: 404, body: { error: { code: 404, message: 'not found' } } });
    await h.client.get('backend', BACKEND_ID);
    await h.client.listResourcesByTag('a=b');
    await assert.rejects(h.client.tag(BACKEND_ID, 'a=b'), {
      message: `POST /proxy/engine/api/core/v1/resource.json/${BACKEND_ID}/tags/a=b: 404 Not Found: not found`,
    });
    assert.deepEqual(
      h.seen.map((s) => s.path),
      [
        `/proxy/engine/api/LBaaS/v1/backend.json/${BACKEND_ID}`,
        '/proxy/engine/api/core/v1/resource.json?tag_name=a%3Db&page=1&limit=100',
        `/proxy/engine/api/core/v1/resource.json/${BACKEND_ID}/tags/a=b`,
      ],
    );
    await h.done();
  });
});

describe('EngineClient lists over pages', () => {
  test('list requests page 1.. with limit 100 and stops on the first empty page even when total_pages says more', async () => {
    const h = harness();
    h.reply({ status: 200, body: page(1, 5, [ref(1), ref(2)]) });
    h.reply({ status: 200, body: page(2, 5, [ref(3)]) });
    h.reply({ status: 200, body: page(3, 5, []) });
    assert.deepEqual(await h.client.list('backend'), [ref(1), ref(2), ref(3)]);
    assert.deepEqual(
      h.seen.map((s) => s.path),
      [1, 2, 3].map((n) => `/api/LBaaS/v1/backend.json?page=${n}&limit=100`),
    );
    await h.done();
  });

  test('list stops after total_pages even when the server would keep answering items', async () => {
    const h = harness();
    h.reply({ status: 200, body: page(1, 2, [ref(1)]) });
    h.reply({ status: 200, body: page(2, 2, [ref(2)]) });
    assert.deepEqual(await h.client.list('server'), [ref(1), ref(2)]);
    assert.equal(h.seen.length, 2);
    await h.done();
  });

  test(`list fails with EngineProtocolError after ${MAX_PAGES} pages that neither end nor run empty`, async () => {
    const h = harness();
    let n = 0;
    h.reply(() => {
      n += 1;
      return { status: 200, body: page(n, 1_000_000, [ref(n)]) };
    }, MAX_PAGES);
    await assert.rejects(h.client.list('bind'), (err: unknown) => {
      assert.ok(err instanceof EngineProtocolError);
      assert.equal(
        err.message,
        `GET /api/LBaaS/v1/bind.json?page=${MAX_PAGES}&limit=100: 200 OK: list does not end: total_pages 1000000 after ${MAX_PAGES} pages`,
      );
      return true;
    });
    assert.equal(h.seen.length, MAX_PAGES);
    await h.done();
  });

  test('list returns each identifier once when an item shifts onto the next page while paging', async () => {
    const h = harness();
    h.reply({ status: 200, body: page(1, 2, [ref(1), ref(2)]) });
    h.reply({ status: 200, body: page(2, 2, [ref(2), ref(3)]) });
    assert.deepEqual(await h.client.list('frontend'), [ref(1), ref(2), ref(3)]);
    await h.done();
  });

  test('list form-encodes filters into one filters parameter and honours limit', async () => {
    const h = harness();
    h.reply({ status: 200, body: page(1, 1, [ref(1)]) });
    await h.client.list('backend', { filters: { load_balancer: LB_ID, mode: 'tcp' }, limit: 10 });
    assert.equal(h.seen[0]?.path, `/api/LBaaS/v1/backend.json?filters=load_balancer%3D${LB_ID}%26mode%3Dtcp&page=1&limit=10`);
    const query = new URLSearchParams(h.seen[0]?.path.split('?')[1]);
    assert.deepEqual(Object.fromEntries(new URLSearchParams(query.get('filters') ?? '')), { load_balancer: LB_ID, mode: 'tcp' });
    await h.done();
  });

  test('list rejects a limit outside 1..100 before sending anything', async () => {
    const h = harness();
    await assert.rejects(h.client.list('backend', { limit: 101 }), new TypeError('limit must be an integer from 1 to 100, got 101'));
    await assert.rejects(h.client.list('backend', { limit: 0 }), new TypeError('limit must be an integer from 1 to 100, got 0'));
    assert.equal(h.seen.length, 0);
    await h.done();
  });

  test('list fails with EngineProtocolError naming the field when an item lacks its identifier', async () => {
    const h = harness();
    h.reply({ status: 200, body: page(1, 1, [{ name: 'x' } as never]) });
    await assert.rejects(h.client.list('backend'), {
      name: 'EngineProtocolError',
      message:
        'GET /api/LBaaS/v1/backend.json?page=1&limit=100: 200 OK: response does not match the backend list schema: ' +
        'data.data.0.identifier: Invalid input: expected string, received undefined',
    });
    await h.done();
  });
});

describe('EngineClient Core resources and tags', () => {
  test('listResourcesByTag reads the flat envelope over all pages with tag_name form-encoded', async () => {
    const h = harness();
    const flat = (n: number, items: { identifier: string; name: string }[]) => ({ page: n, total_pages: 2, total_items: 3, limit: 100, data: items });
    h.reply({ status: 200, body: flat(1, [ref(1), ref(2)]) });
    h.reply({ status: 200, body: flat(2, [ref(3)]) });
    assert.deepEqual(await h.client.listResourcesByTag(TAG), [ref(1), ref(2), ref(3)]);
    assert.deepEqual(
      h.seen.map((s) => s.path),
      [1, 2].map((n) => `/api/core/v1/resource.json?tag_name=${encodeURIComponent(TAG)}&page=${n}&limit=100`),
    );
    await h.done();
  });

  test('listResourcesByTag treats the 422 the Engine answers for an unused tag as an empty list', async () => {
    const h = harness();
    h.reply({ status: 422, body: { error: { code: 422, message: 'tag not found' } } });
    assert.deepEqual(await h.client.listResourcesByTag(TAG), []);
    assert.equal(h.seen.length, 1);
    assert.deepEqual(h.events.map((e) => [e.resource, e.method, e.status]), [['resource', 'GET', 422]]);
    await h.done();
  });

  test('listResourcesByTag does not swallow other errors on page 1', async () => {
    const h = harness();
    h.reply({ status: 400, body: { error: { code: 400, message: 'bad tag_name' } } });
    await assert.rejects(h.client.listResourcesByTag(TAG), { name: 'EngineValidationError', status: 400 });
    await h.done();
  });

  test('getResource maps resource_type to type, tag objects to names and the timestamps to camelCase', async () => {
    const h = harness();
    h.reply({
      status: 200,
      body: {
        identifier: BACKEND_ID,
        name: 'http.web.default.prod',
        resource_type: { identifier: '33164a3066a04a52be43c607f0c5dd8c', name: 'Backend' },
        tags: [{ identifier: '9'.repeat(32), name: TAG }],
        created_at: '2024-01-02T03:04:05Z',
        updated_at: '2024-01-02T03:04:06Z',
        attributes: [],
      },
    });
    assert.deepEqual(await h.client.getResource(BACKEND_ID), {
      identifier: BACKEND_ID,
      name: 'http.web.default.prod',
      type: { identifier: '33164a3066a04a52be43c607f0c5dd8c', name: 'Backend' },
      tags: [TAG],
      createdAt: '2024-01-02T03:04:05Z',
      updatedAt: '2024-01-02T03:04:06Z',
    });
    assert.equal(h.seen[0]?.path, `/api/core/v1/resource.json/${BACKEND_ID}`);
    await h.done();
  });

  test('tag POSTs the JSON body "" to .../tags/<tag> with = kept literally in the path; untag DELETEs the same path', async () => {
    const h = harness();
    h.reply({ status: 200, body: {} });
    h.reply({ status: 204 });
    await h.client.tag(BACKEND_ID, TAG);
    await h.client.untag(BACKEND_ID, TAG);
    const path = `/api/core/v1/resource.json/${BACKEND_ID}/tags/${TAG}`;
    assert.ok(path.includes('anxccm-svc-uid=0b5e3c1a'));
    assert.deepEqual(
      h.seen.map((s) => [s.method, s.path, s.body]),
      [
        ['POST', path, '""'],
        ['DELETE', path, null],
      ],
    );
    assert.equal(h.seen[0]?.headers['content-type'], 'application/json');
    assert.deepEqual(h.events.map((e) => [e.resource, e.method, e.status]), [
      ['tag', 'POST', 200],
      ['tag', 'DELETE', 204],
    ]);
    await h.done();
  });

  test('tag escapes characters that would break the path but not =', async () => {
    const h = harness();
    h.reply({ status: 200, body: {} });
    await h.client.tag(BACKEND_ID, 'a=b/c d?e');
    assert.equal(h.seen[0]?.path, `/api/core/v1/resource.json/${BACKEND_ID}/tags/a=b%2Fc%20d%3Fe`);
    await h.done();
  });
});

describe('EngineClient writes LBaaS objects', () => {
  test('create POSTs the body with links as bare ids and returns the object as answered', async () => {
    const h = harness();
    const created = { ...BACKEND, state: { id: '4', title: 'NewlyCreated', text: 'NewlyCreated', type: 2 } };
    h.reply({ status: 201, body: created });
    const body = { name: 'http.web.default.prod', mode: 'tcp', health_check: '"adv_check": "tcp-check"', load_balancer: LB_ID };
    assert.deepEqual(await h.client.create('backend', body), created);
    assert.equal(h.seen[0]?.method, 'POST');
    assert.equal(h.seen[0]?.path, '/api/LBaaS/v1/backend.json');
    assert.equal(h.seen[0]?.headers['content-type'], 'application/json');
    assert.equal(h.seen[0]?.body, JSON.stringify(body));
    await h.done();
  });

  test('update PUTs the object as read (toUpdateBody) with links as bare ids and state "0"', async () => {
    const h = harness();
    h.reply({ status: 200, body: { ...FRONTEND, state: { id: '0', title: 'Updating', text: 'Updating', type: 1 } } });
    const updated = await h.client.update('frontend', FRONTEND_ID, toUpdateBody('frontend', FRONTEND));
    assert.equal(updated.state.id, '0');
    assert.equal(h.seen[0]?.method, 'PUT');
    assert.equal(h.seen[0]?.path, `/api/LBaaS/v1/frontend.json/${FRONTEND_ID}`);
    assert.deepEqual(JSON.parse(h.seen[0]?.body ?? 'null'), {
      identifier: FRONTEND_ID,
      name: 'http.web.default.prod',
      ...COMMON,
      load_balancer: LB_ID,
      default_backend: BACKEND_ID,
      mode: 'tcp',
      client_timeout: '50000',
      state: '0',
    });
    await h.done();
  });

  test('update adds state "0" to a body without state and keeps an explicit one', async () => {
    const h = harness();
    h.reply({ status: 200, body: SERVER });
    h.reply({ status: 200, body: SERVER });
    const body = { name: 'n', backend: BACKEND_ID, ip: '10.0.0.5', port: 30080, check: 'enabled' };
    await h.client.update('server', SERVER_ID, body);
    await h.client.update('server', SERVER_ID, { ...body, state: '1' });
    assert.deepEqual(JSON.parse(h.seen[0]?.body ?? 'null'), { ...body, state: '0' });
    assert.deepEqual(JSON.parse(h.seen[1]?.body ?? 'null'), { ...body, state: '1' });
    await h.done();
  });

  test('delete accepts 200 with {} and 204 without a body', async () => {
    const h = harness();
    h.reply({ status: 200, body: {} });
    h.reply({ status: 204 });
    await h.client.delete('bind', BIND_ID);
    await h.client.delete('bind', BIND_ID);
    assert.deepEqual(
      h.seen.map((s) => [s.method, s.path]),
      [
        ['DELETE', `/api/LBaaS/v1/bind.json/${BIND_ID}`],
        ['DELETE', `/api/LBaaS/v1/bind.json/${BIND_ID}`],
      ],
    );
    await h.done();
  });

  test('an unknown kind or an empty identifier is a TypeError before any request', async () => {
    const h = harness();
    await assert.rejects(h.client.get('pool' as never, 'x'), new TypeError('unknown LBaaS kind "pool"; expected one of loadbalancer, backend, frontend, bind, server'));
    await assert.rejects(h.client.get('backend', ''), new TypeError('identifier must be a non-empty string'));
    await assert.rejects(h.client.tag(BACKEND_ID, ''), new TypeError('tag must be a non-empty string'));
    assert.equal(h.seen.length, 0);
    await h.done();
  });
});

describe('EngineClient rejects responses it cannot use', () => {
  const path = `/api/LBaaS/v1/backend.json/${BACKEND_ID}`;
  const cases: { name: string; reply: Reply; message: string }[] = [
    {
      name: 'a state id sent as a number',
      reply: { status: 200, body: { ...BACKEND, state: { ...DEPLOYED, id: 3 } } },
      message: `GET ${path}: 200 OK: response does not match the backend schema: state.id: Invalid input: expected string, received number`,
    },
    {
      name: 'a link sent as a bare id instead of a reference object',
      reply: { status: 200, body: { ...BACKEND, load_balancer: LB_ID } },
      message: `GET ${path}: 200 OK: response does not match the backend schema: load_balancer: Invalid input: expected object, received string`,
    },
    {
      name: 'a missing state',
      reply: { status: 200, body: { ...BACKEND, state: undefined } },
      message: `GET ${path}: 200 OK: response does not match the backend schema: state: Invalid input: expected object, received undefined`,
    },
    {
      name: 'an HTML page with status 200',
      reply: { status: 200, body: '<html>login</html>', headers: { 'content-type': 'text/html; charset=utf-8' } },
      message: `GET ${path}: 200 OK: response is not JSON (content-type text/html; charset=utf-8)`,
    },
    {
      name: 'a body without content type',
      reply: { status: 200, body: '{}', headers: {} },
      message: `GET ${path}: 200 OK: response is not JSON (content-type missing)`,
    },
    {
      name: 'a JSON content type with a broken body',
      reply: { status: 200, body: '{"identifier":', headers: JSON_HEADERS },
      message: `GET ${path}: 200 OK: response body is not valid JSON`,
    },
    {
      name: 'a JSON content type with an empty body',
      reply: { status: 200, body: '', headers: JSON_HEADERS },
      message: `GET ${path}: 200 OK: response body is empty`,
    },
  ];
  for (const c of cases) {
    test(`get fails with EngineProtocolError on ${c.name}`, async () => {
      const h = harness();
      h.reply(c.reply);
      await assert.rejects(h.client.get('backend', BACKEND_ID), (err: unknown) => {
        assert.ok(err instanceof EngineProtocolError);
        assert.equal(err.message, c.message);
        assert.equal(err.status, 200);
        assert.equal(err.retryable, false);
        return true;
      });
      await h.done();
    });
  }
});

describe('EngineClient deadlines and metrics', () => {
  test('a response slower than requestTimeoutMs fails with a retryable EngineNetworkError (code TIMEOUT)', async () => {
    const h = harness({ requestTimeoutMs: 50 });
    h.reply({ status: 200, body: BACKEND, delayMs: 2_000 });
    const started = Date.now();
    await assert.rejects(h.client.get('backend', BACKEND_ID), (err: unknown) => {
      assert.ok(err instanceof EngineNetworkError);
      assert.equal(err.message, `GET /api/LBaaS/v1/backend.json/${BACKEND_ID}: network error: timed out after 50 ms`);
      assert.equal(err.code, 'TIMEOUT');
      assert.equal(err.status, null);
      assert.equal(err.retryable, true);
      return true;
    });
    assert.ok(Date.now() - started < 1_000, 'the client gave up at its deadline, not when the reply came');
    assert.deepEqual(h.events.map((e) => [e.resource, e.method, e.status]), [['backend', 'GET', 'error']]);
    await h.agent.close();
  });

  test('onResponse gets one event per HTTP request with resource, method, status and a duration', async () => {
    const h = harness();
    h.reply({ status: 200, body: page(1, 2, [ref(1)]) });
    h.reply({ status: 200, body: page(2, 2, [ref(2)]) });
    h.reply({ status: 404, body: {} });
    h.reply({ status: 200, body: {} });
    await h.client.list('server');
    await assert.rejects(h.client.getResource(SERVER_ID));
    await h.client.tag(SERVER_ID, TAG);
    assert.deepEqual(h.events.map((e) => [e.resource, e.method, e.status]), [
      ['server', 'GET', 200],
      ['server', 'GET', 200],
      ['resource', 'GET', 404],
      ['tag', 'POST', 200],
    ]);
    for (const e of h.events) assert.ok(e.durationMs >= 0 && Number.isFinite(e.durationMs));
    await h.done();
  });

  test('an onResponse callback that throws does not fail the call', async () => {
    const h = harness({
      onResponse: () => {
        throw new Error('metrics broke');
      },
    });
    h.reply({ status: 200, body: BACKEND });
    assert.equal((await h.client.get('backend', BACKEND_ID)).identifier, BACKEND_ID);
    await h.done();
  });
});

describe('EngineClient lifecycle and options', () => {
  test('close leaves a dispatcher passed in open and rejects later calls', async () => {
    const h = harness();
    await h.client.close();
    await h.client.close();
    await assert.rejects(h.client.get('backend', BACKEND_ID), new Error('EngineClient is closed'));
    h.reply({ status: 200, body: BACKEND });
    const other = new EngineClient({ baseUrl: ORIGIN, token: TOKEN, dispatcher: h.agent });
    assert.equal((await other.get('backend', BACKEND_ID)).identifier, BACKEND_ID);
    await h.done();
  });

  test('close closes the keep-alive connections of the client-owned pool', async () => {
    const sockets: Socket[] = [];
    const server = createServer((_req, res) => {
      res.writeHead(200, JSON_HEADERS).end(JSON.stringify(BACKEND));
    });
    server.on('connection', (socket) => sockets.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const client = new EngineClient({ baseUrl: `http://127.0.0.1:${port}`, token: TOKEN, connections: 2 });
      await client.get('backend', BACKEND_ID);
      assert.equal(sockets.length, 1);
      const closed = new Promise<void>((resolve) => sockets[0]?.once('close', () => resolve()));
      await client.close();
      await closed;
      await assert.rejects(client.get('backend', BACKEND_ID), new Error('EngineClient is closed'));
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  const invalid: [string, Partial<EngineClientOptions>, string][] = [
    ['a relative baseUrl', { baseUrl: '/api' }, 'baseUrl must be an absolute http(s) URL, got "/api"'],
    ['a non-http baseUrl', { baseUrl: 'ftp://engine' }, 'baseUrl must be an absolute http(s) URL, got "ftp://engine"'],
    ['credentials in baseUrl', { baseUrl: 'https://user:pw@engine' }, 'baseUrl must not carry credentials, a query or a fragment'],
    ['a query in baseUrl', { baseUrl: 'https://engine/?x=1' }, 'baseUrl must not carry credentials, a query or a fragment'],
    ['an empty token', { token: '' }, 'token must be a non-empty single-line string'],
    ['a token with a newline', { token: `${TOKEN}\r\nX-Evil: 1` }, 'token must be a non-empty single-line string'],
    ['a zero timeout', { requestTimeoutMs: 0 }, 'requestTimeoutMs must be a positive integer, got 0'],
    ['a fractional pool size', { connections: 1.5 }, 'connections must be a positive integer, got 1.5'],
  ];
  for (const [name, options, message] of invalid) {
    test(`the constructor rejects ${name} with an exact message that does not contain the token`, () => {
      assert.throws(() => new EngineClient({ baseUrl: ORIGIN, token: TOKEN, ...options }), (err: unknown) => {
        assert.ok(err instanceof TypeError);
        assert.equal(err.message, message);
        assert.ok(!err.message.includes(TOKEN));
        return true;
      });
    });
  }
});
