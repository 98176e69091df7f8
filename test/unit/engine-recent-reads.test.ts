/**
 * A round closing on its own reads (activities/engine/recent-reads.ts, EngineClient.readSince): the last GET answer
 * of an object is handed out only for a mark this client took itself, if the GET was sent at or after the mark and
 * nothing was written to the object since.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { toUpdateBody } from '../../activities/engine';
import { RecentReads } from '../../activities/engine/recent-reads';
import { BACKEND, BACKEND_ID, SERVER, SERVER_ID, harness } from '../helpers/engine-mock';

/** A RecentReads on a clock the test moves. */
function reads<T>(max?: number) {
  const clock = { t: 1000 };
  const r = new RecentReads<T>(max, () => clock.t);
  const at = (t: number) => ({ reader: r.reader, at: t });
  const begin = (id: string, t: number) => {
    clock.t = t;
    return r.begin(id);
  };
  return { r, clock, at, begin };
}

describe('RecentReads', () => {
  test('an answer is handed out (a copy) when its GET was sent at or after the mark, not when it was sent before', () => {
    const { r, at, begin } = reads<{ n: number }>();
    r.remember(begin('a', 1000), { n: 1 });
    assert.deepEqual(r.since('a', at(1000)), { n: 1 });
    assert.deepEqual(r.since('a', at(999)), { n: 1 });
    assert.equal(r.since('a', at(1001)), undefined, 'sent before the round began');
    const copy = r.since('a', at(0)) as { n: number };
    copy.n = 7;
    assert.deepEqual(r.since('a', at(0)), { n: 1 }, 'callers get copies');
    assert.equal(r.since('b', at(0)), undefined);
  });

  test('a mark is taken on the same clock as the reads: a GET sent after mark() counts, one sent before does not', () => {
    const { r, clock, begin } = reads<string>();
    r.remember(begin('old', 500), 'read before the round');
    clock.t = 600;
    const mark = r.mark();
    assert.deepEqual(mark, { reader: r.reader, at: 600 });
    r.remember(begin('new', 700), 'read during the round');
    assert.equal(r.since('old', mark), undefined);
    assert.equal(r.since('new', mark), 'read during the round');
  });

  test("another client's mark is never honoured, whatever its time says (two clocks are never compared)", () => {
    const mine = reads<string>();
    const other = reads<string>();
    assert.notEqual(mine.r.reader, other.r.reader);
    mine.r.remember(mine.begin('a', 5000), 'mine');
    assert.equal(mine.r.since('a', other.r.mark()), undefined, "the other worker's mark, though its clock reads earlier");
    assert.equal(mine.r.since('a', { reader: other.r.reader, at: 0 }), undefined);
    mine.clock.t = 5001;
    assert.equal(mine.r.since('a', mine.r.mark()), undefined, 'a mark taken after the read: the read is older');
    assert.equal(mine.r.since('a', mine.at(5000)), 'mine');
  });

  test('the default clock is monotonic (performance.now), not the wall clock', () => {
    const r = new RecentReads<string>();
    const mark = r.mark();
    assert.ok(Math.abs(mark.at - performance.now()) < 1000, `mark ${mark.at} is on performance.now's scale`);
    assert.ok(Math.abs(mark.at - Date.now()) > 1_000_000, 'not epoch milliseconds');
  });

  test('a write forgets the object; a GET sent before or during a write is not remembered, one sent after it is', () => {
    const { r, at, begin } = reads<string>();
    r.remember(begin('a', 1), 'before');
    const overlapping = begin('a', 2);
    r.writing('a');
    assert.equal(r.since('a', at(0)), undefined, 'forgotten as soon as the write starts');
    const during = begin('a', 3);
    r.written('a');
    r.remember(overlapping, 'sent before the write, answered after it');
    r.remember(during, 'sent during the write');
    assert.equal(r.since('a', at(0)), undefined);
    r.remember(begin('a', 4), 'after');
    assert.equal(r.since('a', at(0)), 'after');
  });

  test('a write that fails forgets too, and another object is not affected', () => {
    const { r, at, begin } = reads<string>();
    r.remember(begin('a', 1), 'a');
    r.remember(begin('b', 1), 'b');
    r.writing('a');
    r.written('a');
    assert.equal(r.since('a', at(0)), undefined);
    assert.equal(r.since('b', at(0)), 'b');
  });

  test('bounded: beyond `max` answers the oldest goes first; forgetting the write counts never makes a read wrongly kept', () => {
    const { r, at, begin } = reads<number>(3);
    for (const [i, id] of ['a', 'b', 'c', 'd'].entries()) r.remember(begin(id, i), i);
    assert.equal(r.size, 3);
    assert.equal(r.since('a', at(0)), undefined);
    assert.equal(r.since('d', at(0)), 3);
    // A GET of x starts, then x is written while the counts are cleared for room: still not remembered.
    const x = begin('x', 10);
    r.writing('x');
    for (const id of ['p', 'q', 'r']) {
      r.writing(id);
      r.written(id);
    }
    r.written('x');
    r.remember(x, 99);
    assert.equal(r.since('x', at(0)), undefined);
  });
});

describe('EngineClient.readSince', () => {
  test('the last GET answer of an object, with no request, until the client writes to it; only for its own marks', async () => {
    const h = harness();
    const other = harness();
    const since = h.client.readMark();
    h.reply({ status: 200, body: BACKEND });
    await h.client.get('backend', BACKEND_ID);
    assert.deepEqual(h.client.readSince('backend', BACKEND_ID, since), BACKEND);
    assert.equal(h.client.readSince('frontend', BACKEND_ID, since), undefined, 'only as the kind it was read as');
    assert.equal(h.client.readSince('backend', BACKEND_ID, h.client.readMark()), undefined, 'not a read from before the mark');
    assert.equal(h.client.readSince('backend', BACKEND_ID, other.client.readMark()), undefined, "not for another client's mark");
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
    await other.done();
  });
});
