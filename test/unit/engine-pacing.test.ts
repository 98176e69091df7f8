/**
 * The Engine request budget and the shared 429 backoff (activities/engine/pacing.ts), on a fake clock: every sleep
 * advances the clock by exactly what was asked, so send times are exact.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { EngineRateLimitedError, RequestPacer, type PacingOptions, type ThrottleEvent } from '../../activities/engine';
import { BACKEND, BACKEND_ID, harness } from '../helpers/engine-mock';

function fakeClock(options: PacingOptions = {}, draws: number[] = []) {
  let now = 0;
  const sleeps: number[] = [];
  const pacer = new RequestPacer({
    now: () => now,
    sleep: async (ms) => {
      sleeps.push(ms);
      now += ms;
    },
    random: () => draws.shift() ?? 1,
    ...options,
  });
  const events: ThrottleEvent[] = [];
  pacer.onThrottle((e) => events.push(e));
  return {
    pacer,
    sleeps,
    events,
    get now() {
      return now;
    },
    advance(ms: number) {
      now += ms;
    },
    /** Acquires `n` turns one after the other and returns the clock at each send. */
    async sends(n: number): Promise<number[]> {
      const at: number[] = [];
      for (let i = 0; i < n; i++) {
        await pacer.acquire();
        at.push(now);
      }
      return at;
    },
  };
}

describe('RequestPacer budget (token bucket)', () => {
  test('a burst goes out at once, then requests are spaced at the rate: 5/s with burst 2 sends at 0, 0, 200, 400, 600 ms', async () => {
    const c = fakeClock({ requestsPerSecond: 5, burst: 2 });
    assert.deepEqual(await c.sends(5), [0, 0, 200, 400, 600]);
  });

  test('turns are handed out in call order when requests wait together', async () => {
    const c = fakeClock({ requestsPerSecond: 2, burst: 1 });
    const order: number[] = [];
    await Promise.all([0, 1, 2, 3].map((i) => c.pacer.acquire().then(() => order.push(i))));
    assert.deepEqual(order, [0, 1, 2, 3]);
    assert.equal(c.now, 1500);
  });

  test('without a budget nothing waits before the first 429', async () => {
    const c = fakeClock();
    assert.deepEqual(await c.sends(50), new Array(50).fill(0));
    assert.deepEqual(c.sleeps, []);
  });
});

