/**
 * Joined identical lists (activities/engine/flights.ts): fewer Engine requests when many groups ask for the same
 * list at once, and never an answer read before the caller asked, unless the caller accepts a recent one (the
 * look-alike list before a create, activities/realize.ts): then one listing per window at most.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FreshFlights } from '../../activities/engine/flights';
import { LB_ID, harness, page, ref } from '../helpers/engine-mock';

/** A read whose answer the test gives: `reads` records each start in order. */
function reads() {
  const started: { n: number; resolve: (v: string) => void; reject: (e: Error) => void }[] = [];
  const read = () =>
    new Promise<string>((resolve, reject) => {
      started.push({ n: started.length + 1, resolve, reject });
    });
  return { started, read };
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('FreshFlights', () => {
  test('a call while a read runs does not get that read (it started before the call): it and every later caller share the next read, started once the first has ended', async () => {
    const f = new FreshFlights<string>();
    const r = reads();
    const first = f.run('k', r.read);
    const second = f.run('k', r.read);
    const third = f.run('k', r.read);
    await tick();
    assert.equal(r.started.length, 1, 'the second read waits for the first to end');
    r.started[0]?.resolve('one');
    assert.equal(await first, 'one');
    await tick();
    assert.equal(r.started.length, 2);
    r.started[1]?.resolve('two');
    assert.deepEqual(await Promise.all([second, third]), ['two', 'two']);
    assert.equal(f.size, 0, 'nothing kept once every read has ended');
    // Nothing is cached: the next call reads again.
    const fourth = f.run('k', r.read);
    assert.equal(r.started.length, 3);
    r.started[2]?.resolve('three');
    assert.equal(await fourth, 'three');
  });

  test('a failed read fails only its own callers; those waiting behind it get the next read', async () => {
    const f = new FreshFlights<string>();
    const r = reads();
    const first = f.run('k', r.read);
    const second = f.run('k', r.read);
    r.started[0]?.reject(new Error('503'));
    await assert.rejects(first, /503/);
    await tick();
    r.started[1]?.resolve('fresh');
    assert.equal(await second, 'fresh');
  });

  test('a caller accepting a recent answer gets the newest read started within the window (running or done); others still get a read started after their call; a failed read is never reused', async () => {
    let now = 0;
    const f = new FreshFlights<string>(1_000, () => now);
    const r = reads();
    const first = f.run('k', r.read, { recent: true });
    now = 500;
    const recentWhileRunning = f.run('k', r.read, { recent: true });
    const fresh = f.run('k', r.read);
    await tick();
    assert.equal(r.started.length, 1, 'the recent caller joined the running read; the other waits for the next');
    r.started[0]?.resolve('one');
    assert.deepEqual(await Promise.all([first, recentWhileRunning]), ['one', 'one']);
    await tick();
    assert.equal(r.started.length, 2, 'the caller that wanted a fresh answer got its own read');
    r.started[1]?.resolve('two');
    assert.equal(await fresh, 'two');
    // The second read started at 500: still recent at 1,400, no longer at 1,600.
    now = 1_400;
    assert.equal(await f.run('k', r.read, { recent: true }), 'two');
    assert.equal(r.started.length, 2);
    now = 1_600;
    const stale = f.run('k', r.read, { recent: true });
    assert.equal(r.started.length, 3, 'a read older than the window is not reused');
    r.started[2]?.reject(new Error('503'));
    await assert.rejects(stale, /503/);
    const afterFailure = f.run('k', r.read, { recent: true });
    assert.equal(r.started.length, 4, 'the failed read is not an answer to a later caller');
    r.started[3]?.resolve('four');
    assert.equal(await afterFailure, 'four');
    assert.equal(f.kept, 1);
  });

  test('without a window nothing is kept for recent callers', async () => {
    const f = new FreshFlights<string>();
    const r = reads();
    const first = f.run('k', r.read, { recent: true });
    r.started[0]?.resolve('one');
    assert.equal(await first, 'one');
    const second = f.run('k', r.read, { recent: true });
    assert.equal(r.started.length, 2);
    r.started[1]?.resolve('two');
    assert.equal(await second, 'two');
    assert.equal(f.kept, 0);
  });

  test('different keys never join', async () => {
    const f = new FreshFlights<string>();
    const r = reads();
    const a = f.run('a', r.read);
    const b = f.run('b', r.read);
    assert.equal(r.started.length, 2);
    r.started[0]?.resolve('A');
    r.started[1]?.resolve('B');
    assert.deepEqual(await Promise.all([a, b]), ['A', 'B']);
  });
});

describe('EngineClient.list joins identical lists', () => {
  test('three identical lists at once cost two listings, a list with other filters its own; each caller gets its own copy', async () => {
    const h = harness();
    h.reply({ status: 200, body: page(1, 1, [ref(1)]), delayMs: 50 });
    // Replies go out in request order: the other list is sent second, the joined second listing third.
    h.reply({ status: 200, body: page(1, 1, [ref(3)]) });
    h.reply({ status: 200, body: page(1, 1, [ref(1), ref(2)]) });
    const filters = { load_balancer: LB_ID };
    const [first, second, third, other] = await Promise.all([
      h.client.list('backend', { filters }),
      h.client.list('backend', { filters }),
      h.client.list('backend', { filters }),
      h.client.list('backend', { filters: { load_balancer: 'f'.repeat(32) } }),
    ]);
    assert.equal(h.seen.length, 3);
    assert.deepEqual(
      h.seen.map((s) => decodeURIComponent(s.path)),
      [
        `/api/LBaaS/v1/backend.json?filters=load_balancer=${LB_ID}&page=1&limit=100`,
        `/api/LBaaS/v1/backend.json?filters=load_balancer=${'f'.repeat(32)}&page=1&limit=100`,
        `/api/LBaaS/v1/backend.json?filters=load_balancer=${LB_ID}&page=1&limit=100`,
      ],
    );
    assert.deepEqual(first, [ref(1)]);
    assert.deepEqual(second, [ref(1), ref(2)]);
    assert.deepEqual(third, [ref(1), ref(2)]);
    assert.deepEqual(other, [ref(3)]);
    assert.notEqual(second, third);
    assert.notEqual(second?.[0], third?.[0]);
    await h.done();
  });
});

describe('EngineClient.list with `recent`', () => {
  test('a second recent list of the same kind and filters is answered from the first listing (one request, its own copy); a list without `recent` sends its own', async () => {
    const h = harness();
    h.reply({ status: 200, body: page(1, 1, [ref(1)]) });
    h.reply({ status: 200, body: page(1, 1, [ref(1), ref(2)]) });
    const filters = { load_balancer: LB_ID };
    const first = await h.client.list('frontend', { filters, recent: true });
    const second = await h.client.list('frontend', { filters, recent: true });
    assert.equal(h.seen.length, 1);
    assert.deepEqual(second, [ref(1)]);
    assert.notEqual(first, second);
    assert.notEqual(first[0], second[0]);
    assert.deepEqual(await h.client.list('frontend', { filters }), [ref(1), ref(2)]);
    assert.equal(h.seen.length, 2);
    await h.done();
  });
});
