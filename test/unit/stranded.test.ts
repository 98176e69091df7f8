/**
 * The stranded-run sweep's decisions (worker/stranded.ts) over a scripted Temporal service: who sweeps, which Version
 * counts as dead, what is done to which run and in what order. The whole path on a real dev server with real workers
 * of two builds is `npm run test:upgrade` (test/upgrade/upgrade.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { temporal } from '@temporalio/proto';
import { VERSIONING_BEHAVIORS } from '../../workflows/versioning';
import { workerEnv } from '../../worker/start';
import { PASS_TERMINATED, type ControllerStatus } from '../../contract';
import { withTerminationReason } from '../../cli/commands/status';
import { ENTITY_TYPES, judgeVersion, lastPolls, PASS_TYPES, StrandedRunSweeper, type StrandedAction } from '../../worker/stranded';

const NOW = Date.parse('2026-11-27T12:00:00Z');
type Poller = temporal.api.taskqueue.v1.IPollerInfo;
/** A protobuf Timestamp as the client decodes it (seconds may be a Long; lastPolls takes Number() of it). */
const at = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 }) as unknown as NonNullable<Poller['lastAccessTime']>;
const poller = (buildId: string, lastMs: number, deploymentName = 'lbaas'): Poller => ({ identity: `w-${buildId}`, lastAccessTime: at(lastMs), deploymentOptions: { deploymentName, buildId } });

interface Run {
  workflowId: string;
  runId: string;
  type: string;
  version: string;
}

/** A Temporal service with a Current Version, pinned runs and pollers; records what the sweeper asks for. */
function scripted(o: { current: string | null; runs: Run[]; pollers: Poller[] }) {
  const calls: string[] = [];
  const queries: string[] = [];
  const client = {
    workflowService: {
      describeWorkerDeployment: async () => ({ workerDeploymentInfo: { routingConfig: { currentDeploymentVersion: o.current ? { buildId: o.current } : null } } }),
      describeTaskQueue: async () => ({ pollers: o.pollers }),
      getWorkflowExecutionHistory: async (r: { execution: { workflowId: string } }) => {
        calls.push(`history ${r.execution.workflowId}`);
        return { history: { events: [{ eventId: 1, eventType: 1 }, { eventId: 2, eventType: 5 }, { eventId: 3, eventType: 6 }, { eventId: 4, eventType: 7 }] } };
      },
      resetWorkflowExecution: async (r: { workflowExecution: { workflowId: string }; workflowTaskFinishEventId: number; resetReapplyType: number; requestId: string; postResetOperations: unknown[] }) => {
        calls.push(`reset ${r.workflowExecution.workflowId} to event ${r.workflowTaskFinishEventId}, reapply ${r.resetReapplyType}, ${r.requestId}, ${JSON.stringify(r.postResetOperations)}`);
        return { runId: 'new-run' };
      },
    },
    workflow: {
      list: ({ query }: { query: string }) => {
        queries.push(query);
        return (async function* () {
          for (const r of o.runs) yield { workflowId: r.workflowId, runId: r.runId, type: r.type, searchAttributes: { TemporalWorkerDeploymentVersion: [r.version] } };
        })();
      },
      getHandle: (id: string, runId: string) => ({
        terminate: async (reason: string) => {
          calls.push(`terminate ${id} ${runId}: ${reason}`);
        },
      }),
    },
  };
  return { client: client as unknown as ConstructorParameters<typeof StrandedRunSweeper>[0]['client'], calls, queries };
}

function sweeper(s: ReturnType<typeof scripted>, clock: { t: number }, timing: { deadAfterMs?: number; belowMinimum?: boolean } = {}) {
  const lines: string[] = [];
  const counted: [string, StrandedAction][] = [];
  const sw = new StrandedRunSweeper({
    ...timing,
    client: s.client,
    namespace: 'default',
    taskQueue: 'lbaas',
    deployment: { deploymentName: 'lbaas', buildId: 'new' },
    log: (level, line) => lines.push(`${level} ${line}`),
    onAction: (type, action) => counted.push([type, action]),
    now: () => clock.t,
  });
  return { sw, lines, counted };
}

describe('stranded runs: which Version is dead', () => {
  test('the last poll of each build of the Deployment, the newest of its pollers; other Deployments and unversioned pollers ignored', () => {
    const polls = lastPolls([poller('old', NOW - 100_000), poller('old', NOW - 5_000), poller('new', NOW - 1_000), poller('x', NOW, 'other'), { identity: 'unversioned', lastAccessTime: at(NOW) }], 'lbaas');
    assert.deepEqual([...polls.entries()].sort(), [
      ['new', NOW - 1_000],
      ['old', NOW - 5_000],
    ]);
  });

  test('dead: last poll older than the limit, or unlisted for at least the limit by the sweeper\'s own observation', () => {
    const deadAfterMs = 90_000;
    assert.deepEqual(judgeVersion({ lastPoll: NOW - 90_001, unlistedSince: undefined, now: NOW, deadAfterMs }), { dead: true, since: NOW - 90_001 });
    assert.deepEqual(judgeVersion({ lastPoll: NOW - 60_000, unlistedSince: undefined, now: NOW, deadAfterMs }), { dead: false, since: NOW - 60_000 });
    assert.deepEqual(judgeVersion({ lastPoll: undefined, unlistedSince: NOW - 89_999, now: NOW, deadAfterMs }), { dead: false, since: null });
    assert.deepEqual(judgeVersion({ lastPoll: undefined, unlistedSince: NOW - 90_000, now: NOW, deadAfterMs }), { dead: true, since: null });
  });

  test('the sweeper knows every workflow type: each is a pass (ended) or an entity (reset)', () => {
    assert.deepEqual([...PASS_TYPES, ...ENTITY_TYPES].sort(), Object.keys(VERSIONING_BEHAVIORS).sort());
  });
});

