/**
 * Every error class of the Engine client, provoked over real HTTP: by the simulator (its validation, integrity
 * checks, auth and fault injection), by a closed port, and by a small server of our own that breaks the contract.
 */
import assert from 'node:assert/strict';
import { createServer, STATUS_CODES, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import { inspect } from 'node:util';
import {
  EngineAuthError,
  EngineClient,
  EngineConflictError,
  EngineNetworkError,
  EngineNotFoundError,
  EngineProtocolError,
  EngineRateLimitedError,
  EngineServerError,
  EngineValidationError,
  isRetryable,
} from '../../activities/engine';
import { startSimulator, type RunningSimulator } from '../../simulator/index';

const TOKEN = 'test-token';
const MISSING = '0'.repeat(32);

let sim: RunningSimulator;
let client: EngineClient;

before(async () => {
  sim = await startSimulator({ port: 0, token: TOKEN, deployMs: { min: 20, max: 40 }, seed: 1 });
  client = new EngineClient({ baseUrl: sim.url, token: TOKEN });
});

after(async () => {
  await client.close();
  await sim.close();
});

beforeEach(async () => {
  await admin('POST', '/_sim/reset');
});

async function admin<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${sim.url}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (res.status === 204 ? undefined : await res.json()) as T;
}

async function seed(kind: string, fields: Record<string, unknown>): Promise<string> {
  return (await admin<{ identifier: string }>('POST', '/_sim/objects', { kind, fields, state: 'Deployed' })).identifier;
}

async function objectCount(): Promise<number> {
  return (await admin<{ objects: unknown[] }>('GET', '/_sim/objects')).objects.length;
}

/** Awaits a rejection and hands back the error for exact assertions. */
async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail('the call succeeded');
}

/** A server of our own that answers every request with one fixed response. */
async function fixedServer(status: number, contentType: string, body: string): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) => res.writeHead(status, { 'content-type': contentType }).end(body));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const closeServer = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

describe('Engine errors from the simulator', () => {
  test('GET of a missing backend is EngineNotFoundError with the Engine message', async () => {
    const err = await failure(client.get('backend', MISSING));
    assert.ok(err instanceof EngineNotFoundError);
    assert.equal(err.message, `GET /api/LBaaS/v1/backend.json/${MISSING}: 404 Not Found: Backend ${MISSING} not found.`);
    assert.equal(err.retryable, false);
  });

  test('DELETE of a missing server is EngineNotFoundError (which callers treat as already gone)', async () => {
    const err = await failure(client.delete('server', MISSING));
    assert.ok(err instanceof EngineNotFoundError);
    assert.equal(err.status, 404);
  });

  test('a create with an invalid mode and a missing load balancer is EngineValidationError carrying the validation map', async () => {
    const err = await failure(client.create('backend', { name: 'b', mode: 'udp', load_balancer: MISSING }));
    assert.ok(err instanceof EngineValidationError);
    assert.deepEqual(err.validation, { mode: 'Must be one of: tcp, http.', load_balancer: `Object "${MISSING}" does not exist.` });
    assert.equal(
      err.message,
      `POST /api/LBaaS/v1/backend.json: 422 Unprocessable Entity: mode: Must be one of: tcp, http.; load_balancer: Object "${MISSING}" does not exist.`,
    );
    assert.equal(err.engineMessage, 'Validation failed.');
    assert.equal(isRetryable(err), false);
    assert.equal(await objectCount(), 0);
  });

  test('deleting a backend a server still references is a retryable EngineConflictError', async () => {
    const lb = await seed('loadbalancer', { name: 'lb' });
    const backend = await seed('backend', { name: 'be', load_balancer: lb });
    await seed('server', { name: 's', backend, ip: '10.0.0.1', port: 80 });
    const err = await failure(client.delete('backend', backend));
    assert.ok(err instanceof EngineConflictError);
    assert.equal(err.message, `DELETE /api/LBaaS/v1/backend.json/${backend}: 409 Conflict: Backend ${backend} is still referenced by 1 Server(s) via backend.`);
    assert.equal(isRetryable(err), true);
  });

  test('a wrong token is EngineAuthError, and neither token appears in the error', async () => {
    const wrong = new EngineClient({ baseUrl: sim.url, token: 'wrong-token-e3b0' });
    try {
      const err = await failure(wrong.list('loadbalancer'));
      assert.ok(err instanceof EngineAuthError);
      assert.equal(
        err.message,
        'GET /api/LBaaS/v1/loadbalancer.json?page=1&limit=100: 401 Unauthorized: ' +
          'Authentication credentials were not provided or are invalid (expected "Authorization: Token <token>").',
      );
      for (const text of [err.message, JSON.stringify(err), inspect(err, { showHidden: true })]) {
        assert.ok(!text.includes('wrong-token-e3b0') && !text.includes(TOKEN));
      }
    } finally {
      await wrong.close();
    }
  });
});

