import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  aimedSchedule,
  DeployTimes,
  MAX_GAP_MS,
  MIN_GAP_MS,
  PRIOR_FIRST_MS,
  priorSchedule,
  quantileOf,
  SAMPLES_PER_KIND,
  WATCH_FIRST,
  WATCH_STEPS,
  WATCHED_KINDS,
  watchedSchedule,
  type PollSchedule,
} from '../../activities/deploy-times';
import { EngineNotFoundError, type EngineClient } from '../../activities/engine';
import { watchDeploy } from '../../activities/realize';

/** The first n offsets of a schedule. */
const take = (s: PollSchedule, n: number): number[] => {
  const out: number[] = [];
  let prev: number | null = null;
  for (let i = 0; i < n; i++) out.push((prev = s.next(prev)));
  return out;
};

/** Polls a schedule needs to see a deploy of `ms` (the first offset at or after it). */
const pollsFor = (s: PollSchedule, ms: number): number => {
  let prev: number | null = null;
  for (let i = 1; ; i++) if ((prev = s.next(prev)) >= ms) return i;
};

const uniform = (min: number, max: number, n: number) => Array.from({ length: n }, (_, i) => min + ((max - min) * (i + 0.5)) / n);

describe('DeployTimes', () => {
  test('before MIN_SAMPLES deploys of a kind the prior applies: 250 ms, then gaps growing by 1.25 up to 500 ms', () => {
    const t = new DeployTimes();
    for (let i = 0; i < 7; i++) t.record('server', 1000, 1200);
    const s = t.schedule('server');
    assert.equal(s.learned, false);
    assert.deepEqual(take(s, 6), [250, 500, 813, 1204, 1693, 2193]);
    assert.deepEqual(take(priorSchedule(), 1), [PRIOR_FIRST_MS]);
    // Other kinds are learned separately: eight Servers teach nothing about Binds.
    t.record('server', 1000, 1200);
    assert.equal(t.schedule('server').learned, true);
    assert.equal(t.schedule('bind').learned, false);
  });

  test('learn: false keeps every kind on the prior schedule whatever it saw, watched kinds included (the bench A/B baseline)', () => {
    const on = new DeployTimes();
    const off = new DeployTimes({ learn: false });
    for (const t of [on, off]) for (let i = 0; i < 64; i++) for (const kind of ['backend', 'server'] as const) t.record(kind, 1500, 1700);
    assert.equal(on.schedule('server').learned, true);
    assert.equal(on.schedule('backend').learned, true);
    for (const kind of ['backend', 'frontend', 'bind', 'server'] as const) {
      const s = off.schedule(kind);
      assert.equal(s.learned, false, kind);
      assert.deepEqual(take(s, 6), [250, 500, 813, 1204, 1693, 2193], kind);
    }
    assert.equal(off.samples('server').length, 64, 'it still records (only the schedule ignores what it learned)');
  });

  test('a recorded deploy is the middle of the last not-ready poll and the first ready one; ready at the first poll counts from zero', () => {
    const t = new DeployTimes();
    t.record('backend', 1000, 1400);
    t.record('backend', 0, 600);
    t.record('backend', 2000, 1900);
    assert.deepEqual(t.samples('backend'), [300, 1200, 2000]);
  });

  test('the sure schedule (a deploy nothing waits on) polls first a quarter past the largest ready-by time seen, then at the prior\'s gaps; the prior before MIN_SAMPLES; on deploys of 1-3 s one GET each', () => {
    const t = new DeployTimes();
    for (let i = 0; i < 7; i++) t.record('server', 1000, 1400);
    assert.deepEqual(take(t.sureSchedule('server'), 3), take(priorSchedule(), 3));
    t.record('server', 0, 600);
    t.record('server', 2600, 2900);
    assert.deepEqual(take(t.sureSchedule('server'), 4), [3625, 3725, 3850, 4006]);
    // Quick deploys: at least MIN_GAP_MS past the largest.
    const quick = new DeployTimes();
    for (let i = 0; i < 8; i++) quick.record('server', 0, 40);
    assert.equal(take(quick.sureSchedule('server'), 1)[0], 140);
    // Deploys spread evenly over 1-3 s, each recorded as the aimed schedule saw it: every later one needs one GET.
    const even = new DeployTimes();
    const deploys = Array.from({ length: SAMPLES_PER_KIND }, (_, i) => 1000 + (2000 * i) / (SAMPLES_PER_KIND - 1));
    for (const d of deploys) even.record('server', d - 50, d + 50);
    assert.ok(deploys.every((d) => pollsFor(even.sureSchedule('server'), d) === 1));
  });

  test('memory is bounded: the ring keeps the last SAMPLES_PER_KIND deploys of a kind, so a change of pace replaces the old ones', () => {
    const t = new DeployTimes();
    for (let i = 0; i < SAMPLES_PER_KIND; i++) t.record('frontend', 9000, 9000);
    for (let i = 0; i < SAMPLES_PER_KIND; i++) t.record('frontend', 1000, 1000);
    assert.deepEqual(t.samples('frontend'), Array.from({ length: SAMPLES_PER_KIND }, () => 1000));
  });

  test('the aimed schedule polls at the AIM quantile, then at quantiles halving what is left, gaps within [MIN_GAP_MS, MAX_GAP_MS]', () => {
    const sorted = uniform(1000, 3000, 64);
    const q = (p: number) => quantileOf(sorted, p);
    const s = aimedSchedule(sorted, 0.5);
    const [a, b, c, d, e, f] = take(s, 6);
    assert.deepEqual([a, b, c], [q(0.5), q(0.75), q(0.875)]);
    // Later quantiles crowd together: no two polls closer than MIN_GAP_MS, none further apart than MAX_GAP_MS.
    assert.equal(d, Math.max(q(0.9375), (c as number) + MIN_GAP_MS));
    assert.equal(e, Math.max(q(0.96875), (d as number) + MIN_GAP_MS));
    assert.equal(f, Math.max(q(0.984375), (e as number) + MIN_GAP_MS));
    assert.ok((f as number) - (e as number) <= MAX_GAP_MS);
    assert.equal(take(aimedSchedule([50, 60, 70, 80, 90, 100, 110, 120], 0.5), 1)[0], MIN_GAP_MS, 'never before MIN_GAP_MS');
    assert.deepEqual(take(aimedSchedule([5000, 5000, 5000, 5000], 0.5), 6), [5000, 5100, 5225, 5381, 5576, 5820], 'past the largest sample, gaps from MIN_GAP_MS growing by 1.25');
    const far = take(aimedSchedule([5000], 0.5), 12);
    assert.equal((far[11] as number) - (far[10] as number), MAX_GAP_MS, 'up to MAX_GAP_MS');
  });

  test('on deploys spread evenly over 1-3 s, aiming at the median costs about two GETs per deploy, half of the prior schedule or less', () => {
    const t = new DeployTimes();
    for (const ms of uniform(1000, 3000, 64)) t.record('server', ms, ms);
    const deploys = uniform(1000, 3000, 200);
    const polls = deploys.map((ms) => pollsFor(t.schedule('server'), ms));
    const prior = deploys.map((ms) => pollsFor(priorSchedule(), ms));
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const sorted = [...polls].sort((x, y) => x - y);
    assert.equal(sorted[100], 2, 'median polls');
    assert.ok(mean(polls) <= 2.1, `mean polls ${mean(polls)}`);
    assert.ok(mean(prior) >= 2 * mean(polls), `prior ${mean(prior)} vs aimed ${mean(polls)}`);
    // A lower aim buys less slack with more GETs.
    const low = new DeployTimes({ aim: 0.25 });
    for (const ms of uniform(1000, 3000, 64)) low.record('server', ms, ms);
    assert.ok(mean(deploys.map((ms) => pollsFor(low.schedule('server'), ms))) > mean(polls));
  });

  test('deploys that become quick pull the aim down (each one ready at the first poll is recorded at half of it) until the first poll is MIN_GAP_MS after the create', () => {
    const t = new DeployTimes();
    for (let i = 0; i < SAMPLES_PER_KIND; i++) t.record('bind', 2000, 2000);
    const firsts: number[] = [];
    // The Engine now deploys in 100 ms: every deploy is ready at the first poll, which is aimed lower and lower.
    for (let i = 0; i < 4 * SAMPLES_PER_KIND; i++) {
      const first = t.schedule('bind').next(null);
      if (i % SAMPLES_PER_KIND === 0) firsts.push(first);
      t.record('bind', 0, first);
    }
    // Within 64 quick deploys the first poll falls from 2 s to 0.5 s, within 192 to MIN_GAP_MS.
    assert.deepEqual(firsts, [2000, 500, 125, MIN_GAP_MS]);
  });

  test('the kinds other objects are created under are watched: Backends and Frontends, not Binds or Servers', () => {
    assert.deepEqual([...WATCHED_KINDS].sort(), ['backend', 'frontend']);
    const t = new DeployTimes();
    const off = new DeployTimes({ watch: false });
    for (const ms of uniform(1000, 3000, 64)) {
      for (const k of ['backend', 'frontend', 'bind', 'server'] as const) {
        t.record(k, ms, ms);
        off.record(k, ms, ms);
      }
    }
    const sorted = uniform(1000, 3000, 64);
    assert.deepEqual(take(t.schedule('backend'), 4), take(watchedSchedule(sorted), 4));
    assert.deepEqual(take(t.schedule('frontend'), 4), take(watchedSchedule(sorted), 4));
    assert.deepEqual(take(t.schedule('bind'), 4), take(aimedSchedule(sorted, 0.5), 4));
    assert.deepEqual(take(t.schedule('server'), 4), take(aimedSchedule(sorted, 0.5), 4));
    assert.deepEqual(take(off.schedule('backend'), 4), take(aimedSchedule(sorted, 0.5), 4), 'watch: false aims every kind');
  });

  test('the watched schedule polls at the WATCH_FIRST quantile, then every WATCH_STEPS-th of the spread up to the largest sample, then gaps growing to MAX_GAP_MS', () => {
    const sorted = uniform(1000, 3000, 64);
    const q = (p: number) => quantileOf(sorted, p);
    const gap = Math.round((q(1 - WATCH_FIRST) - q(WATCH_FIRST)) / WATCH_STEPS);
    assert.equal(gap, 199);
    const polls = take(watchedSchedule(sorted), 12);
    assert.equal(polls[0], q(WATCH_FIRST));
    assert.deepEqual(polls.slice(1, 10), polls.slice(0, 9).map((p) => p + gap));
    // 1203 + 9 x 199 = 2994 is past the largest sample (2984): from there the gaps grow by 1.25.
    const ninth = q(WATCH_FIRST) + 9 * gap;
    assert.deepEqual(polls.slice(9), [ninth, ninth + gap, ninth + gap + Math.round(gap * 1.25)]);
    // The gap stays within [MIN_GAP_MS, MAX_GAP_MS] whatever the spread.
    assert.deepEqual(take(watchedSchedule([2000, 2000, 2000]), 3), [2000, 2000 + MIN_GAP_MS, 2000 + MIN_GAP_MS + 125]);
    const wide = take(watchedSchedule(uniform(1000, 60_000, 64)), 3);
    assert.equal((wide[1] as number) - (wide[0] as number), MAX_GAP_MS);
  });

  test('on deploys spread evenly over 1-3 s, watching leaves under a third of the median-aimed slack for five to six GETs per deploy', () => {
    const sorted = uniform(1000, 3000, 64);
    const deploys = uniform(1000, 3000, 400);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const cost = (s: () => PollSchedule) => {
      const seen = deploys.map((ms) => {
        const sched = s();
        let at = sched.next(null);
        let n = 1;
        while (at < ms) {
          at = sched.next(at);
          n++;
        }
        return { gets: n, slack: at - ms };
      });
      return { gets: mean(seen.map((x) => x.gets)), slack: mean(seen.map((x) => x.slack)) };
    };
    const watched = cost(() => watchedSchedule(sorted));
    const aimed = cost(() => aimedSchedule(sorted, 0.5));
    assert.ok(watched.slack < 110 && aimed.slack > 300, `slack: watched ${watched.slack} ms, aimed ${aimed.slack} ms`);
    assert.ok(watched.gets > 5 && watched.gets < 6, `GETs per watched deploy ${watched.gets}`);
    assert.ok(aimed.gets < 2, `GETs per aimed deploy ${aimed.gets}`);
  });

  test('bad options are refused, naming the option', () => {
    assert.throws(() => new DeployTimes({ aim: 1 }), /aim: expected a quantile between 0 and 1/);
    assert.throws(() => new DeployTimes({ samplesPerKind: 0 }), /samplesPerKind: expected an integer >= 1/);
  });
});

