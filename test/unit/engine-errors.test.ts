/**
 * How the Engine client turns answers into typed errors: the status table, redaction of the token and Retry-After.
 * (Longer than 300 lines: the table of status cases and the tests beside it all run through one MockAgent helper.)
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { inspect } from 'node:util';
import { MockAgent } from 'undici';
import {
  DEFAULT_RETRY_AFTER_MS,
  EngineAuthError,
  EngineClient,
  EngineConflictError,
  EngineError,
  EngineNetworkError,
  EngineNotFoundError,
  EngineProtocolError,
  EngineRateLimitedError,
  EngineServerError,
  EngineValidationError,
  isRetryable,
  parseRetryAfter,
  type EngineClientOptions,
} from '../../activities/engine';

const ORIGIN = 'http://engine.test';
const TOKEN = 'unit-secret-token-9a1e';
const ID = 'b'.repeat(32);
const JSON_HEADERS = { 'content-type': 'application/json' };

type Reply = { status: number; body: string; headers: Record<string, string> } | { error: Error };

/** Sends one request through a client whose MockAgent answers `reply`, and returns what the client threw. */
async function failureOf(reply: Reply, call: (c: EngineClient) => Promise<unknown>, options: Partial<EngineClientOptions> = {}): Promise<unknown> {
  const agent = new MockAgent();
  agent.disableNetConnect();
  const interceptor = agent.get(ORIGIN).intercept({ path: () => true, method: () => true });
  if ('error' in reply) interceptor.replyWithError(reply.error);
  else interceptor.reply(reply.status, reply.body, { headers: reply.headers });
  const client = new EngineClient({ baseUrl: ORIGIN, token: TOKEN, dispatcher: agent, ...options });
  try {
    await call(client);
  } catch (err) {
    return err;
  } finally {
    agent.assertNoPendingInterceptors();
    await agent.close();
  }
  assert.fail('the call succeeded');
}

const jsonError = (status: number, error: Record<string, unknown>, headers: Record<string, string> = {}): Reply => ({
  status,
  body: JSON.stringify({ error: { code: status, ...error } }),
  headers: { ...JSON_HEADERS, ...headers },
});

const getBackend = (c: EngineClient) => c.get('backend', ID);
const createBackend = (c: EngineClient) => c.create('backend', { name: '', mode: 'tcp', load_balancer: ID });
const GET_PATH = `/api/LBaaS/v1/backend.json/${ID}`;
const POST_PATH = '/api/LBaaS/v1/backend.json';

interface Case {
  name: string;
  reply: Reply;
  call: (c: EngineClient) => Promise<unknown>;
  type: new (...args: never[]) => EngineError;
  retryable: boolean;
  status: number | null;
  message: string;
  engineMessage?: string;
}