describe('Engine faults injected through /_sim/faults', () => {
  test('rateLimited is EngineRateLimitedError with retryAfterMs 1000 from Retry-After: 1, and nothing was applied', async () => {
    await admin('PUT', '/_sim/faults', { rates: { rateLimited: 1 } });
    const err = await failure(client.create('loadbalancer', { name: 'lb' }));
    assert.ok(err instanceof EngineRateLimitedError);
    assert.equal(err.message, 'POST /api/LBaaS/v1/loadbalancer.json: 429 Too Many Requests: Too many requests (injected).');
    assert.equal(err.retryAfterMs, 1000);
    assert.equal(isRetryable(err), true);
    assert.equal(await objectCount(), 0);
  });

  test('serverError is a retryable EngineServerError with the injected 5xx status', async () => {
    await admin('PUT', '/_sim/faults', { rates: { serverError: 1 } });
    for (let i = 0; i < 5; i++) {
      const err = await failure(client.get('backend', MISSING));
      assert.ok(err instanceof EngineServerError);
      assert.ok([500, 502, 503].includes(err.status ?? 0), `status ${err.status}`);
      const status = err.status ?? 0;
      assert.equal(
        err.message,
        `GET /api/LBaaS/v1/backend.json/${MISSING}: ${status} ${STATUS_CODES[status]}: Injected server error ${status}; the request was not applied.`,
      );
      assert.equal(isRetryable(err), true);
    }
  });

  test('dropAfterCommit as a 502 is EngineServerError although the create was applied', async () => {
    await admin('PUT', '/_sim/faults', { rates: { dropAfterCommit: 1 }, dropMode: '502' });
    const err = await failure(client.create('loadbalancer', { name: 'lb' }));
    assert.ok(err instanceof EngineServerError);
    assert.equal(err.message, 'POST /api/LBaaS/v1/loadbalancer.json: 502 Bad Gateway: Bad gateway (injected; the request was applied).');
    assert.equal(await objectCount(), 1);
  });

  test('dropAfterCommit as a connection reset is a retryable EngineNetworkError although the create was applied', async () => {
    await admin('PUT', '/_sim/faults', { rates: { dropAfterCommit: 1 }, dropMode: 'reset' });
    const err = await failure(client.create('loadbalancer', { name: 'lb' }));
    assert.ok(err instanceof EngineNetworkError);
    assert.equal(err.status, null);
    // The simulator destroys the socket before answering; undici sees the close, or a reset if the FIN races.
    const expected: Record<string, string> = {
      UND_ERR_SOCKET: 'POST /api/LBaaS/v1/loadbalancer.json: network error: other side closed (UND_ERR_SOCKET)',
      ECONNRESET: 'POST /api/LBaaS/v1/loadbalancer.json: network error: read ECONNRESET',
    };
    assert.equal(err.message, expected[err.code ?? ''], `code ${err.code}`);
    assert.equal(isRetryable(err), true);
    assert.equal(await objectCount(), 1);
  });

  test('latency beyond requestTimeoutMs is EngineNetworkError with code TIMEOUT', async () => {
    await admin('PUT', '/_sim/faults', { latencyMs: 500 });
    const impatient = new EngineClient({ baseUrl: sim.url, token: TOKEN, requestTimeoutMs: 50 });
    try {
      const err = await failure(impatient.get('backend', MISSING));
      assert.ok(err instanceof EngineNetworkError);
      assert.equal(err.message, `GET /api/LBaaS/v1/backend.json/${MISSING}: network error: timed out after 50 ms`);
      assert.equal(err.code, 'TIMEOUT');
    } finally {
      await impatient.close();
    }
  });
});

describe('transport and protocol errors outside the simulator', () => {
  test('a closed port is EngineNetworkError with code ECONNREFUSED', async () => {
    const { url, server } = await fixedServer(200, 'application/json', '{}');
    await closeServer(server);
    const port = new URL(url).port;
    const offline = new EngineClient({ baseUrl: url, token: TOKEN });
    try {
      const err = await failure(offline.get('backend', MISSING));
      assert.ok(err instanceof EngineNetworkError);
      assert.equal(err.code, 'ECONNREFUSED');
      assert.equal(err.message, `GET /api/LBaaS/v1/backend.json/${MISSING}: network error: connect ECONNREFUSED 127.0.0.1:${port}`);
      assert.equal(isRetryable(err), true);
    } finally {
      await offline.close();
    }
  });

  test('a 200 answered as text/html is EngineProtocolError naming the content type', async () => {
    const { url, server } = await fixedServer(200, 'text/html; charset=utf-8', '<html><body>Sign in</body></html>');
    const misled = new EngineClient({ baseUrl: url, token: TOKEN });
    try {
      const err = await failure(misled.get('backend', MISSING));
      assert.ok(err instanceof EngineProtocolError);
      assert.equal(err.message, `GET /api/LBaaS/v1/backend.json/${MISSING}: 200 OK: response is not JSON (content-type text/html; charset=utf-8)`);
      assert.equal(isRetryable(err), false);
    } finally {
      await misled.close();
      await closeServer(server);
    }
  });

  test('a 200 JSON list without total_pages is read to its first empty page (the real Engine may leave it out)', async () => {
    const { url, server } = await fixedServer(200, 'application/json', '{"page":1,"data":[]}');
    const sparse = new EngineClient({ baseUrl: url, token: TOKEN });
    try {
      assert.deepEqual(await sparse.listResourcesByTag('a=b'), []);
    } finally {
      await sparse.close();
      await closeServer(server);
    }
  });

  test('a 200 JSON list without data is EngineProtocolError naming the field', async () => {
    const { url, server } = await fixedServer(200, 'application/json', '{"page":1,"total_pages":1}');
    const misled = new EngineClient({ baseUrl: url, token: TOKEN });
    try {
      const err = await failure(misled.listResourcesByTag('a=b'));
      assert.ok(err instanceof EngineProtocolError);
      assert.match(err.message, /^GET \/api\/core\/v1\/resource\.json\?tag_name=a%3Db&page=1&limit=100: 200 OK: response does not match the resource list schema: data: /);
    } finally {
      await misled.close();
      await closeServer(server);
    }
  });
});
