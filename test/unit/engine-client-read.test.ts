import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { EngineProtocolError, MAX_PAGES } from '../../activities/engine';
import { ORIGIN, TOKEN, LB_ID, BACKEND_ID, TAG, BACKEND, FRONTEND, BIND, SERVER, LOADBALANCER, harness, page, ref } from '../helpers/engine-mock';

/** The client's reads: single objects, paged lists, Core resources and tags. */
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