const cases: Case[] = [
  {
    name: '404',
    reply: jsonError(404, { message: 'Backend not found' }),
    call: getBackend,
    type: EngineNotFoundError,
    retryable: false,
    status: 404,
    message: `GET ${GET_PATH}: 404 Not Found: Backend not found`,
    engineMessage: 'Backend not found',
  },
  {
    name: '422 with a validation map',
    reply: jsonError(422, { message: 'Validation failed', validation: { name: 'must not be empty' } }),
    call: createBackend,
    type: EngineValidationError,
    retryable: false,
    status: 422,
    message: `POST ${POST_PATH}: 422 Unprocessable Entity: name: must not be empty`,
    engineMessage: 'Validation failed',
  },
  {
    name: '400 with a message only',
    reply: jsonError(400, { message: 'malformed JSON' }),
    call: createBackend,
    type: EngineValidationError,
    retryable: false,
    status: 400,
    message: `POST ${POST_PATH}: 400 Bad Request: malformed JSON`,
    engineMessage: 'malformed JSON',
  },
  {
    name: '405, another 4xx retrying cannot fix',
    reply: { status: 405, body: '', headers: {} },
    call: getBackend,
    type: EngineValidationError,
    retryable: false,
    status: 405,
    message: `GET ${GET_PATH}: 405 Method Not Allowed`,
  },
  {
    name: '401',
    reply: jsonError(401, { message: 'invalid token' }),
    call: getBackend,
    type: EngineAuthError,
    retryable: false,
    status: 401,
    message: `GET ${GET_PATH}: 401 Unauthorized: invalid token`,
    engineMessage: 'invalid token',
  },
  {
    name: '403',
    reply: { status: 403, body: '', headers: {} },
    call: getBackend,
    type: EngineAuthError,
    retryable: false,
    status: 403,
    message: `GET ${GET_PATH}: 403 Forbidden`,
  },
  {
    name: '409',
    reply: jsonError(409, { message: 'backend is still referenced by 2 servers' }),
    call: (c) => c.delete('backend', ID),
    type: EngineConflictError,
    retryable: true,
    status: 409,
    message: `DELETE ${GET_PATH}: 409 Conflict: backend is still referenced by 2 servers`,
    engineMessage: 'backend is still referenced by 2 servers',
  },
  {
    name: '429',
    reply: jsonError(429, { message: 'slow down' }, { 'retry-after': '3' }),
    call: getBackend,
    type: EngineRateLimitedError,
    retryable: true,
    status: 429,
    message: `GET ${GET_PATH}: 429 Too Many Requests: slow down`,
    engineMessage: 'slow down',
  },
  {
    name: '500',
    reply: jsonError(500, { message: 'internal error' }),
    call: getBackend,
    type: EngineServerError,
    retryable: true,
    status: 500,
    message: `GET ${GET_PATH}: 500 Internal Server Error: internal error`,
    engineMessage: 'internal error',
  },
  {
    name: '502 with an HTML page, which is not quoted',
    reply: { status: 502, body: '<html><body>Bad Gateway</body></html>', headers: { 'content-type': 'text/html' } },
    call: getBackend,
    type: EngineServerError,
    retryable: true,
    status: 502,
    message: `GET ${GET_PATH}: 502 Bad Gateway`,
  },
  {
    name: '503 with a text/plain body, whose first line is quoted',
    reply: { status: 503, body: 'upstream overloaded\nmore detail', headers: { 'content-type': 'text/plain' } },
    call: getBackend,
    type: EngineServerError,
    retryable: true,
    status: 503,
    message: `GET ${GET_PATH}: 503 Service Unavailable: upstream overloaded`,
    engineMessage: 'upstream overloaded',
  },
  {
    name: '408 from a proxy',
    reply: { status: 408, body: '', headers: {} },
    call: getBackend,
    type: EngineNetworkError,
    retryable: true,
    status: 408,
    message: `GET ${GET_PATH}: 408 Request Timeout`,
  },
  {
    name: 'a connection reset',
    reply: { error: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }) },
    call: getBackend,
    type: EngineNetworkError,
    retryable: true,
    status: null,
    message: `GET ${GET_PATH}: network error: read ECONNRESET`,
  },
  {
    name: 'a socket closed by the other side',
    reply: { error: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }) },
    call: getBackend,
    type: EngineNetworkError,
    retryable: true,
    status: null,
    message: `GET ${GET_PATH}: network error: other side closed (UND_ERR_SOCKET)`,
  },
  {
    name: 'a 302 redirect, which is not followed',
    reply: { status: 302, body: '', headers: { location: 'https://engine.test/login' } },
    call: getBackend,
    type: EngineProtocolError,
    retryable: false,
    status: 302,
    message: `GET ${GET_PATH}: 302 Found: redirect to https://engine.test/login not followed`,
  },
  {
    name: 'a 200 that is not JSON',
    reply: { status: 200, body: 'ok', headers: { 'content-type': 'text/plain' } },
    call: getBackend,
    type: EngineProtocolError,
    retryable: false,
    status: 200,
    message: `GET ${GET_PATH}: 200 OK: response is not JSON (content-type text/plain)`,
  },
];