describe('RequestPacer backoff on 429', () => {
  test('without Retry-After the pause bound starts at 1 s and doubles per 429 up to the 60 s cap; jitter draws within it', async () => {
    const c = fakeClock({ requestsPerSecond: 100, burst: 100, minRequestsPerSecond: 50 }, [1, 1, 1, 1, 1, 1, 1, 1, 0.25]);
    const pauses: number[] = [];
    for (let i = 0; i < 9; i++) {
      const epoch = await c.pacer.acquire();
      c.pacer.settle(epoch, 429);
      pauses.push(c.events.at(-1)?.pauseMs ?? -1);
    }
    assert.deepEqual(pauses, [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 15_000]);
  });

  test('Retry-After is honoured exactly, whatever the jitter would draw', async () => {
    const c = fakeClock({ requestsPerSecond: 10 }, [0]);
    const epoch = await c.pacer.acquire();
    assert.equal(c.pacer.settle(epoch, 429, 3_000), 3_000);
    const start = c.now;
    await c.pacer.acquire();
    assert.equal(c.now - start, 3_000);
  });

  test('settle answers a Retry-After of 3 s with exactly 3000 ms even when the clock moves between its reads (CI saw 2998)', () => {
    let now = 0;
    // Every read of the clock advances it by 1 ms, as a busy machine may between two statements.
    const pacer = new RequestPacer({ requestsPerSecond: 10, now: () => (now += 1), random: () => 1 });
    assert.equal(pacer.settle(0, 429, 3_000), 3_000);
  });

  test('a pause of 1 s set at a fractional clock reading is 1000 ms, not 1001 (floating-point noise is not rounded up; CI saw 1001)', () => {
    // (64649.98128687016 + 1000) - 64649.98128687016 is 1000.0000000000073 in double precision.
    const pacer = new RequestPacer({ requestsPerSecond: 10, now: () => 64649.98128687016, random: () => 1 });
    assert.equal(pacer.settle(0, 429), 1_000);
  });

  test('one 429 holds back every later request of the client, not only the one that got it', async () => {
    const c = fakeClock({ requestsPerSecond: 100, burst: 100 }, [0.5]);
    const first = await c.pacer.acquire();
    c.pacer.settle(first, 429);
    const sends = await c.sends(3);
    assert.ok(sends.every((t) => t >= 500), `every later request waited out the 500 ms pause: ${sends}`);
    assert.equal(c.pacer.stats().backingOff, false);
  });

  test('429s answering requests sent before the last decrease count once: twenty in flight halve the rate once, pause once', async () => {
    const c = fakeClock({ requestsPerSecond: 20, burst: 20 });
    const epochs = await Promise.all(Array.from({ length: 20 }, () => c.pacer.acquire()));
    for (const e of epochs) c.pacer.settle(e, 429);
    assert.equal(c.events.filter((e) => e.escalated).length, 1);
    assert.equal(c.pacer.stats().requestsPerSecond, 10);
    assert.equal(c.pacer.stats().rateLimited, 20);
    assert.equal(c.events.at(-1)?.pauseMs, 1_000);
  });

  test('a success after the backoff resets the pause bound to its start', async () => {
    const c = fakeClock({ requestsPerSecond: 100, burst: 100, minRequestsPerSecond: 50 });
    for (let i = 0; i < 3; i++) c.pacer.settle(await c.pacer.acquire(), 429);
    assert.equal(c.events.at(-1)?.pauseMs, 4_000);
    c.pacer.settle(await c.pacer.acquire(), 200);
    c.pacer.settle(await c.pacer.acquire(), 429);
    assert.equal(c.events.at(-1)?.pauseMs, 1_000);
  });

  test('retryDelayMs is the pause in force, and at least one token at the lowered rate', async () => {
    const c = fakeClock({ requestsPerSecond: 2, burst: 1, minRequestsPerSecond: 0.5 }, [0]);
    const delay = c.pacer.settle(await c.pacer.acquire(), 429);
    // Pause drawn as 0; the rate halved to 1/s, so the next token is 1 s away.
    assert.equal(delay, 1_000);
  });

  test('time spent backing off counts overlapping pauses once', async () => {
    const c = fakeClock({ requestsPerSecond: 100, burst: 100 });
    c.pacer.settle(await c.pacer.acquire(), 429, 2_000);
    c.advance(500);
    // An older request's 429 with Retry-After 1 s ends within the pause in force: it adds nothing.
    c.pacer.settle(0, 429, 1_000);
    c.advance(1_500);
    assert.equal(c.pacer.stats().backoffMs, 2_000);
    assert.deepEqual(c.events.map((e) => e.addedBackoffMs), [2_000, 0]);
  });
});

