/**
 * Server pools (workflows/pool.ts) and their delivery rounds (workflows/pool-round.ts), with the controllers using
 * them, on Temporal's time-skipping test server with a fake Engine (test/helpers/fast-kit.ts): a pass's observation
 * receives the spec with the pool's members resolved, so what each service reconciled is read from the fake's calls.
 * The test server has no visibility queries, so the pool activities are fakes here: deliverPoolPage lists the
 * services this file made use a pool (pages of the round's size, a page token as visibility's) and signals each for
 * real; readServerPool queries the pool for real but does not wait for visibility. The real activities, the client's
 * counts and waits through visibility, and delete are tested on the dev server (test/workflow/pools.test.ts,
 * pools-crash.test.ts).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { LbaasClient } from '../../client/service-client';
import type { DeliverPoolPageInput, DeliverPoolPageResult, ReadServerPoolInput } from '../../activities/pools';
import {
  applyUpdate,
  controllerStatusQuery,
  poolAddUpdate,
  poolMembersSignal,
  poolReportSignal,
  poolSetUpdate,
  poolStatusQuery,
  workflowIds,
  workflowTypes,
  type PoolChange,
  type PoolMembers,
  type PoolRoundResult,
  type ServerPoolWorkflow,
  type ServiceControllerWorkflow,
} from '../../contract';
import { validateSpec, type ServerSpec } from '../../domain';
import { FakeEngine, runFastWorker } from '../helpers/fast-kit';
import { exampleSpec } from '../helpers/fixtures';
import { startTimeSkippingServer, type TimeSkippingServer } from '../helpers/time-skipping';
import { until } from '../helpers/workflows';

const LB = 'fa5700000000000000000000000000bb';
const engine = new FakeEngine();
let ts: TimeSkippingServer;
let worker: Awaited<ReturnType<typeof runFastWorker>>;
let lbaas: LbaasClient;

/** Which services use which pool: what visibility would list. */
const using = new Map<string, string[]>();
/** Every page a round asked for, and every read of a pool, in order. */
const pages: DeliverPoolPageInput[] = [];
/** Pages of each pool being delivered at this moment, and the most there ever were at once. */
const delivering = new Map<string, number>();
const mostAtOnce = new Map<string, number>();
const reads: ReadServerPoolInput[] = [];
/** Holds a page until the promise it returns resolves (a test sets it). */
let gate: ((page: DeliverPoolPageInput, index: number) => Promise<void>) | null = null;

const poolActivities = {
  async deliverPoolPage(input: DeliverPoolPageInput): Promise<DeliverPoolPageResult> {
    pages.push(input);
    const now = (delivering.get(input.pool) ?? 0) + 1;
    delivering.set(input.pool, now);
    mostAtOnce.set(input.pool, Math.max(now, mostAtOnce.get(input.pool) ?? 0));
    try {
      return await deliver(input);
    } finally {
      delivering.set(input.pool, (delivering.get(input.pool) ?? 1) - 1);
    }
  },
  async readServerPool(input: ReadServerPoolInput): Promise<PoolMembers | null> {
    reads.push(input);
    try {
      const s = await ts.env.client.workflow.getHandle(workflowIds.pool(input.pool)).query(poolStatusQuery);
      return s.deleting ? null : { pool: input.pool, revision: s.revision, servers: s.servers };
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return null;
      throw err;
    }
  },
};

/** A page as visibility would list it: the services this file made use the pool, in order, each signalled for real. */
async function deliver(input: DeliverPoolPageInput): Promise<DeliverPoolPageResult> {
  await gate?.(input, pages.filter((p) => p.pool === input.pool && p.revision === input.revision).length);
  const all = [...(using.get(input.pool) ?? [])].sort();
  const from = input.pageToken ? Number(Buffer.from(input.pageToken, 'base64').toString('utf8')) : 0;
  const ids = all.slice(from, from + input.pageSize);
  const message = { v: 2 as const, pool: input.pool, revision: input.revision, ...(input.servers ? { servers: input.servers } : { delta: input.delta }) };
  for (const uid of ids) await ts.env.client.workflow.getHandle(workflowIds.controller(uid)).signal(poolMembersSignal, message);
  const next = from + ids.length < all.length ? Buffer.from(String(from + ids.length)).toString('base64') : null;
  return { listed: ids.length, signalled: ids.length, gone: 0, nextPageToken: next };
}

before(async () => {
  ts = await startTimeSkippingServer();
  worker = await runFastWorker(ts, { ...engine.activities(), ...poolActivities });
  lbaas = new LbaasClient(ts.env.client, worker.taskQueue);
});
after(async () => {
  await worker?.stop();
  await ts?.stop();
});

