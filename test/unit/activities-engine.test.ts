/**
 * The activities' Engine logic for the real Engine's manners, on a MockAgent Engine (outside Temporal: the code runs
 * as a first attempt without heartbeat details): destroys that wait for the 404 and wait out the service's own
 * dependents, tag requests that never overlap on a resource and never re-tag what is tagged, a create whose answer
 * fails validation still tagged, observations that skip what is being deleted and find what the tag index misses.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { EngineProtocolError } from '../../activities/engine';
import { destroyObjects, type DestroyObjectInput, type DestroyOptions } from '../../activities/destroy';
import { IdentifierCache } from '../../activities/memory';
import { createObject } from '../../activities/objects';
import { observeService } from '../../activities/state';
import { ensureTagged } from '../../activities/tagging';
import { BACKEND, BACKEND_ID, LB_ID, SERVER, SERVER_ID, harness, page, type Reply, type Seen } from '../helpers/engine-mock';

const UID = 'svc-1';
const TAG = `anxccm-svc-uid=${UID}`;
const SERVER_TYPE = { identifier: '01f321a4875446409d7d8469503a905f', name: 'Server' };
const BACKEND_TYPE = { identifier: '33164a3066a04a52be43c607f0c5dd8c', name: 'Backend' };
const resource = (id: string, tags: string[] | null, type = SERVER_TYPE) => ({
  identifier: id,
  name: 'r',
  resource_type: type,
  tags: tags === null ? null : tags.map((name, i) => ({ identifier: String(i).repeat(32), name })),
});
const FAST = { pollFirstMs: 5, pollMaxMs: 10, windowMs: 2_000 };
const line = (s: Seen) => `${s.method} ${s.path.replace(/\?.*$/, '')}`;
/** A destroy stage of one object (the destroyObjects activity's logic): its outcome, or the failure it ends with. */
const destroyObject = async (client: Parameters<typeof destroyObjects>[0], memory: IdentifierCache, o: DestroyObjectInput, options: DestroyOptions) => {
  const [result] = await destroyObjects(client, memory, { serviceUid: o.serviceUid, objects: [{ kind: o.kind, identifier: o.identifier, name: o.name }] }, options);
  return result?.outcome;
};

describe('destroyObjects (a stage of one object) on an Engine that deletes asynchronously', () => {
  test('ends only when GET answers 404, and the object counts as being deleted until then', async () => {
    const h = harness();
    const memory = new IdentifierCache();
    const deletingDuringPolls: boolean[] = [];
    h.reply({ status: 200, body: resource(SERVER_ID, [TAG]) });
    h.reply({ status: 200, body: {} });
    h.reply(() => (deletingDuringPolls.push(memory.isDeleting(SERVER_ID)), { status: 200, body: SERVER }), 2);
    h.reply(() => (deletingDuringPolls.push(memory.isDeleting(SERVER_ID)), { status: 404, body: {} }));
    const outcome = await destroyObject(h.client, memory, { kind: 'server', identifier: SERVER_ID, name: 'n', serviceUid: UID }, FAST);
    assert.equal(outcome, 'deleted');
    assert.deepEqual(deletingDuringPolls, [true, true, true]);
    assert.equal(memory.isDeleting(SERVER_ID), false);
    assert.deepEqual(h.seen.map(line), [
      `GET /api/core/v1/resource.json/${SERVER_ID}`,
      `DELETE /api/LBaaS/v1/server.json/${SERVER_ID}`,
      `GET /api/LBaaS/v1/server.json/${SERVER_ID}`,
      `GET /api/LBaaS/v1/server.json/${SERVER_ID}`,
      `GET /api/LBaaS/v1/server.json/${SERVER_ID}`,
    ]);
    await h.done();
  });

  test('a 409 while the service’s own Server is still deprovisioning is waited out, then the Backend is deleted', async () => {
    const h = harness();
    h.reply({ status: 200, body: resource(BACKEND_ID, [TAG], BACKEND_TYPE) });
    h.reply({ status: 409, body: { error: { code: 409, message: 'still referenced by 1 Server(s)' } } });
    h.reply({ status: 200, body: page(1, 1, [{ identifier: SERVER_ID, name: 's' }]) });
    h.reply({ status: 200, body: BACKEND });
    h.reply({ status: 200, body: page(1, 1, []) });
    h.reply({ status: 200, body: resource(SERVER_ID, [TAG]) });
    h.reply({ status: 409, body: { error: { code: 409, message: 'still referenced by 1 Server(s)' } } });
    h.reply({ status: 200, body: {} });
    h.reply({ status: 404, body: {} });
    assert.equal(await destroyObject(h.client, new IdentifierCache(), { kind: 'backend', identifier: BACKEND_ID, name: 'b', serviceUid: UID }, FAST), 'deleted');
    assert.equal(h.seen.filter((s) => s.method === 'DELETE').length, 3);
    assert.equal(h.seen.filter((s) => s.path.startsWith('/api/LBaaS/v1/server.json?')).length, 1, 'who holds it is read once');
    await h.done();
  });

  test('a 409 from a dependent that is not ours fails non-retryably, naming it', async () => {
    const h = harness();
    h.reply({ status: 200, body: resource(BACKEND_ID, [TAG], BACKEND_TYPE) });
    h.reply({ status: 409, body: { error: { code: 409, message: 'still referenced' } } });
    h.reply({ status: 200, body: page(1, 1, [{ identifier: SERVER_ID, name: 'foreign-server' }]) });
    h.reply({ status: 200, body: BACKEND });
    h.reply({ status: 200, body: page(1, 1, []) });
    h.reply({ status: 200, body: resource(SERVER_ID, null) });
    await assert.rejects(destroyObject(h.client, new IdentifierCache(), { kind: 'backend', identifier: BACKEND_ID, name: 'b', serviceUid: UID }, FAST), (err: unknown) => {
      assert.ok(err instanceof ApplicationFailure);
      assert.equal(err.nonRetryable, true);
      assert.match(err.message, new RegExp(`Server foreign-server \\(${SERVER_ID}\\) still references it and is not ours \\(untagged\\)`));
      return true;
    });
    await h.done();
  });

  test('an object still there when the window ends fails benign and retryable ("still being deprovisioned")', async () => {
    const h = harness();
    h.reply({ status: 200, body: resource(SERVER_ID, [TAG]) });
    h.reply({ status: 200, body: {} });
    h.reply({ status: 200, body: SERVER }, 100);
    await assert.rejects(
      destroyObject(h.client, new IdentifierCache(), { kind: 'server', identifier: SERVER_ID, name: 'n', serviceUid: UID }, { pollFirstMs: 20, pollMaxMs: 20, windowMs: 100 }),
      (err: unknown) => {
        assert.ok(err instanceof ApplicationFailure);
        assert.equal(err.nonRetryable, false);
        assert.equal(err.type, 'NotReady');
        assert.equal(err.message, `Server n (${SERVER_ID}) is still being deprovisioned`);
        return true;
      },
    );
    await h.agent.close();
  });
});

