import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { describe, test } from 'node:test';
import { EngineClient, EngineNetworkError, type EngineClientOptions } from '../../activities/engine';
import { ORIGIN, TOKEN, BACKEND_ID, SERVER_ID, TAG, BACKEND, JSON_HEADERS, harness, page, ref } from '../helpers/engine-mock';

/** Deadlines, metrics events, lifecycle and options of the client. */
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