const node = (n: number): ServerSpec => ({ name: `node-${n}`, address: `10.0.0.${10 + n}` });

/** A pool started as `lbaas pool set` starts one, with the loop's test knobs (workflows/entity-inputs.ts). */
async function createPool(name: string, servers: ServerSpec[], knobs: { roundPageSize?: number; historyLimit?: number; minRunMs?: number }): Promise<string> {
  const op = new WithStartWorkflowOperation<ServerPoolWorkflow>(workflowTypes.serverPool, {
    workflowId: workflowIds.pool(name),
    taskQueue: worker.taskQueue,
    args: [{ v: 2, name, ...knobs } as Parameters<ServerPoolWorkflow>[0]],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  const update = await ts.env.client.workflow.startUpdateWithStart(poolSetUpdate, { args: [servers], startWorkflowOperation: op, waitForStage: 'ACCEPTED' });
  await update.result();
  return update.workflowRunId as string;
}

function poolSpec(uid: string, pool: string): Record<string, unknown> {
  const raw = exampleSpec([LB], { serviceUid: uid, nameSuffix: uid, externalAddresses: ['203.0.113.10'], serverPool: pool });
  delete raw.servers;
  return raw;
}

/** Applies the pool spec of each service (listed as using the pool first, as its LbaasServerPool would be) and waits for its first pass. */
async function use(uids: string[], pool: string): Promise<void> {
  using.set(pool, [...(using.get(pool) ?? []), ...uids]);
  await Promise.all(
    uids.map(async (uid) => {
      const raw = poolSpec(uid, pool);
      const v = validateSpec(raw);
      if (!v.ok) throw new Error(`bad test spec: ${JSON.stringify(v.issues)}`);
      const { revision } = await lbaas.apply(raw, v.spec);
      await lbaas.waitConverged(uid, revision);
    }),
  );
}

/** The server names the last pass of `uid` reconciled (the pool's members, resolved into the spec). */
const lastServers = (uid: string) => ((engine.of(uid).at(-1)?.input.spec as { servers?: ServerSpec[] }).servers ?? []).map((s) => s.name).sort();

/** Until the service's last pass converged pool revision `revision`. */
async function onRevision(uid: string, revision: number): Promise<void> {
  await until(
    `${uid} on pool revision ${revision}`,
    async () => {
      const s = await ts.env.client.workflow.getHandle(workflowIds.controller(uid)).query(controllerStatusQuery);
      return s.lastPass?.poolRevision === revision && s.phase === 'Converged' && s.running === null;
    },
    30_000,
    50,
  );
}

/** The pool's member updates, sent as the client sends them but without its count of services (visibility). */
async function change(pool: string, what: 'add', args: ServerSpec[]): Promise<PoolChange> {
  return ts.env.client.workflow.getHandle(workflowIds.pool(pool)).executeUpdate(what === 'add' ? poolAddUpdate : poolSetUpdate, { args: [args] });
}

/** A round's result; the pool names a round as it starts it, a moment before the round exists. */
async function resultOf(workflowId: string): Promise<PoolRoundResult> {
  for (;;) {
    try {
      return (await ts.env.client.workflow.getHandle(workflowId).result()) as PoolRoundResult;
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

async function roundOf(pool: string, revision: number): Promise<{ workflowId: string; result: PoolRoundResult }> {
  const round = await until(`the round of revision ${revision}`, async () => {
    const r = (await lbaas.pools.members(pool)).round;
    return r !== null && r.revision === revision ? r : undefined;
  });
  return { workflowId: round.workflowId, result: await resultOf(round.workflowId) };
}

/** The first event of the current run says whether it was continued from another. */
async function continuedRun(workflowId: string): Promise<boolean> {
  const history = await ts.env.client.workflow.getHandle(workflowId).fetchHistory();
  return Boolean(history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId);
}

test('a pool change reaches each of 5 services in one delivery round of pages of 2; the pool signals nobody itself and sends the change, not every member', async () => {
  const pool = 'fast-rounds';
  const runId = await createPool(pool, [node(1), node(2)], { roundPageSize: 2 });
  const uids = [1, 2, 3, 4, 5].map((i) => `fast-rounds-${i}`);
  await use(uids, pool);
  for (const uid of uids) assert.deepEqual(lastServers(uid), ['node-1', 'node-2'], uid);
  // Each read the members itself when it started using the pool.
  assert.deepEqual(reads.filter((r) => r.pool === pool).map((r) => r.workflowId).sort(), uids.map((u) => workflowIds.controller(u)));

  const c = await change(pool, 'add', [node(3)]);
  assert.deepEqual({ revision: c.revision, changed: c.changed, added: c.added }, { revision: 2, changed: true, added: ['node-3'] });
  const { result } = await roundOf(pool, 2);
  assert.deepEqual(result, { pool, revision: 2, listed: 5, signalled: 5, gone: 0 });
  const mine = pages.filter((p) => p.pool === pool && p.revision === 2);
  assert.deepEqual(
    mine.map((p) => [p.pageSize, p.servers, p.delta]),
    [0, 1, 2].map(() => [2, undefined, { base: 1, upsert: [node(3)], remove: [] }]),
  );
  for (const uid of uids) await onRevision(uid, 2);
  for (const uid of uids) assert.deepEqual(lastServers(uid), ['node-1', 'node-2', 'node-3'], uid);

  const events = (await ts.env.client.workflow.getHandle(workflowIds.pool(pool), runId).fetchHistory()).events ?? [];
  const signals = events.map((e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName).filter((n) => n !== undefined);
  assert.deepEqual(signals, [], 'the pool signalled no service (nor anything else)');
  assert.equal(events.filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes).length, 2, 'one round per revision');
});

test('one round in flight: changes made while a round runs start no round; the running round reaches every service, then one round sends the newest revision (the changes merged)', async () => {
  const pool = 'fast-one-round';
  const runId = await createPool(pool, [node(1)], { roundPageSize: 1 });
  const uids = [1, 2, 3, 4].map((i) => `fast-one-${i}`);
  await use(uids, pool);
  await roundOf(pool, 1);
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let held!: () => void;
  const holding = new Promise<void>((r) => (held = r));
  // Round 2 stops at its second page (one service signalled) until released.
  gate = async (p, index) => {
    if (p.pool === pool && p.revision === 2 && index === 2) {
      held();
      await released;
    }
  };
  try {
    await change(pool, 'add', [node(2)]);
    await holding;
    const readsBefore = reads.length;
    // Three changes while round 2 is held, each answered at once with its revision.
    for (const n of [3, 4, 5]) assert.equal((await change(pool, 'add', [node(n)])).revision, n);
    const during = (await lbaas.pools.members(pool)).round;
    assert.deepEqual({ revision: during?.revision, number: during?.number, running: during?.running }, { revision: 2, number: 2, running: true }, 'no round started while round 2 runs');
    release();
    const { result } = await roundOf(pool, 5);
    assert.deepEqual(result, { pool, revision: 5, listed: 4, signalled: 4, gone: 0 });
    assert.deepEqual(await resultOf(during?.workflowId as string), { pool, revision: 2, listed: 4, signalled: 4, gone: 0 }, 'round 2 was not cut short');
    for (const uid of uids) await onRevision(uid, 5);
    for (const uid of uids) assert.deepEqual(lastServers(uid), ['node-1', 'node-2', 'node-3', 'node-4', 'node-5'], uid);

    // (Round 1's pages depend on how many services had started using the pool when it listed them.)
    const mine = pages.filter((p) => p.pool === pool && p.revision > 1);
    assert.deepEqual(
      mine.map((p) => p.revision),
      [2, 2, 2, 2, 5, 5, 5, 5],
      'a round per revision that was current when the previous round ended: none for 3 or 4',
    );
    assert.equal(mostAtOnce.get(pool), 1, 'never two pages (two rounds) of the pool at once');
    // Round 5 sent the changes since revision 2, merged; every service was at 2, so none had to read the pool.
    assert.deepEqual(mine.find((p) => p.revision === 5)?.delta, { base: 2, upsert: [node(3), node(4), node(5)], remove: [] });
    assert.deepEqual(reads.slice(readsBefore), []);
    const events = (await ts.env.client.workflow.getHandle(workflowIds.pool(pool), runId).fetchHistory()).events ?? [];
    assert.equal(events.filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes).length, 3, 'three rounds for five revisions');
    assert.equal((await lbaas.pools.members(pool)).round?.running, false, 'round 3 told the pool it ended');
  } finally {
    gate = null;
    release();
  }
});

test('rotation: a pool continuing as new carries members, revision and its rounds; a round continuing as new mid-way still reaches everyone', async () => {
  const pool = 'fast-rotate';
  // minRunMs 0: this server fires the young run's wait only as the test's waits skip time (workflows/entity-inputs.ts).
  await createPool(pool, [node(1)], { historyLimit: 20, roundPageSize: 1, minRunMs: 0 });
  const uids = [1, 2, 3, 4].map((i) => `fast-rot-${i}`);
  await use(uids, pool);
  for (let n = 2; n <= 4; n++) {
    const r = await change(pool, 'add', [node(n)]);
    assert.equal(r.revision, n);
    await roundOf(pool, n);
  }
  for (const uid of uids) await onRevision(uid, 4);
  for (const uid of uids) assert.deepEqual(lastServers(uid), ['node-1', 'node-2', 'node-3', 'node-4'], uid);
  const status = await lbaas.pools.members(pool);
  assert.deepEqual({ revision: status.revision, servers: status.servers.map((s) => s.name), round: status.round?.number }, { revision: 4, servers: ['node-1', 'node-2', 'node-3', 'node-4'], round: 4 });
  assert.equal(await continuedRun(workflowIds.pool(pool)), true, 'the pool continued as new');
  assert.equal(await continuedRun(status.round?.workflowId as string), true, 'the round of 4 pages continued as new');
});

test('a young run under a stream of signals waits past its history limit, and continues as new by 60 events all the same (its replay after a failed rotation stays short)', async () => {
  const pool = 'fast-young';
  // A young run (minRunMs far away: this server skips no time here) with the smallest history limit.
  const first = await createPool(pool, [node(1)], { historyLimit: 20, minRunMs: 60_000 });
  const handle = ts.env.client.workflow.getHandle(workflowIds.pool(pool));
  const run = ts.env.client.workflow.getHandle(workflowIds.pool(pool), first);
  let waitedPastLimit = false;
  let closed: { status: string; events: number } | null = null;
  for (let i = 1; i <= 60 && !closed; i++) {
    // One signal at a time, each handled before the next: a report of a service that is not subscribed (ignored).
    await handle.signal(poolReportSignal, { v: 2, serviceUid: 'not-subscribed', revision: 0, converged: true });
    closed = await until(`signal ${i} handled`, async () => {
      const d = await run.describe();
      if (d.status.name !== 'RUNNING') return { status: d.status.name, events: d.historyLength };
      // Handled: a workflow task completed after the signal, and none scheduled since (a completed task is followed
      // by its commands' events, so the last event need not be the completion).
      const events = (await run.fetchHistory()).events ?? [];
      const last = (has: (e: (typeof events)[number]) => boolean) => events.reduce((at, e, i) => (has(e) ? i : at), -1);
      const completed = last((e) => e.workflowTaskCompletedEventAttributes != null);
      if (completed < last((e) => e.workflowExecutionSignaledEventAttributes != null) || last((e) => e.workflowTaskScheduledEventAttributes != null) > completed) return undefined;
      if (events.length > 20) waitedPastLimit = true;
      return null;
    });
  }
  assert.ok(waitedPastLimit, 'the young run continued as new at its history limit instead of waiting out its second');
  // 50 events and the task that sees them: measured, a failed rotation of a young run of 94 events replayed for 1.5 s
  // at a load average of 50, longer than 100 more signals took to arrive (docs/architecture.md, "Server pools").
  assert.ok(closed !== null && closed.status === 'CONTINUED_AS_NEW' && closed.events <= 60, `the young run continued as new by 60 events: ${JSON.stringify(closed)}`);
  const status = await lbaas.pools.members(pool);
  assert.deepEqual({ revision: status.revision, servers: status.servers }, { revision: 1, servers: [node(1)] });
});

test('a resync of the pool sends every member again in a new round', async () => {
  const pool = 'fast-resync';
  await createPool(pool, [node(1), node(2)], {});
  await use(['fast-resync-1'], pool);
  await roundOf(pool, 1);
  await lbaas.pools.handle(pool).signal('resync');
  const round = await until('the resync round', async () => {
    const r = (await lbaas.pools.members(pool)).round;
    return r?.number === 2 ? r : undefined;
  });
  assert.equal(round.revision, 1);
  const result = await resultOf(round.workflowId);
  assert.deepEqual(result, { pool, revision: 1, listed: 1, signalled: 1, gone: 0 });
  assert.deepEqual(pages.filter((p) => p.pool === pool).at(-1)?.servers, [node(1), node(2)]);
});

test('a spec naming a pool that does not exist fails its revision, naming the pool, and runs no pass', async () => {
  const uid = 'fast-no-pool';
  // As a client that skips the check of client/service-client.ts would start it.
  const op = new WithStartWorkflowOperation<ServiceControllerWorkflow>(workflowTypes.serviceController, {
    workflowId: workflowIds.controller(uid),
    taskQueue: worker.taskQueue,
    args: [{ v: 2, serviceUid: uid }],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  const { revision } = await ts.env.client.workflow.executeUpdateWithStart(applyUpdate, { args: [poolSpec(uid, 'fast-missing')], startWorkflowOperation: op });
  const result = await lbaas.waitConverged(uid, revision);
  assert.deepEqual({ converged: result.converged, error: result.error }, { converged: false, error: 'serverPool fast-missing: no such server pool (create it with: lbaas pool set -f FILE)' });
  assert.equal(engine.of(uid).length, 0);
});