describe('watchDeploy', () => {
  /** An Engine whose one object is NewlyCreated until `readyAt` (ms since epoch), then `final`; counts its GETs. */
  const engineWith = (readyAt: number, final: 'Deployed' | 'gone') => {
    const gets: number[] = [];
    const engine = {
      async get() {
        gets.push(Date.now());
        if (Date.now() < readyAt) return { state: { id: '4', text: 'NewlyCreated' } };
        if (final === 'gone') throw new EngineNotFoundError({ method: 'GET', path: '/api/LBaaS/v1/server.json/s2', status: 404 });
        return { state: { id: '3', text: 'Deployed' } };
      },
    } as unknown as EngineClient;
    return { engine, gets };
  };

  test('polls on the learned schedule, returns Deployed and learns the deploy time', async () => {
    const t = new DeployTimes({ minSamples: 1 });
    t.record('bind', 300, 300);
    const createdAt = Date.now();
    // Deployed from the second GET on, whenever it comes: a loaded machine fires timers late, never early, so the
    // assertions below hold however late each poll is.
    const gets: number[] = [];
    const engine = {
      async get() {
        gets.push(Date.now() - createdAt);
        return { state: gets.length < 2 ? { id: '4', text: 'NewlyCreated' } : { id: '3', text: 'Deployed' } };
      },
    } as unknown as EngineClient;
    const r = await watchDeploy(engine, t, { kind: 'bind', identifier: 'b1', createdAt, state: 'NewlyCreated' }, createdAt + 60_000);
    assert.deepEqual(r, { outcome: 'Deployed', state: 'Deployed' });
    // 300 ms (the only sample): not ready; at 400 ms (MIN_GAP_MS after the first point) or later: ready.
    assert.equal(gets.length, 2);
    // Read on Date.now(), a Node timer may fire up to 1 ms before its delay (libuv counts whole milliseconds of its
    // own clock; a fresh-clone CI run saw the second GET at 399 ms): 1 ms early is on schedule, 2 ms is not.
    const TIMER_GRAIN_MS = 1;
    assert.ok((gets[0] as number) >= 300 - TIMER_GRAIN_MS, `first GET at ${gets[0]} ms, not before the learned 300 ms`);
    // The schedule's points are times since the create: the second is due at 400 ms however late the first was sent.
    assert.ok((gets[1] as number) >= 400 - TIMER_GRAIN_MS, `second GET at ${gets[1]} ms, not before the schedule's 400 ms`);
    assert.equal(t.samples('bind').length, 2);
    const learned = t.samples('bind')[1] as number;
    const middle = ((gets[0] as number) + (gets[1] as number)) / 2;
    assert.ok(Math.abs(learned - middle) <= 2, `learned ${learned}: the middle of the not-ready and the ready GET (${gets.join(', ')} ms)`);
  });

  test('a deploy still running at the deadline comes back NotReady with its last state; gone is Gone; nothing is learned from either', async () => {
    const t = new DeployTimes();
    const createdAt = Date.now();
    const slow = engineWith(createdAt + 60_000, 'Deployed');
    assert.deepEqual(await watchDeploy(slow.engine, t, { kind: 'server', identifier: 's1', createdAt, state: 'NewlyCreated' }, createdAt + 600), {
      outcome: 'NotReady',
      state: 'NewlyCreated',
    });
    // Prior schedule: 250 and 500 ms fit before the 600 ms deadline, 813 does not.
    assert.equal(slow.gets.length, 2);
    const gone = engineWith(Date.now(), 'gone');
    assert.deepEqual(await watchDeploy(gone.engine, t, { kind: 'server', identifier: 's2', createdAt: Date.now(), state: 'NewlyCreated' }, Date.now() + 5000), {
      outcome: 'Gone',
      state: 'NewlyCreated',
    });
    assert.deepEqual(t.samples('server'), []);
  });
});