describe('Engine responses map to typed errors', () => {
  for (const c of cases) {
    test(`${c.name} becomes ${c.type.name} (retryable ${c.retryable}) with message "${c.message}"`, async () => {
      const err = await failureOf(c.reply, c.call);
      assert.ok(err instanceof c.type, `got ${inspect(err)}`);
      assert.ok(err instanceof EngineError);
      assert.ok(err instanceof Error);
      assert.equal(err.name, c.type.name);
      assert.equal(err.message, c.message);
      assert.equal(err.status, c.status);
      assert.equal(err.retryable, c.retryable);
      assert.equal(isRetryable(err), c.retryable);
      assert.equal(err.engineMessage, c.engineMessage);
      assert.ok(err.stack?.startsWith(`${c.type.name}: ${c.message}\n`));
    });
  }

  test('a validation error carries the validation map and the method and path', async () => {
    const err = await failureOf(
      jsonError(422, { message: 'Validation failed', validation: { name: 'must not be empty', load_balancer: ['unknown object', 'required'] } }),
      createBackend,
    );
    assert.ok(err instanceof EngineValidationError);
    assert.deepEqual(err.validation, { name: 'must not be empty', load_balancer: 'unknown object, required' });
    assert.equal(err.message, `POST ${POST_PATH}: 422 Unprocessable Entity: name: must not be empty; load_balancer: unknown object, required`);
    assert.equal(err.method, 'POST');
    assert.equal(err.path, POST_PATH);
  });

  test('a 4xx without any body still names method, path and status and has an empty validation map', async () => {
    const err = await failureOf({ status: 422, body: '', headers: {} }, createBackend);
    assert.ok(err instanceof EngineValidationError);
    assert.equal(err.message, `POST ${POST_PATH}: 422 Unprocessable Entity`);
    assert.deepEqual(err.validation, {});
  });

  test('a top-level {"message"} body (no error envelope) is read as the Engine message', async () => {
    const err = await failureOf({ status: 404, body: '{"message":"no such object"}', headers: JSON_HEADERS }, getBackend);
    assert.ok(err instanceof EngineNotFoundError);
    assert.equal(err.message, `GET ${GET_PATH}: 404 Not Found: no such object`);
  });

  test('toJSON keeps name, message and the request fields', async () => {
    const err = await failureOf(jsonError(409, { message: 'in use' }), (c) => c.delete('frontend', ID));
    assert.deepEqual(JSON.parse(JSON.stringify(err)), {
      name: 'EngineConflictError',
      message: `DELETE /api/LBaaS/v1/frontend.json/${ID}: 409 Conflict: in use`,
      method: 'DELETE',
      path: `/api/LBaaS/v1/frontend.json/${ID}`,
      status: 409,
      engineMessage: 'in use',
      retryable: true,
    });
  });
});