describe('stranded runs: the sweep', () => {
  const run = (workflowId: string, type: string, version = 'lbaas:old'): Run => ({ workflowId, runId: `run-${workflowId}`, type, version });

  test('a worker whose Version is not current does not look for stranded runs', async () => {
    const s = scripted({ current: 'other', runs: [run('lbaas/a/pass/1', 'reconcileService')], pollers: [] });
    const { sw } = sweeper(s, { t: NOW });
    const r = await sw.sweep();
    assert.equal(r.skipped, 'not current');
    assert.deepEqual(s.queries, []);
    assert.deepEqual(s.calls, []);
  });

  test('nothing pinned elsewhere: one visibility call and nothing else', async () => {
    const s = scripted({ current: 'new', runs: [], pollers: [] });
    const r = await sweeper(s, { t: NOW }).sw.sweep();
    assert.deepEqual(r.calls, { visibility: 1, describe: 1, actions: 0 });
    assert.deepEqual(s.queries, [
      "TaskQueue = 'lbaas' AND ExecutionStatus = 'Running' AND TemporalWorkflowVersioningBehavior = 'Pinned' AND TemporalWorkerDeployment = 'lbaas' AND TemporalWorkerDeploymentVersion != 'lbaas:new'",
    ]);
  });

  test('passes of a dead build are terminated children first with a reason naming the build; a live build\'s runs are left', async () => {
    const s = scripted({
      current: 'new',
      runs: [run('lbaas/b/pass/1', 'reconcileService'), run('lbaas/b/lb/lb-1', 'reconcileLoadBalancer'), run('lbaas/c/pass/4', 'reconcileService', 'lbaas:draining')],
      pollers: [poller('old', NOW - 95_000), poller('draining', NOW - 2_000), poller('new', NOW)],
    });
    const { sw, counted, lines } = sweeper(s, { t: NOW });
    const r = await sw.sweep();
    const reason = `stranded on build lbaas.old: no worker has polled it since ${new Date(NOW - 95_000).toISOString()}`;
    assert.deepEqual(s.calls, [`terminate lbaas/b/lb/lb-1 run-lbaas/b/lb/lb-1: ${reason}`, `terminate lbaas/b/pass/1 run-lbaas/b/pass/1: ${reason}`]);
    assert.deepEqual(r.dead, { 'lbaas:old': NOW - 95_000 });
    assert.deepEqual(counted, [
      ['reconcileLoadBalancer', 'terminated'],
      ['reconcileService', 'terminated'],
    ]);
    assert.deepEqual(lines, [`INFO lbaas worker: reconcileLoadBalancer lbaas/b/lb/lb-1 (run run-lbaas/b/lb/lb-1) terminated: ${reason}`, `INFO lbaas worker: reconcileService lbaas/b/pass/1 (run run-lbaas/b/pass/1) terminated: ${reason}`]);
  });

  test('a dead-after below the 75 s minimum counts as 75 s, unless belowMinimum (the test setting LBAAS_TEST_STRANDED_TIMING) takes it as it is', async () => {
    const stranded = () => scripted({ current: 'new', runs: [run('lbaas/b/pass/1', 'reconcileService')], pollers: [poller('old', NOW - 20_000), poller('new', NOW)] });
    const clamped = stranded();
    assert.deepEqual((await sweeper(clamped, { t: NOW }, { deadAfterMs: 10_000 }).sw.sweep()).dead, {});
    assert.deepEqual(clamped.calls, []);
    const below = stranded();
    assert.deepEqual((await sweeper(below, { t: NOW }, { deadAfterMs: 10_000, belowMinimum: true }).sw.sweep()).dead, { 'lbaas:old': NOW - 20_000 });
    assert.equal(below.calls.length, 1);
  });

  test('a build no poller is listed for is dead only once this sweeper has seen it unlisted for the whole limit', async () => {
    const s = scripted({ current: 'new', runs: [run('lbaas/b/pass/1', 'reconcileService')], pollers: [poller('new', NOW)] });
    const clock = { t: NOW };
    const { sw } = sweeper(s, clock);
    assert.deepEqual((await sw.sweep()).dead, {});
    clock.t += 60_000;
    assert.deepEqual((await sw.sweep()).dead, {});
    assert.deepEqual(s.calls, []);
    clock.t += 30_000;
    assert.deepEqual((await sw.sweep()).dead, { 'lbaas:old': null });
    assert.deepEqual(s.calls, ['terminate lbaas/b/pass/1 run-lbaas/b/pass/1: stranded on build lbaas.old: no worker of it has polled for over 90 s']);
  });

  test('an entity pinned to a dead build is reset to its first workflow task onto the current build, messages re-applied', async () => {
    const s = scripted({ current: 'new', runs: [run('lbaas/b', 'serviceController')], pollers: [poller('old', NOW - 120_000)] });
    const { sw, counted } = sweeper(s, { t: NOW });
    await sw.sweep();
    const override = [{ updateWorkflowOptions: { workflowExecutionOptions: { versioningOverride: { pinned: { behavior: 1, version: { deploymentName: 'lbaas', buildId: 'new' } } } }, updateMask: { paths: ['versioning_override'] } } }];
    assert.deepEqual(s.calls, ['history lbaas/b', `reset lbaas/b to event 4, reapply 3, lbaas-stranded-reset-run-lbaas/b, ${JSON.stringify(override)}`]);
    assert.deepEqual(counted, [['serviceController', 'reset']]);
  });
});