describe('RequestPacer adapts its rate (AIMD)', () => {
  test('the rate halves on a 429, never below the floor, climbs back to the rate of the last 429 within recoveryMs, then by increasePerSecond up to the budget', async () => {
    // Each 429 is answered at once (a zero pause, sent with the burst still full), so no time passes between them.
    const c = fakeClock({ requestsPerSecond: 8, burst: 8, increasePerSecond: 0.5, minRequestsPerSecond: 1.5, recoveryMs: 10_000 }, [0, 0, 0, 0]);
    const epochs = [await c.pacer.acquire()];
    const rates: number[] = [];
    for (let i = 0; i < 3; i++) {
      c.pacer.settle(epochs[i] as number, 429);
      rates.push(c.pacer.stats().requestsPerSecond);
      epochs.push(i + 1);
    }
    assert.deepEqual(rates, [4, 2, 1.5]);
    // Halfway through the recovery, 1/8 of the way from 2 (the rate the last 429 came at) down to 1.5 is still missing.
    c.advance(5_000);
    assert.equal(c.pacer.stats().requestsPerSecond, 2 - 0.5 / 8);
    c.advance(5_000);
    assert.equal(c.pacer.stats().requestsPerSecond, 2);
    c.advance(4_000);
    assert.equal(c.pacer.stats().requestsPerSecond, 2 + 4 * 0.5);
    c.advance(60_000);
    assert.equal(c.pacer.stats().requestsPerSecond, 8);
  });

  test('a lone 429 at the budget costs a few seconds of reduced rate, not a minute and a half (the default recovery)', async () => {
    // The budget bench's case: two buckets at 20/s disagree by jitter. With the additive increase alone (0.1/s each
    // second) the halved rate took 100 s to get back to 20/s.
    const c = fakeClock({ requestsPerSecond: 20, burst: 20 }, [0]);
    c.pacer.settle(await c.pacer.acquire(), 429);
    assert.equal(c.pacer.stats().requestsPerSecond, 10);
    c.advance(5_000);
    assert.equal(c.pacer.stats().requestsPerSecond, 20 - 10 / 8);
    c.advance(5_000);
    assert.equal(c.pacer.stats().requestsPerSecond, 20);
  });

  test('without a budget the first 429 bounds the rate at half of what was sent over the last 2 s', async () => {
    const c = fakeClock({}, [0]);
    const epochs: number[] = [];
    for (let i = 0; i < 40; i++) epochs.push(await c.pacer.acquire());
    c.pacer.settle(epochs[39] as number, 429);
    assert.equal(c.pacer.stats().requestsPerSecond, 10);
  });

  test('the rate does not climb while a pause is in force', async () => {
    const c = fakeClock({ requestsPerSecond: 8, increasePerSecond: 1 }, [0]);
    c.pacer.settle(await c.pacer.acquire(), 429, 10_000);
    c.advance(9_000);
    assert.equal(c.pacer.stats().requestsPerSecond, 4);
  });

  test('options out of range are refused, naming the option', () => {
    assert.throws(() => new RequestPacer({ requestsPerSecond: 0 }), new TypeError('requestsPerSecond must be a positive number, got 0'));
    assert.throws(() => new RequestPacer({ burst: Infinity }), new TypeError('burst must be a positive number, got Infinity'));
    assert.throws(() => new RequestPacer({ backoffCapMs: -1 }), new TypeError('backoffCapMs must be a positive number, got -1'));
  });
});

describe('EngineClient goes through its pacer', () => {
  test('a 429 without Retry-After fails the call with retryAfterMs set to the shared backoff, and holds back the next call', async () => {
    let now = 0;
    const sleeps: number[] = [];
    const h = harness({
      pacing: { requestsPerSecond: 10, burst: 10, now: () => now, random: () => 0.75, sleep: async (ms) => void (sleeps.push(ms), (now += ms)) },
    });
    h.reply({ status: 429, body: { error: { code: 429, message: 'slow down' } } });
    h.reply({ status: 200, body: BACKEND });
    await assert.rejects(h.client.get('backend', BACKEND_ID), (err: unknown) => {
      assert.ok(err instanceof EngineRateLimitedError);
      assert.equal(err.retryAfterMs, 750);
      return true;
    });
    assert.equal((await h.client.get('backend', BACKEND_ID)).identifier, BACKEND_ID);
    assert.deepEqual(sleeps, [750]);
    assert.deepEqual(h.client.pacer.stats(), { rateLimited: 1, backoffMs: 750, requestsPerSecond: 5, backingOff: false });
    await h.done();
  });

  test('two clients given one pacer share its backoff', async () => {
    const shared = new RequestPacer({ requestsPerSecond: 10 });
    const a = harness({ pacing: shared });
    const b = harness({ pacing: shared });
    assert.equal(a.client.pacer, b.client.pacer);
    await a.done();
    await b.done();
  });
});