describe('tagging', () => {
  test('tag requests to one resource never overlap, and a tagged resource is not tagged again', async () => {
    // Three activities tag the same resource at once. Serialized, the first reads (untagged) and tags, the other two
    // read after it finished and find the tag: GET, POST, GET, GET. Unserialized they would read together first.
    const h = harness();
    h.reply({ status: 200, body: resource(SERVER_ID, null) });
    h.reply({ status: 200, body: {}, delayMs: 30 });
    h.reply({ status: 200, body: resource(SERVER_ID, [TAG]) }, 2);
    const memory = new IdentifierCache();
    await Promise.all([1, 2, 3].map(() => ensureTagged(h.client, memory, SERVER_ID, TAG)));
    assert.deepEqual(h.seen.map((x) => x.method), ['GET', 'POST', 'GET', 'GET']);
    await h.done();
  });
});

describe('createObject on an Engine whose create answer fails validation', () => {
  test('the object named in the answer is tagged before the failure is reported', async () => {
    const h = harness();
    h.reply({ status: 200, body: page(1, 1, []) });
    h.reply({ status: 200, body: { ...SERVER, port: 'eighty' } });
    h.reply({ status: 200, body: {} });
    const memory = new IdentifierCache();
    const fields = { name: SERVER.name, ip: SERVER.ip, port: SERVER.port, check: 'enabled', backend: BACKEND_ID };
    await assert.rejects(createObject(h.client, memory, { serviceUid: UID, kind: 'server', fields } as never), EngineProtocolError);
    assert.equal(line(h.seen[2] as Seen), `POST /api/core/v1/resource.json/${SERVER_ID}/tags/${TAG}`);
    assert.deepEqual(memory.createdFor(UID), [SERVER_ID]);
    await h.done();
  });
});

