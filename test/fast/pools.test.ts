/**
 * Server pools (workflows/pool.ts) and the controllers subscribed to them on Temporal's time-skipping test server,
 * with a fake Engine (test/helpers/fast-kit.ts): a pass's observation receives the spec with the pool's members
 * resolved, so what each service reconciled is read from the fake's calls. Delivery rounds, reports and the pool's
 * waitConverged, a failing service, delete and a missing pool, through the client library (client/pool-client.ts,
 * client/service-client.ts). A pool continuing as new stays on the dev server (test/workflow/pools-crash.test.ts,
 * pool-wait-rotating.test.ts): the test server refuses a continue-as-new while an update is open, and loses a signal
 * (a service's report) that arrives while a run continues as new, where the real server makes the run take it first.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import type * as proto from '@temporalio/proto';
import { applyUpdate, poolSetUpdate, workflowIds, workflowTypes, type ServerPoolWorkflow, type ServiceControllerWorkflow } from '../../contract';
import { validateSpec, type ServerSpec } from '../../domain';
import { FakeEngine, fastStack } from '../helpers/fast-kit';
import { exampleSpec } from '../helpers/fixtures';
import { until } from '../helpers/workflows';

type Event = proto.temporal.api.history.v1.IHistoryEvent;

const LB = 'fa5700000000000000000000000000bb';
const engine = new FakeEngine();
const fast = fastStack(engine);

const node = (n: number): ServerSpec => ({ name: `node-${n}`, address: `10.0.0.${10 + n}` });

/** A pool started as `lbaas pool set` starts one, with the loop's test knobs (workflows/pool.ts ServerPoolInput). */
async function createPool(name: string, servers: ServerSpec[], knobs: { deliveryRound?: number; historyLimit?: number }): Promise<string> {
  const op = new WithStartWorkflowOperation<ServerPoolWorkflow>(workflowTypes.serverPool, {
    workflowId: workflowIds.pool(name),
    taskQueue: fast.taskQueue,
    args: [{ v: 2, name, ...knobs } as Parameters<ServerPoolWorkflow>[0]],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  const update = await fast.ts.env.client.workflow.startUpdateWithStart(poolSetUpdate, { args: [servers], startWorkflowOperation: op, waitForStage: 'ACCEPTED' });
  await update.result();
  return update.workflowRunId as string;
}

function poolSpec(uid: string, pool: string): Record<string, unknown> {
  const raw = exampleSpec([LB], { serviceUid: uid, nameSuffix: uid, externalAddresses: ['203.0.113.10'], serverPool: pool });
  delete raw.servers;
  return raw;
}

/** Applies the pool spec of each service and waits for its first pass. */
async function subscribe(uids: string[], pool: string): Promise<void> {
  await Promise.all(
    uids.map(async (uid) => {
      const raw = poolSpec(uid, pool);
      const v = validateSpec(raw);
      if (!v.ok) throw new Error(`bad test spec: ${JSON.stringify(v.issues)}`);
      const { revision } = await fast.lbaas.apply(raw, v.spec);
      await fast.lbaas.waitConverged(uid, revision);
    }),
  );
}

/** The server names the last pass of `uid` reconciled (the pool's members, resolved into the spec). */
const lastServers = (uid: string) => ((engine.of(uid).at(-1)?.input.spec as { servers?: ServerSpec[] }).servers ?? []).map((s) => s.name).sort();

/** The most members-signals one workflow task of a pool run sent: one delivery round's. */
function largestRound(events: Event[]): number {
  let largest = 0;
  let round = 0;
  for (const e of events) {
    if (e.workflowTaskCompletedEventAttributes) round = 0;
    if (e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName === 'poolMembers') largest = Math.max(largest, ++round);
  }
  return largest;
}

test('a pool change reaches each of 5 services in delivery rounds of at most 2 signals; waitConverged answers once every service has converged the new members', async () => {
  const pool = 'fast-rounds';
  const runId = await createPool(pool, [node(1), node(2)], { deliveryRound: 2 });
  const uids = [1, 2, 3, 4, 5].map((i) => `fast-rounds-${i}`);
  await subscribe(uids, pool);
  for (const uid of uids) assert.deepEqual(lastServers(uid), ['node-1', 'node-2'], uid);

  const change = await fast.lbaas.pools.add(pool, [node(3)]);
  assert.deepEqual({ revision: change.revision, changed: change.changed, added: change.added, services: change.services }, { revision: 2, changed: true, added: ['node-3'], services: uids });
  const done = await fast.lbaas.pools.waitConverged(pool, change.revision);
  assert.equal(done.converged, true, JSON.stringify(done.services));
  assert.deepEqual(
    done.services.map((s) => [s.serviceUid, s.convergedRevision]),
    uids.map((uid) => [uid, 2]),
  );
  for (const uid of uids) assert.deepEqual(lastServers(uid), ['node-1', 'node-2', 'node-3'], uid);

  const events = (await fast.ts.env.client.workflow.getHandle(workflowIds.pool(pool), runId).fetchHistory()).events ?? [];
  const signals = events.filter((e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName === 'poolMembers').length;
  assert.equal(signals, 10, 'each service was sent the members once at its subscription and once for the change');
  assert.equal(largestRound(events), 2);
});

test('two changes in quick succession end at the latest: every service reconciles the latest members, and waitConverged of the first answers too', async () => {
  const pool = 'fast-burst';
  await createPool(pool, [node(1)], {});
  const uids = ['fast-burst-1', 'fast-burst-2'];
  await subscribe(uids, pool);
  const first = await fast.lbaas.pools.add(pool, [node(2)]);
  const second = await fast.lbaas.pools.remove(pool, ['node-1']);
  assert.deepEqual([first.revision, second.revision], [2, 3]);
  const waitedFirst = await fast.lbaas.pools.waitConverged(pool, first.revision);
  assert.equal(waitedFirst.converged, true);
  const done = await fast.lbaas.pools.waitConverged(pool, second.revision);
  assert.equal(done.converged, true);
  for (const uid of uids) assert.deepEqual(lastServers(uid), ['node-2'], uid);
});

test("a service whose pass fails: the pool's waitConverged answers not converged, naming that service and its error, the others converged", async () => {
  const pool = 'fast-failing';
  await createPool(pool, [node(1)], {});
  const uids = ['fast-failing-ok', 'fast-failing-bad'];
  await subscribe(uids, pool);
  engine.set('fast-failing-bad', 'fail');
  const change = await fast.lbaas.pools.add(pool, [node(2)]);
  const done = await fast.lbaas.pools.waitConverged(pool, change.revision);
  assert.equal(done.converged, false);
  assert.deepEqual(done.services, [
    { serviceUid: 'fast-failing-bad', convergedRevision: 1, last: { revision: 2, converged: false, error: engine.failMessage } },
    { serviceUid: 'fast-failing-ok', convergedRevision: 2, last: { revision: 2, converged: true } },
  ]);
});

test('deleting a pool is refused while services use it, naming them; once they are deleted it ends the pool', async () => {
  const pool = 'fast-delete-pool';
  await createPool(pool, [node(1)], {});
  const uids = ['fast-del-a', 'fast-del-b'];
  await subscribe(uids, pool);
  await assert.rejects(fast.lbaas.pools.delete(pool), (err: Error) => {
    assert.ok(err instanceof WorkflowUpdateFailedError);
    assert.equal(err.cause?.message, `server pool ${pool} is used by 2 services: ${uids.join(', ')}; move them off the pool (or delete them) first`);
    return true;
  });
  for (const uid of uids) await fast.lbaas.delete(uid);
  await until('the services to unsubscribe', async () => (await fast.lbaas.pools.status(pool)).services.length === 0);
  assert.deepEqual(await fast.lbaas.pools.delete(pool), { name: pool, revision: 1 });
  await until('the pool to end', async () => (await fast.lbaas.pools.handle(pool).describe()).status.name === 'COMPLETED');
});

test('a spec naming a pool that does not exist fails its revision, naming the pool, and runs no pass', async () => {
  const uid = 'fast-no-pool';
  // As a client that skips the check of client/service-client.ts would start it.
  const op = new WithStartWorkflowOperation<ServiceControllerWorkflow>(workflowTypes.serviceController, {
    workflowId: workflowIds.controller(uid),
    taskQueue: fast.taskQueue,
    args: [{ v: 2, serviceUid: uid }],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  const { revision } = await fast.ts.env.client.workflow.executeUpdateWithStart(applyUpdate, { args: [poolSpec(uid, 'fast-missing')], startWorkflowOperation: op });
  const result = await fast.lbaas.waitConverged(uid, revision);
  assert.deepEqual({ converged: result.converged, error: result.error }, { converged: false, error: 'serverPool fast-missing: no such server pool (create it with: lbaas pool set -f FILE)' });
  assert.equal(engine.of(uid).length, 0);
});
