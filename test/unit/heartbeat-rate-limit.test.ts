/**
 * How a throttled activity says it is rate limited on its heartbeat (activities/heartbeat.ts), in a real activity
 * Context with a recording heartbeat function: progress is kept inside the wrapper, and the next attempt reads its
 * progress back whether the last beat was wrapped or bare.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { asyncLocalStorage, Context, type Info } from '@temporalio/activity';
import { isRateLimitedDetails } from '../../contract';
import { Heartbeat, noteRateLimited, reportRateLimits, RATE_LIMIT_HOLD_MS } from '../../activities/heartbeat';

function activity(previous?: unknown) {
  const sent: unknown[] = [];
  const info = { heartbeatDetails: previous } as unknown as Info;
  const log = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };
  const ctx = new Context(info, new Promise<never>(() => undefined), new AbortController().signal, (d?: unknown) => sent.push(d), log as never, {} as never, undefined as never, undefined as never);
  return { sent, run: <T>(body: () => T): T => asyncLocalStorage.run(ctx, body) };
}

describe('rate limits on the heartbeat', () => {
  test('progress goes bare until a 429; then wrapped with the time, progress kept; a passed time goes bare again', () => {
    const a = activity();
    a.run(() => {
      const hb = new Heartbeat<{ done: number }>();
      hb.record({ done: 1 });
      assert.deepEqual(a.sent, [{ done: 1 }]);
      const until = Date.now() + 60_000;
      noteRateLimited(until);
      assert.deepEqual(a.sent[1], { lbaasRateLimited: 1, engineRateLimitedUntil: until, progress: { done: 1 } });
      hb.record({ done: 2 });
      assert.deepEqual(a.sent[2], { lbaasRateLimited: 1, engineRateLimitedUntil: until, progress: { done: 2 } });
      noteRateLimited(until - 30_000);
      assert.equal((a.sent[3] as unknown as { engineRateLimitedUntil: number }).engineRateLimitedUntil, until, 'an earlier time never shortens one in force');
    });
    const b = activity();
    b.run(() => {
      const hb = new Heartbeat<number>();
      hb.record(7);
      noteRateLimited(Date.now() - 1);
      assert.deepEqual(b.sent, [7, 7], 'a time already passed leaves the details bare');
    });
  });

  test('the next attempt reads its progress from wrapped details as from bare ones', () => {
    const wrapped = activity({ lbaasRateLimited: 1, engineRateLimitedUntil: 5, progress: { done: 3 } });
    wrapped.run(() => assert.deepEqual(new Heartbeat<{ done: number }>().previous, { done: 3 }));
    const bare = activity({ done: 4 });
    bare.run(() => assert.deepEqual(new Heartbeat<{ done: number }>().previous, { done: 4 }));
  });

  test('an activity without a Heartbeat still beats the wrapper; outside an activity nothing happens', () => {
    const a = activity();
    const listeners: ((e: { pauseMs: number }) => void)[] = [];
    const t0 = Date.now();
    reportRateLimits({ onThrottle: (l) => listeners.push(l) }, () => t0);
    a.run(() => listeners.forEach((l) => l({ pauseMs: 2_000 })));
    assert.equal(a.sent.length, 1);
    assert.ok(isRateLimitedDetails(a.sent[0]));
    assert.equal(a.sent[0].engineRateLimitedUntil, t0 + 2_000 + RATE_LIMIT_HOLD_MS);
    assert.equal(a.sent[0].progress, undefined);
    assert.doesNotThrow(() => listeners.forEach((l) => l({ pauseMs: 1 })));
  });
});