test('LBAAS_STRANDED_AFTER_SECONDS (default 90, at least 75, or off), LBAAS_TEST_STRANDED_TIMING (<dead after>/<interval> seconds, for tests) and LBAAS_DRAIN_TIMEOUT_SECONDS (default 300, 0: no drain)', () => {
  const base = { ANEXIA_TOKEN: 't', LBAAS_BUILD_ID: 'b1' };
  assert.equal(workerEnv(base).strandedAfterMs, 90_000);
  assert.equal(workerEnv({ ...base, LBAAS_STRANDED_AFTER_SECONDS: '120' }).strandedAfterMs, 120_000);
  assert.equal(workerEnv({ ...base, LBAAS_STRANDED_AFTER_SECONDS: 'off' }).strandedAfterMs, null);
  assert.throws(() => workerEnv({ ...base, LBAAS_STRANDED_AFTER_SECONDS: '30' }), { message: 'LBAAS_STRANDED_AFTER_SECONDS: must be an integer of at least 75 (seconds) or off, got "30"' });
  assert.equal(workerEnv(base).strandedTestTiming, undefined);
  assert.deepEqual(workerEnv({ ...base, LBAAS_TEST_STRANDED_TIMING: '10/2' }).strandedTestTiming, { deadAfterMs: 10_000, intervalMs: 2_000 });
  for (const bad of ['10', '0/2', '10/0', '1.5/2', 'fast'])
    assert.throws(() => workerEnv({ ...base, LBAAS_TEST_STRANDED_TIMING: bad }), { message: `LBAAS_TEST_STRANDED_TIMING: must be <dead after>/<interval>, both whole seconds of at least 1 (a test setting), got "${bad}"` });
  assert.equal(workerEnv(base).drainTimeoutMs, 300_000);
  assert.equal(workerEnv({ ...base, LBAAS_DRAIN_TIMEOUT_SECONDS: '0' }).drainTimeoutMs, 0);
  assert.throws(() => workerEnv({ ...base, LBAAS_DRAIN_TIMEOUT_SECONDS: '-1' }), { message: 'LBAAS_DRAIN_TIMEOUT_SECONDS: must be an integer of at least 0 (seconds; 0: no drain), got "-1"' });
});

test('lbaas status names why a pass was terminated: the reason from the end of the pass\'s history replaces its id; other errors, or no history, leave the error as the controller wrote it', async () => {
  const asked: string[] = [];
  const client = (reason: string | null) =>
    ({
      options: { namespace: 'ns' },
      workflowService: {
        getWorkflowExecutionHistoryReverse: async (r: { namespace: string; execution: { workflowId: string }; maximumPageSize: number }) => {
          asked.push(`${r.namespace} ${r.execution.workflowId} ${r.maximumPageSize}`);
          if (reason === null) throw new Error('not found');
          return { history: { events: [{ workflowExecutionTerminatedEventAttributes: { reason } }] } };
        },
      },
    }) as unknown as Parameters<typeof withTerminationReason>[0];
  const status = (error: string) => ({ serviceUid: 'b', lastPass: { pass: 1, revision: 1, converged: false, finishedAt: 0, error } }) as unknown as ControllerStatus;
  const terminated = status(`${PASS_TERMINATED} (lbaas/b/pass/1): retried`);
  const why = 'stranded on build lbaas.old: no worker has polled it since 2026-11-27T12:00:00.000Z';
  assert.equal((await withTerminationReason(client(why), terminated)).lastPass?.error, `${PASS_TERMINATED} (${why}): retried`);
  assert.deepEqual(asked, ['ns lbaas/b/pass/1 1']);
  assert.equal((await withTerminationReason(client(why), status('boom'))).lastPass?.error, 'boom');
  assert.equal((await withTerminationReason(client(null), terminated)).lastPass?.error, `${PASS_TERMINATED} (lbaas/b/pass/1): retried`);
});