describe('the token never appears in an error', () => {
  const echoes: [string, Reply][] = [
    ['an Engine message echoing the Authorization header', jsonError(401, { message: `invalid token "Token ${TOKEN}"` })],
    ['a validation map echoing it', jsonError(422, { message: TOKEN, validation: { [TOKEN]: `bad ${TOKEN}` } })],
    ['a text/plain body echoing it', { status: 500, body: `Authorization: Token ${TOKEN}`, headers: { 'content-type': 'text/plain' } }],
    ['a socket error message containing it', { error: Object.assign(new Error(`write failed near ${TOKEN}`), { code: TOKEN }) }],
    ['a redirect location containing it', { status: 301, body: '', headers: { location: `https://x/?t=${TOKEN}` } }],
  ];
  for (const [name, reply] of echoes) {
    test(`message, JSON, stack and inspect output are free of the token for ${name}`, async () => {
      const err = await failureOf(reply, getBackend);
      assert.ok(err instanceof EngineError);
      for (const text of [err.message, JSON.stringify(err), err.stack ?? '', inspect(err, { depth: 10, showHidden: true })]) {
        assert.ok(!text.includes(TOKEN), `token found in: ${text}`);
      }
      assert.ok(err.message.includes('[redacted]'));
    });
  }

  const clean: [string, Reply][] = [
    ['404', jsonError(404, { message: 'gone' })],
    ['429', jsonError(429, {}, { 'retry-after': '1' })],
    ['a protocol error', { status: 200, body: '{}', headers: JSON_HEADERS }],
    ['a network error', { error: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) }],
  ];
  for (const [name, reply] of clean) {
    test(`no property of a ${name} error holds the token`, async () => {
      const err = await failureOf(reply, getBackend);
      assert.ok(err instanceof EngineError);
      const all = [err.message, err.stack ?? '', JSON.stringify(err), inspect(err, { depth: 10, showHidden: true })];
      for (const text of all) assert.ok(!text.includes(TOKEN), `token found in: ${text}`);
    });
  }
});

describe('Retry-After', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  const values: [string, string | string[] | undefined, number][] = [
    ['absent', undefined, DEFAULT_RETRY_AFTER_MS],
    ['empty', '', DEFAULT_RETRY_AFTER_MS],
    ['delay-seconds', '7', 7_000],
    ['zero seconds', '0', 0],
    ['fractional seconds (tolerated)', '1.5', 1_500],
    ['an HTTP date 90 s ahead', 'Wed, 01 Jan 2025 00:01:30 GMT', 90_000],
    ['an HTTP date in the past', 'Tue, 31 Dec 2024 23:59:00 GMT', 0],
    ['garbage', 'soon', DEFAULT_RETRY_AFTER_MS],
    ['a negative number', '-5', DEFAULT_RETRY_AFTER_MS],
    ['a bare number that Date.parse would read as a year', '2030-', DEFAULT_RETRY_AFTER_MS],
    ['a repeated header (first wins)', ['2', '9'], 2_000],
  ];
  for (const [name, value, expected] of values) {
    test(`parseRetryAfter of ${name} is ${expected} ms`, () => {
      assert.equal(parseRetryAfter(value, now), expected);
    });
  }

  test('a 429 with Retry-After: 3 sets retryAfterMs 3000; without the header, the first backoff bound of 1 s (jitter drawn at its top)', async () => {
    const pacing = { requestsPerSecond: 10, random: () => 1 };
    const with3 = await failureOf(jsonError(429, {}, { 'retry-after': '3' }), getBackend, { pacing });
    const without = await failureOf(jsonError(429, {}), getBackend, { pacing });
    assert.ok(with3 instanceof EngineRateLimitedError && without instanceof EngineRateLimitedError);
    assert.equal(with3.retryAfterMs, 3_000);
    assert.equal(without.retryAfterMs, 1_000);
  });

  test('a 429 with an HTTP-date Retry-After sets retryAfterMs relative to now', async () => {
    const at = new Date(Date.now() + 60_000).toUTCString();
    const err = await failureOf(jsonError(429, {}, { 'retry-after': at }), getBackend);
    assert.ok(err instanceof EngineRateLimitedError);
    // toUTCString drops milliseconds, so the delay is within the last second before 60 s.
    assert.ok(err.retryAfterMs > 58_000 && err.retryAfterMs <= 60_000, `retryAfterMs ${err.retryAfterMs}`);
  });
});

describe('isRetryable', () => {
  test('is false for anything that is not an EngineError', () => {
    assert.equal(isRetryable(new Error('ECONNRESET')), false);
    assert.equal(isRetryable(new TypeError('bug')), false);
    assert.equal(isRetryable(undefined), false);
    assert.equal(isRetryable({ retryable: true }), false);
  });
});