describe('createObject and the look-alike list', () => {
  const fields = { name: SERVER.name, ip: SERVER.ip, port: SERVER.port, check: 'enabled', backend: BACKEND_ID };
  const serverList = `/api/LBaaS/v1/server.json`;

  test('a first attempt takes a look-alike list another create asked for seconds before: no list request of its own', async () => {
    const h = harness();
    h.reply({ status: 200, body: page(1, 1, []) });
    await h.client.list('server', { filters: { backend: BACKEND_ID }, recent: true });
    h.reply({ status: 200, body: SERVER });
    h.reply({ status: 200, body: {} });
    const created = await createObject(h.client, new IdentifierCache(), { serviceUid: UID, kind: 'server', fields } as never);
    assert.equal(created.identifier, SERVER_ID);
    assert.deepEqual(h.seen.map(line), [`GET ${serverList}`, `POST ${serverList}`, `POST /api/core/v1/resource.json/${SERVER_ID}/tags/${TAG}`]);
    await h.done();
  });

  test('a retry lists afresh to find what its lost attempt created, even with a recent list kept: it adopts and tags that object instead of creating a second one', async () => {
    const h = harness();
    // What the client kept from before the lost attempt's POST: no Server yet.
    h.reply({ status: 200, body: page(1, 1, []) });
    await h.client.list('server', { filters: { backend: BACKEND_ID }, recent: true });
    // The Engine now: the lost attempt's Server, untagged.
    const now = (seen: Seen): Reply => {
      const p = seen.path.replace(/\?.*$/, '');
      if (seen.method === 'GET' && p === serverList) return { status: 200, body: page(1, 1, [{ identifier: SERVER_ID, name: SERVER.name }]) };
      if (seen.method === 'GET' && p === `${serverList}/${SERVER_ID}`) return { status: 200, body: SERVER };
      if (seen.method === 'GET' && p === `/api/core/v1/resource.json/${SERVER_ID}`) return { status: 200, body: resource(SERVER_ID, []) };
      if (seen.method === 'POST' && p === `/api/core/v1/resource.json/${SERVER_ID}/tags/${TAG}`) return { status: 200, body: {} };
      return { status: 500, body: `unexpected ${seen.method} ${p}` };
    };
    h.reply(now, 5);
    const env = new MockActivityEnvironment({ attempt: 2, heartbeatDetails: { preexisting: [] } });
    const created = await env.run(() => createObject(h.client, new IdentifierCache(), { serviceUid: UID, kind: 'server', fields } as never));
    assert.deepEqual(created, { identifier: SERVER_ID, state: 'Deployed', adopted: true });
    assert.equal(h.seen.filter((x) => line(x) === `GET ${serverList}`).length, 2, 'the retry sent its own list');
    assert.equal(h.seen.filter((x) => x.method === 'POST' && line(x) === `POST ${serverList}`).length, 0, 'no second Server');
    assert.equal(h.seen.filter((x) => line(x) === `POST /api/core/v1/resource.json/${SERVER_ID}/tags/${TAG}`).length, 1);
    await h.agent.close();
  });
});

describe('observeService on an Engine whose tag index lags and whose deletions are listed', () => {
  test('reads an object the worker created that the index does not list yet, and leaves out one it is deleting', async () => {
    const h = harness();
    const memory = new IdentifierCache();
    const deleting = 'a'.repeat(32);
    memory.created(UID, BACKEND_ID);
    memory.deleting(deleting);
    h.reply({ status: 200, body: { page: 1, total_pages: 1, total_items: 1, limit: 100, data: [{ identifier: deleting, name: 'old' }] } });
    h.reply({ status: 200, body: resource(BACKEND_ID, [TAG], BACKEND_TYPE) });
    h.reply({ status: 200, body: BACKEND });
    const groups = await observeService(h.client, memory, UID);
    assert.deepEqual([...groups.keys()], [LB_ID]);
    assert.deepEqual(groups.get(LB_ID)?.map((o) => o.identifier), [BACKEND_ID]);
    assert.ok(!h.seen.some((s) => s.path.includes(deleting)), 'the object being deleted was not read');
    await h.done();
  });

  test('an object this worker just created on another load balancer of the service is not read by this one\'s observation (the plan-first test saw 2 reads per object under load)', async () => {
    const h = harness();
    const memory = new IdentifierCache();
    h.reply({ status: 200, body: page(1, 1, []) });
    h.reply({ status: 200, body: SERVER });
    h.reply({ status: 200, body: {} });
    const fields = { name: SERVER.name, ip: SERVER.ip, port: SERVER.port, check: 'enabled', backend: BACKEND_ID };
    await createObject(h.client, memory, { serviceUid: UID, kind: 'server', fields, loadBalancer: LB_ID } as never);
    // The index does not list it yet; the observation is of another load balancer.
    h.reply({ status: 422, body: { error: { code: 422, message: 'no resources' } } });
    const groups = await observeService(h.client, memory, UID, 'b'.repeat(32));
    assert.equal(groups.size, 0);
    assert.deepEqual(h.seen.slice(3).map(line), ['GET /api/core/v1/resource.json']);
    await h.done();
  });

  test('an object in `known` whose resource no longer carries the tag is left out', async () => {
    const h = harness();
    h.reply({ status: 422, body: { error: { code: 422, message: 'no resources' } } });
    h.reply({ status: 200, body: resource(BACKEND_ID, null, BACKEND_TYPE) });
    const groups = await observeService(h.client, new IdentifierCache(), UID, undefined, [BACKEND_ID]);
    assert.equal(groups.size, 0);
    await h.done();
  });
});
