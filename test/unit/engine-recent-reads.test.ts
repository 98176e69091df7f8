/**
 * A round closing on its own reads (activities/engine/recent-reads.ts, EngineClient.readSince): the last GET answer
 * of an object is handed out only if it was sent since the time asked for and nothing was written to the object since.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { toUpdateBody } from '../../activities/engine';
import { RecentReads } from '../../activities/engine/recent-reads';
import { BACKEND, BACKEND_ID, SERVER, SERVER_ID, harness } from '../helpers/engine-mock';

describe('RecentReads', () => {
  test('an answer is handed out (a copy) when its GET was sent at or after `since`, not when it was sent before', () => {
    const r = new RecentReads<{ n: number }>();
    r.remember(r.begin('a', 1000), { n: 1 });
    assert.deepEqual(r.since('a', 1000), { n: 1 });
    assert.deepEqual(r.since('a', 999), { n: 1 });
    assert.equal(r.since('a', 1001), undefined, 'sent before the round began');
    const copy = r.since('a', 0) as { n: number };
    copy.n = 7;
    assert.deepEqual(r.since('a', 0), { n: 1 }, 'callers get copies');
    assert.equal(r.since('b', 0), undefined);
  });

  test('a write forgets the object; a GET sent before or during a write is not remembered, one sent after it is', () => {
    const r = new RecentReads<string>();
    r.remember(r.begin('a', 1), 'before');
    const overlapping = r.begin('a', 2);
    r.writing('a');
    assert.equal(r.since('a', 0), undefined, 'forgotten as soon as the write starts');
    const during = r.begin('a', 3);
    r.written('a');
    r.remember(overlapping, 'sent before the write, answered after it');
    r.remember(during, 'sent during the write');
    assert.equal(r.since('a', 0), undefined);
    r.remember(r.begin('a', 4), 'after');
    assert.equal(r.since('a', 0), 'after');
  });

  test('a write that fails forgets too, and another object is not affected', () => {
    const r = new RecentReads<string>();
    r.remember(r.begin('a', 1), 'a');
    r.remember(r.begin('b', 1), 'b');
    r.writing('a');
    r.written('a');
    assert.equal(r.since('a', 0), undefined);
    assert.equal(r.since('b', 0), 'b');
  });

  test('bounded: beyond `max` answers the oldest goes first; forgetting the write counts never makes a read wrongly kept', () => {
    const r = new RecentReads<number>(3);
    for (const [i, id] of ['a', 'b', 'c', 'd'].entries()) r.remember(r.begin(id, i), i);
    assert.equal(r.size, 3);
    assert.equal(r.since('a', 0), undefined);
    assert.equal(r.since('d', 0), 3);
    // A GET of x starts, then x is written while the counts are cleared for room: still not remembered.
    const x = r.begin('x', 10);
    r.writing('x');
    for (const id of ['p', 'q', 'r']) {
      r.writing(id);
      r.written(id);
    }
    r.written('x');
    r.remember(x, 99);
    assert.equal(r.since('x', 0), undefined);
  });
});

describe('EngineClient.readSince', () => {
  test('the last GET answer of an object, with no request, until the client writes to it', async () => {
    const h = harness();
    const since = Date.now();
    h.reply({ status: 200, body: BACKEND });
    await h.client.get('backend', BACKEND_ID);
    assert.deepEqual(h.client.readSince('backend', BACKEND_ID, since), BACKEND);
    assert.equal(h.client.readSince('frontend', BACKEND_ID, since), undefined, 'only as the kind it was read as');
    assert.equal(h.client.readSince('backend', BACKEND_ID, Date.now() + 1000), undefined, 'not a read from before `since`');
    assert.equal(h.seen.length, 1);
    h.reply({ status: 200, body: BACKEND });
    await h.client.update('backend', BACKEND_ID, toUpdateBody('backend', BACKEND));
    assert.equal(h.client.readSince('backend', BACKEND_ID, since), undefined, 'forgotten after a PUT');
    h.reply({ status: 200, body: SERVER });
    await h.client.get('server', SERVER_ID);
    h.reply({ status: 500, body: { error: 'boom' } });
    await assert.rejects(h.client.delete('server', SERVER_ID));
    assert.equal(h.client.readSince('server', SERVER_ID, since), undefined, 'forgotten after a DELETE, even a failed one');
    await h.done();
  });
});