describe('RequestPacer adaptive budget (initialRequestsPerSecond: the worker default)', () => {
  const close = (actual: number, expected: number, what: string) => assert.ok(Math.abs(actual - expected) <= expected * 1e-9, `${what}: ${actual}, expected ${expected}`);

  test('while requests queue and no 429 came, the rate doubles every doublingMs from the initial rate, up to the ceiling', async () => {
    const c = fakeClock({ requestsPerSecond: 40, initialRequestsPerSecond: 10, burst: 1, doublingMs: 1_000 });
    let sent = 0;
    while (c.now < 3_000) {
      await c.pacer.acquire();
      sent++;
      close(c.pacer.stats().requestsPerSecond, Math.min(40, 10 * 2 ** (c.now / 1_000)), `rate at ${c.now} ms`);
    }
    assert.equal(c.pacer.stats().requestsPerSecond, 40);
    // A fixed 10/s sends 31 in these 3 s; this sends the first, the integral of 10 * 2^t over 2 s (30 / ln 2 = 43.3)
    // and 40 in the last second.
    assert.equal(sent, 84);
  });

  test('a worker whose requests never queue keeps the initial rate', async () => {
    const c = fakeClock({ requestsPerSecond: 40, initialRequestsPerSecond: 10, burst: 10 });
    for (let i = 0; i < 50; i++) {
      await c.pacer.acquire();
      c.advance(200);
    }
    assert.equal(c.pacer.stats().requestsPerSecond, 10);
  });

  test('a fixed budget (no initial rate) never grows, however long requests queue', async () => {
    const c = fakeClock({ requestsPerSecond: 10, burst: 1 });
    const at = await c.sends(31);
    assert.equal(at.at(-1), 3_000);
    assert.equal(c.pacer.stats().requestsPerSecond, 10);
  });

  test('the first 429 ends the growth: the rate halves, holds for recoveryMs (the growth overshot), then grows by increasePerSecond; a later 429 climbs back as a fixed budget does', async () => {
    const c = fakeClock({ requestsPerSecond: 50, initialRequestsPerSecond: 10, burst: 1 }, [0, 0]);
    let epoch = 0;
    while (c.now < 1_000) epoch = await c.pacer.acquire();
    const at429 = c.pacer.stats().requestsPerSecond;
    close(at429, 10 * 2 ** (c.now / 1_000), 'grown rate');
    c.pacer.settle(epoch, 429);
    const halved = at429 / 2;
    assert.equal(c.pacer.stats().requestsPerSecond, halved);
    // Queueing no longer doubles the rate: it holds for the 10 s of recovery, then grows by 0.1 requests/s each second.
    const start = c.now;
    while (c.now < start + 5_000) epoch = await c.pacer.acquire();
    close(c.pacer.stats().requestsPerSecond, halved, 'held after the first 429');
    c.advance(start + 15_000 - c.now);
    close(c.pacer.stats().requestsPerSecond, halved + 5 * 0.1, 'additive growth after the recovery');
    // A second 429: halved again, and back at the rate it came at within recoveryMs.
    const atSecond = c.pacer.stats().requestsPerSecond;
    c.pacer.settle(epoch, 429);
    assert.equal(c.pacer.stats().requestsPerSecond, atSecond / 2);
    c.advance(10_000);
    close(c.pacer.stats().requestsPerSecond, atSecond, 'back at the rate of the second 429 after recoveryMs');
  });

  test('an initial rate above the ceiling is refused, naming both', () => {
    assert.throws(() => new RequestPacer({ requestsPerSecond: 5, initialRequestsPerSecond: 10 }), new TypeError('initialRequestsPerSecond must not exceed requestsPerSecond (5), got 10'));
    assert.throws(() => new RequestPacer({ requestsPerSecond: 5, initialRequestsPerSecond: 1, doublingMs: 0 }), new TypeError('doublingMs must be a positive number, got 0'));
  });
});
