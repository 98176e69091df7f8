/**
 * kube/pass-waits.ts, how lbaas kube waits for the passes it started: at most maxOpen turns (bounded polls) at once,
 * oldest wait first; a turn that ends without an outcome puts its wait at the back of the line; a wait no longer live
 * takes no turn and is never settled; a failed turn settles the wait with its error.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PassWaits, MAX_OPEN_TURNS, TURN_MS, type Turn } from '../../kube/pass-waits';

const tick = () => new Promise((r) => setImmediate(r));

/** A pass whose turns answer null until `finish` is called; records each turn's start and the turn length asked. */
function pass(name: string, turns: string[], asked: number[] = []) {
  let finished: string | null = null;
  const pending: Array<(v: string | null) => void> = [];
  const turn: Turn<string> = (withinMs) => {
    turns.push(name);
    asked.push(withinMs);
    if (finished !== null) return Promise.resolve(finished);
    return new Promise((resolve) => {
      pending.push(resolve);
    });
  };
  return {
    turn,
    /** Ends the turn running now without an outcome (its deadline passed). */
    expire: () => pending.shift()?.(null),
    /** The pass finished: the running turn (if any) answers, later turns answer at once. */
    finish: (v = `${name} done`) => {
      finished = v;
      pending.shift()?.(v);
    },
  };
}

/** A settle callback that records each outcome: the value, or 'error'. */
const recordTo = (settled: string[]) => (r: { ok: true; value: unknown } | { ok: false; error: unknown }) => void settled.push(r.ok ? String(r.value) : 'error');

test('defaults: 32 turns at once, a turn as long as the server\'s 20 s long poll', () => {
  assert.equal(MAX_OPEN_TURNS, 32);
  assert.equal(TURN_MS, 20_000);
  const w = new PassWaits();
  assert.equal(w.maxOpen, 32);
  assert.equal(w.turnMs, 20_000);
});

test('bad settings are refused naming them', () => {
  assert.throws(() => new PassWaits(0), /maxOpen must be an integer >= 1, got 0/);
  assert.throws(() => new PassWaits(1.5), /maxOpen must be an integer >= 1, got 1.5/);
  assert.throws(() => new PassWaits(2, 0), /turnMs must be > 0, got 0/);
});

test('at most maxOpen turns run at once, the oldest waits first; a finished turn lets the next wait in', async () => {
  const turns: string[] = [];
  const asked: number[] = [];
  const w = new PassWaits(2, 1234);
  const settled: string[] = [];
  const passes = ['a', 'b', 'c', 'd'].map((n) => pass(n, turns, asked));
  passes.forEach((p) => w.add(p.turn, () => true, (r) => settled.push(r.ok ? String(r.value) : `error ${String(r.error)}`)));
  await tick();
  assert.deepEqual(turns, ['a', 'b'], 'two turns open, c and d in line');
  assert.equal(w.open, 2);
  assert.equal(w.size, 4);
  assert.deepEqual(asked, [1234, 1234], 'each turn is given the turn length');
  passes[1]?.finish();
  await tick();
  assert.deepEqual(settled, ['b done']);
  assert.deepEqual(turns, ['a', 'b', 'c'], 'b answered: c, the oldest in line, takes its place');
  assert.equal(w.size, 3);
});

test('a turn that ends without an outcome goes to the back of the line; its pass is answered on a later turn', async () => {
  const turns: string[] = [];
  const w = new PassWaits(1, 10);
  const settled: string[] = [];
  const a = pass('a', turns);
  const b = pass('b', turns);
  w.add(a.turn, () => true, recordTo(settled));
  w.add(b.turn, () => true, recordTo(settled));
  await tick();
  assert.deepEqual(turns, ['a']);
  a.expire();
  await tick();
  assert.deepEqual(turns, ['a', 'b'], 'a gave its place up to b');
  a.finish();
  b.expire();
  await tick();
  assert.deepEqual(settled, ['a done'], 'a finished while in line: its next turn answers at once');
  assert.deepEqual(turns, ['a', 'b', 'a', 'b'], 'b to the back; a polled again and answered; then b again');
  b.finish();
  await tick();
  assert.deepEqual(settled, ['a done', 'b done']);
  assert.equal(w.size, 0);
  assert.equal(w.open, 0);
});

test('a single wait polls again after an empty turn: nothing else is in line', async () => {
  const turns: string[] = [];
  const w = new PassWaits(4, 10);
  const a = pass('a', turns);
  let got: string | null = null;
  w.add(a.turn, () => true, (r) => (got = r.ok ? String(r.value) : 'error'));
  await tick();
  a.expire();
  await tick();
  a.expire();
  await tick();
  assert.deepEqual(turns, ['a', 'a', 'a']);
  a.finish('converged');
  await tick();
  assert.equal(got, 'converged');
});

test('a wait no longer live takes no turn and is never settled; one that died during its turn is not settled either', async () => {
  const turns: string[] = [];
  const w = new PassWaits(1, 10);
  const settled: string[] = [];
  const a = pass('a', turns);
  const b = pass('b', turns);
  const c = pass('c', turns);
  let aLive = true;
  w.add(a.turn, () => aLive, () => settled.push('a'));
  w.add(b.turn, () => false, () => settled.push('b'));
  w.add(c.turn, () => true, recordTo(settled));
  await tick();
  aLive = false;
  a.finish();
  await tick();
  assert.deepEqual(turns, ['a', 'c'], 'b was dropped from the line without a turn');
  c.finish();
  await tick();
  assert.deepEqual(settled, ['c done'], 'a answered after it was replaced: not settled');
});

test('a turn that throws settles its wait with the error; the others go on', async () => {
  const turns: string[] = [];
  const w = new PassWaits(1, 10);
  const settled: string[] = [];
  w.add(async () => {
    turns.push('x');
    throw new Error('workflow not found');
  }, () => true, (r) => settled.push(r.ok ? 'ok' : (r.error as Error).message));
  const b = pass('b', turns);
  w.add(b.turn, () => true, recordTo(settled));
  await tick();
  await tick();
  assert.deepEqual(settled, ['workflow not found']);
  assert.deepEqual(turns, ['x', 'b']);
  b.finish();
  await tick();
  assert.deepEqual(settled, ['workflow not found', 'b done']);
});

test('clear() drops the waits in line: they take no turn; the turns running finish unaffected', async () => {
  const turns: string[] = [];
  const w = new PassWaits(1, 10);
  const settled: string[] = [];
  const a = pass('a', turns);
  const b = pass('b', turns);
  w.add(a.turn, () => true, recordTo(settled));
  w.add(b.turn, () => true, () => settled.push('b'));
  await tick();
  w.clear();
  a.finish();
  await tick();
  assert.deepEqual(turns, ['a']);
  assert.deepEqual(settled, ['a done']);
  assert.equal(w.size, 0);
});
