/**
 * kube/queue.ts, the work queue of lbaas kube: one sync per key at a time with the latest state, a change during a
 * sync runs it once more afterwards, failures retried with a doubling delay, stop() waits for the syncs in flight.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WorkQueue, type SyncOutcome } from '../../kube/queue';

const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));

test('a key added many times while waiting is synced once; added during its sync, once more after it', async () => {
  const runs: string[] = [];
  let release: (() => void) | null = null;
  const q = new WorkQueue(
    async (key) => {
      runs.push(key);
      if (key === 'a' && runs.filter((k) => k === 'a').length === 1) await new Promise<void>((r) => (release = r));
      return 'done';
    },
    1,
    () => {},
  );
  q.add('a');
  q.add('b');
  q.add('b');
  await tick();
  assert.deepEqual(runs, ['a'], 'concurrency 1: b waits for a');
  q.add('a');
  q.add('a');
  (release as unknown as () => void)();
  await tick(20);
  assert.deepEqual(runs, ['a', 'b', 'a']);
});

test('the same key never runs twice at once, even with free workers', async () => {
  let active = 0;
  let most = 0;
  const q = new WorkQueue(
    async () => {
      active++;
      most = Math.max(most, active);
      await tick(10);
      active--;
      return 'done';
    },
    4,
    () => {},
  );
  for (let i = 0; i < 5; i++) {
    q.add('same');
    await tick(2);
  }
  await tick(60);
  assert.equal(most, 1);
});

test('a failed sync is retried after 1 s, then 2 s; and the log says why', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const outcomes: SyncOutcome[] = [{ retry: 'busy' }, { retry: 'still busy' }, 'done'];
  const runs: number[] = [];
  const log: string[] = [];
  const q = new WorkQueue(
    async () => {
      runs.push(runs.length);
      return outcomes.shift() ?? 'done';
    },
    1,
    (l) => log.push(l),
  );
  q.add('svc');
  await Promise.resolve();
  await Promise.resolve();
  assert.equal(runs.length, 1);
  t.mock.timers.tick(999);
  await Promise.resolve();
  assert.equal(runs.length, 1, 'not before 1 s');
  t.mock.timers.tick(1);
  await Promise.resolve();
  await Promise.resolve();
  assert.equal(runs.length, 2);
  t.mock.timers.tick(1999);
  await Promise.resolve();
  assert.equal(runs.length, 2, 'not before 2 s');
  t.mock.timers.tick(1);
  await Promise.resolve();
  await Promise.resolve();
  assert.equal(runs.length, 3);
  assert.deepEqual(log, ['svc: busy; retrying in 1 s', 'svc: still busy; retrying in 2 s']);
});

test('stop() waits for the sync in flight and drops what waits; restart() takes work again', async () => {
  const runs: string[] = [];
  const q = new WorkQueue(
    async (key) => {
      runs.push(key);
      await tick(20);
      return 'done';
    },
    1,
    () => {},
  );
  q.add('a');
  q.add('b');
  await tick();
  const stopped = q.stop();
  q.add('c');
  await stopped;
  assert.deepEqual(runs, ['a']);
  q.restart();
  q.add('d');
  await tick(40);
  assert.deepEqual(runs, ['a', 'd']);
});
