import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { EngineProtocolError, toUpdateBody } from '../../activities/engine';
import { LB_ID, BACKEND_ID, FRONTEND_ID, BIND_ID, SERVER_ID, DEPLOYED, COMMON, BACKEND, FRONTEND, SERVER, JSON_HEADERS, harness, type Reply } from '../helpers/engine-mock';

/** The client's writes, and the answers it refuses to use. */
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

