/**
 * What the real Engine sends that the ideal one does not (sparse answers): the client accepts it where the
 * reconciler does not compare, reads it as the Go client does where it must (state by type, missing `omitempty`
 * fields as zero values, `tags: null` as no tags, lists without total_pages), and rejects, naming the field, a
 * compared field that is missing. A create whose answer is unusable still hands on the identifier it carried.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { EngineProtocolError, stateName } from '../../activities/engine';
import { parseEngineTime } from '../../activities/objects';
import { BACKEND, BACKEND_ID, BIND, SERVER, SERVER_ID, harness, page, ref } from '../helpers/engine-mock';

const sparse = <T extends Record<string, unknown>>(o: T, drop: string[], nulls: string[] = []) => {
  const copy: Record<string, unknown> = { ...o };
  for (const k of drop) delete copy[k];
  for (const k of nulls) copy[k] = null;
  return copy;
};

describe('EngineClient reads sparse answers', () => {
  test('a state carrying only its type parses with id "" and is read by its type (1 ok, 0 error, 2 pending)', async () => {
    const h = harness();
    h.reply({ status: 200, body: { ...BACKEND, state: { type: 2 } } });
    const b = await h.client.get('backend', BACKEND_ID);
    assert.deepEqual(b.state, { id: '', title: '', type: 2 });
    assert.equal(stateName(b.state), 'NewlyCreated');
    assert.equal(stateName({ type: 1 }), 'Deployed');
    assert.equal(stateName({ type: 0 }), 'DeploymentError');
    assert.equal(stateName({ id: '3', type: 2 }), 'Deployed', 'a known id wins over the type');
    assert.equal(stateName({ id: '17', type: 0 }), 'DeploymentError', 'an unknown id is read by its type');
    assert.equal(stateName({ id: '17', type: 9 }), 'Unknown');
    await h.done();
  });

  test('null or missing Engine-owned fields are accepted; a missing omitempty compared field reads as its zero value', async () => {
    const h = harness();
    h.reply({ status: 200, body: sparse(BACKEND, ['health_check', 'server_timeout'], ['customer_identifier', 'reseller_identifier', 'automation_rules']) });
    h.reply({ status: 200, body: sparse(SERVER, ['check']) });
    h.reply({ status: 200, body: sparse(BIND, ['ssl_certificate_path']) });
    const b = await h.client.get('backend', BACKEND_ID);
    assert.equal(b.health_check, '');
    assert.equal(b.customer_identifier, null);
    assert.equal((await h.client.get('server', SERVER_ID)).check, '');
    assert.equal((await h.client.get('bind', BIND.identifier)).ssl_certificate_path, undefined);
    await h.done();
  });

  const rejected: [string, 'backend' | 'server' | 'bind', Record<string, unknown>, string][] = [
    ['mode of a Backend', 'backend', sparse(BACKEND, ['mode']), 'mode: Invalid input: expected string, received undefined'],
    ['ip of a Server', 'server', sparse(SERVER, [], ['ip']), 'ip: Invalid input: expected string, received null'],
    ['port of a Bind', 'bind', sparse(BIND, ['port']), 'port: Invalid input: expected number, received undefined'],
    ['the load_balancer reference of a Backend', 'backend', sparse(BACKEND, [], ['load_balancer']), 'load_balancer: Invalid input: expected object, received null'],
  ];
  for (const [what, kind, body, issue] of rejected) {
    test(`a missing or null compared field without omitempty is rejected, naming it: ${what}`, async () => {
      const h = harness();
      h.reply({ status: 200, body });
      const id = body.identifier as string;
      await assert.rejects(h.client.get(kind, id), (err: unknown) => {
        assert.ok(err instanceof EngineProtocolError);
        assert.equal(err.message, `GET /api/LBaaS/v1/${kind}.json/${id}: 200 OK: response does not match the ${kind} schema: ${issue}`);
        return true;
      });
      await h.done();
    });
  }

  test('a Core resource with "tags": null has no tags; zoneless timestamps are kept as sent and read as UTC', async () => {
    const h = harness();
    h.reply({
      status: 200,
      body: { identifier: BACKEND_ID, name: 'x', resource_type: { identifier: '33164a3066a04a52be43c607f0c5dd8c', name: 'Backend' }, tags: null, created_at: '2026-11-23 14:52:37' },
    });
    const r = await h.client.getResource(BACKEND_ID);
    assert.deepEqual(r.tags, []);
    assert.equal(r.createdAt, '2026-11-23 14:52:37');
    assert.equal(parseEngineTime('2026-11-23 14:52:37'), Date.UTC(2026, 10, 23, 14, 52, 37));
    assert.equal(parseEngineTime('2026-11-23T14:52:37+01:00'), Date.UTC(2026, 10, 23, 13, 52, 37));
    await h.done();
  });

  test('a list without total_pages pages on until the first empty page', async () => {
    const h = harness();
    const noTotal = (n: number, items: { identifier: string; name: string }[]) => {
      const p = page(n, 0, items);
      return { ...p, data: sparse(p.data, ['total_pages']) };
    };
    h.reply({ status: 200, body: noTotal(1, [ref(1), ref(2)]) });
    h.reply({ status: 200, body: noTotal(2, [ref(3)]) });
    h.reply({ status: 200, body: noTotal(3, []) });
    assert.deepEqual((await h.client.list('server', { limit: 2 })).map((r) => r.name), ['obj-1', 'obj-2', 'obj-3']);
    assert.equal(h.seen.length, 3);
    await h.done();
  });
});

describe('EngineClient create and exists on an Engine that is not tidy', () => {
  test('a create answer that fails validation throws EngineProtocolError carrying the created identifier', async () => {
    const h = harness();
    h.reply({ status: 200, body: { ...BACKEND, mode: 7 } });
    await assert.rejects(h.client.create('backend', { name: 'n', mode: 'tcp', load_balancer: '1'.repeat(32) }), (err: unknown) => {
      assert.ok(err instanceof EngineProtocolError);
      assert.equal(err.createdIdentifier, BACKEND_ID);
      assert.match(err.message, /mode: Invalid input: expected string, received number/);
      return true;
    });
    await h.done();
  });

  test('a create answer without a usable identifier carries none', async () => {
    const h = harness();
    h.reply({ status: 200, body: { ...BACKEND, identifier: 42 } });
    await assert.rejects(h.client.create('backend', { name: 'n', mode: 'tcp', load_balancer: '1'.repeat(32) }), (err: unknown) => {
      assert.ok(err instanceof EngineProtocolError);
      assert.equal(err.createdIdentifier, undefined);
      return true;
    });
    await h.done();
  });

  test('exists is true for any 2xx answer (its body unread), false on 404, and throws other failures', async () => {
    const h = harness();
    h.reply({ status: 200, body: { identifier: SERVER_ID, state: 'whatever' } });
    h.reply({ status: 404, body: {} });
    h.reply({ status: 503, body: {} });
    assert.equal(await h.client.exists('server', SERVER_ID), true);
    assert.equal(await h.client.exists('server', SERVER_ID), false);
    await assert.rejects(h.client.exists('server', SERVER_ID), /503 Service Unavailable/);
    assert.deepEqual(h.seen.map((s) => `${s.method} ${s.path}`), new Array(3).fill(`GET /api/LBaaS/v1/server.json/${SERVER_ID}`));
    await h.done();
  });
});
