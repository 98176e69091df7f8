/**
 * How a worker turns realizeObjects progress into objectsProgress signals (worker/progress-signals.ts), and which
 * reports the workflow accepts (workflows/realize-progress.ts). Timers are Node's mock timers: the delay is stepped,
 * not slept.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, mock, test } from 'node:test';
import type { MemberProgress } from '../../activities/realize';
import { ProgressSignals, type WorkflowRun } from '../../worker/progress-signals';
import type { ObjectsProgress } from '../../contract';
import { objectsProgressOf } from '../../workflows/realize-progress';

const DELAY = 1_000;
const RUN: WorkflowRun = { workflowId: 'lbaas/svc/lb/lb-1', runId: 'run-1' };
const OTHER: WorkflowRun = { workflowId: 'lbaas/svc/lb/lb-2', runId: 'run-2' };

let sent: { run: WorkflowRun; progress: ObjectsProgress }[];
let signals: ProgressSignals;

beforeEach(() => {
  mock.timers.enable({ apis: ['setTimeout'] });
  sent = [];
  signals = new ProgressSignals(async (run, progress) => {
    sent.push({ run, progress });
  }, DELAY);
});
afterEach(() => mock.timers.reset());

const created = (key: string, identifier: string): MemberProgress => ({ key, identifier, state: 'NewlyCreated', settled: false });
const settled = (key: string, identifier: string): MemberProgress => ({ key, identifier, state: 'Deployed', settled: true });

test('creations of one run within the delay go out as one signal, after the delay, naming the round and each object once', () => {
  const backends = signals.open(RUN, 1);
  const frontends = signals.open(RUN, 1);
  backends.report(created('backend:https', 'b2'));
  mock.timers.tick(DELAY / 2);
  backends.report(created('backend:http', 'b1'));
  frontends.report(created('frontend:http', 'f1'));
  assert.equal(sent.length, 0, 'nothing before the delay');
  mock.timers.tick(DELAY / 2);
  assert.deepEqual(sent, [
    {
      run: RUN,
      progress: {
        pass: 1,
        objects: [
          { key: 'backend:http', identifier: 'b1', state: 'NewlyCreated' },
          { key: 'backend:https', identifier: 'b2', state: 'NewlyCreated' },
          { key: 'frontend:http', identifier: 'f1', state: 'NewlyCreated' },
        ],
      },
    },
  ]);
  mock.timers.tick(10 * DELAY);
  assert.equal(sent.length, 1, 'each change is sent once');
});

test('a group whose result comes within the delay costs no signal; another group of the run still reports', () => {
  const quick = signals.open(RUN, 1);
  const slow = signals.open(RUN, 1);
  quick.report(created('server:http:node-1', 's1'));
  slow.report(created('server:https:node-1', 's2'));
  quick.delivered();
  mock.timers.tick(DELAY);
  assert.deepEqual(
    sent.map((s) => s.progress.objects.map((o) => o.key)),
    [['server:https:node-1']],
  );

  const alone = signals.open(OTHER, 1);
  alone.report(created('backend:http', 'b9'));
  alone.delivered();
  mock.timers.tick(10 * DELAY);
  assert.equal(sent.length, 1, 'the delivered group was never signalled');
  assert.deepEqual(signals.waiting(), {}, 'nothing left queued');
});

test('a finished deploy nobody waits on causes no signal of its own: it rides along with the next creation, or goes with its result', () => {
  const servers = signals.open(RUN, 1);
  servers.report(settled('server:http:node-1', 's1'));
  mock.timers.tick(10 * DELAY);
  assert.equal(sent.length, 0, 'a settled deploy alone waits');

  const binds = signals.open(RUN, 1);
  binds.report(created('bind:v4.http', 'x1'));
  mock.timers.tick(DELAY);
  assert.deepEqual(sent.map((s) => s.progress.objects), [
    [
      { key: 'bind:v4.http', identifier: 'x1', state: 'NewlyCreated' },
      { key: 'server:http:node-1', identifier: 's1', state: 'Deployed' },
    ],
  ]);

  const other = signals.open(RUN, 1);
  other.report(settled('server:https:node-1', 's3'));
  other.delivered();
  assert.deepEqual(signals.waiting(), {}, 'a delivered settled deploy is dropped');
});

test('an announced deploy (its children wait on it) is signalled at once, with the creations queued for the run, and not again after the delay', () => {
  const backends = signals.open(RUN, 2);
  backends.report(created('backend:http', 'b1'));
  backends.report(created('backend:https', 'b2'));
  mock.timers.tick(DELAY / 4);
  backends.report({ ...settled('backend:http', 'b1'), announced: true });
  assert.deepEqual(sent, [
    {
      run: RUN,
      progress: {
        pass: 2,
        objects: [
          { key: 'backend:http', identifier: 'b1', state: 'Deployed' },
          { key: 'backend:https', identifier: 'b2', state: 'NewlyCreated' },
        ],
      },
    },
  ]);
  mock.timers.tick(10 * DELAY);
  assert.equal(sent.length, 1, 'the creations went with it');
  assert.deepEqual(signals.waiting(), {});
});

test('a report of a newer round replaces what an older round of the same run still had queued', () => {
  signals.open(RUN, 1).report(created('backend:http', 'old'));
  signals.open(RUN, 2).report(created('backend:http', 'new'));
  mock.timers.tick(DELAY);
  assert.deepEqual(sent.map((s) => s.progress), [{ pass: 2, objects: [{ key: 'backend:http', identifier: 'new', state: 'NewlyCreated' }] }]);
});

test('a signal that fails (the run has ended) is dropped without an unhandled rejection', async () => {
  const failing = new ProgressSignals(() => Promise.reject(new Error('workflow execution already completed')), DELAY);
  failing.open(RUN, 1).report(created('backend:http', 'b1'));
  mock.timers.tick(DELAY);
  await Promise.resolve();
  assert.deepEqual(failing.waiting(), {});
});

test('objectsProgressOf: the workflow accepts a well-formed report and ignores anything else', () => {
  const good = { pass: 3, objects: [{ key: 'backend:http', identifier: '0123abcd-ef', state: 'Deployed' }] };
  assert.deepEqual(objectsProgressOf(good), good);
  assert.deepEqual(objectsProgressOf({ pass: 1, objects: [] }), { pass: 1, objects: [] });
  const bad: [string, unknown][] = [
    ['not an object', 'x'],
    ['null', null],
    ['pass not an integer', { pass: 1.5, objects: [] }],
    ['objects missing', { pass: 1 }],
    ['identifier with a slash', { pass: 1, objects: [{ key: 'k', identifier: 'a/b', state: 'Deployed' }] }],
    ['identifier empty', { pass: 1, objects: [{ key: 'k', identifier: '', state: 'Deployed' }] }],
    ['unknown state', { pass: 1, objects: [{ key: 'k', identifier: 'a', state: 'Ready' }] }],
    ['key not a string', { pass: 1, objects: [{ key: 1, identifier: 'a', state: 'Deployed' }] }],
    ['too many objects', { pass: 1, objects: Array.from({ length: 1001 }, (_, i) => ({ key: `k${i}`, identifier: 'a', state: 'Deployed' })) }],
  ];
  for (const [what, raw] of bad) assert.equal(objectsProgressOf(raw), null, what);
});
