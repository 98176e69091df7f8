/**
 * A pool continues as new while a `waitConverged` waits for its fan-out, and the wait is still answered: Temporal
 * fails an update that is open when its run ends, and the client sends the wait again to the new run
 * (client/pool-client.ts). Before the patch pool-rotate-with-waiters a waited fan-out stayed in one run, about 6
 * events per subscriber, which passes Temporal's 51,200 events per history near 8,500 subscribers (docs/scaling.md).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type * as proto from '@temporalio/proto';
import { LbaasClient } from '../../client/service-client';
import { poolWaitUpdate, workflowIds, workflowTypes } from '../../contract';
import { validateSpec } from '../../domain';
import { ENTITY_LOOP_PATCH } from '../../workflows/legacy/controller';
import type { serverPool } from '../../workflows/pool';
import { exampleSpec, seedLoadBalancer } from '../helpers/fixtures';
import { startStack, stopTemporalServer, type Stack } from '../helpers/stack';

let stack: Stack;
before(async () => {
  // Deploys of 300-600 ms: the services' passes for the new member report while the wait is open.
  stack = await startStack({ worker: true, sim: { deployMs: { min: 300, max: 600 } } });
});
after(async () => {
  await stack?.stop();
  await stopTemporalServer();
});

type Event = proto.temporal.api.history.v1.IHistoryEvent;

test('a waited fan-out to 8 services on a pool that rotates every 20 events: the pool continues as new with the wait open, the wait is sent again and answered with every service converged', async (t) => {
  const lbaas = new LbaasClient(stack.client, stack.taskQueue);
  const name = 'wait-rotating';
  const id = workflowIds.pool(name);
  // The smallest history limit the pool accepts and one subscriber per delivery round: the fan-out of one change
  // takes about 8 x 5 events, the reports 8 x 4 more.
  const started = await stack.client.workflow.start<typeof serverPool>(workflowTypes.serverPool, { workflowId: id, taskQueue: stack.taskQueue, args: [{ v: 2, name, historyLimit: 20, deliveryRound: 1 }] });
  await lbaas.pools.set({ name, servers: [{ name: 'node-1', address: '10.0.0.11' }] });
  const lb = seedLoadBalancer(stack.sim, 'lb-wait-rotating');
  const uids = Array.from({ length: 8 }, (_, i) => `wait-rotating-${i}`);
  await Promise.all(
    uids.map(async (uid) => {
      const raw = exampleSpec([lb], { serviceUid: uid, nameSuffix: uid, externalAddresses: ['203.0.113.10'], serverPool: name });
      delete raw.servers;
      const r = validateSpec(raw);
      assert.ok(r.ok);
      const { revision } = await lbaas.apply(raw, r.spec);
      assert.equal((await lbaas.waitConverged(uid, revision)).converged, true);
    }),
  );

  const change = await lbaas.pools.add(name, [{ name: 'node-2', address: '10.0.0.12' }]);
  const done = await lbaas.pools.waitConverged(name, change.revision);
  assert.equal(done.converged, true, JSON.stringify(done.services));
  assert.deepEqual(
    done.services.map((s) => [s.serviceUid, (s.convergedRevision ?? 0) >= change.revision]),
    [...uids].sort().map((uid) => [uid, true]),
  );

  // The pool's runs, followed from the first through each continue-as-new: at least one ended with the wait open
  // (accepted in that run, never completed there).
  const runs: Event[][] = [];
  for (let runId: string | undefined = started.firstExecutionRunId; runId; ) {
    const events: Event[] = (await stack.client.workflow.getHandle(id, runId).fetchHistory()).events ?? [];
    runs.push(events);
    runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  const waitIds = (events: Event[], stage: 'accepted' | 'completed') =>
    events.flatMap((e) =>
      stage === 'accepted'
        ? e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === poolWaitUpdate.name
          ? [e.workflowExecutionUpdateAcceptedEventAttributes.protocolInstanceId as string]
          : []
        : e.workflowExecutionUpdateCompletedEventAttributes
          ? [e.workflowExecutionUpdateCompletedEventAttributes.meta?.updateId as string]
          : [],
    );
  t.diagnostic(`${runs.length} pool runs of ${runs.map((r) => r.length).join(', ')} events`);
  const rotatedWithWait = runs.filter((events) => {
    const completed = new Set(waitIds(events, 'completed'));
    return events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes && waitIds(events, 'accepted').some((u) => !completed.has(u));
  });
  assert.ok(rotatedWithWait.length >= 1, `no run of the pool continued as new with the wait open (${runs.length} runs of ${runs.map((r) => r.length).join(', ')} events)`);
  // The current loop rotates with waits open without a patch: each run's only marker is the entity-loop-v2 one,
  // written before the loop starts (workflows/legacy/controller.ts, ENTITY_LOOP_PATCH).
  const patchIds = (events: Event[]) =>
    events.flatMap((e) => {
      const m = e.markerRecordedEventAttributes;
      const data = m?.markerName === 'core_patch' ? m.details?.['patch-data']?.payloads?.[0]?.data : undefined;
      return m ? [data ? (JSON.parse(Buffer.from(data).toString('utf8')) as { id: string }).id : String(m.markerName)] : [];
    });
  // The newest run may have only its start event yet (read right after it began: 1 event in a fresh-clone CI run);
  // every run that completed a workflow task wrote its marker in that task.
  const ranATask = (events: Event[]) => events.some((e) => e.workflowTaskCompletedEventAttributes);
  assert.ok(runs.slice(0, -1).every(ranATask), 'every run before the newest completed a workflow task');
  for (const events of runs.filter(ranATask)) assert.deepEqual(patchIds(events), [ENTITY_LOOP_PATCH], 'the current pool loop writes no patch marker of its own');
  // Every run stays near the history limit: none carries the whole fan-out (the old branch's wait run had 88 events).
  assert.ok(Math.max(...runs.map((r) => r.length)) <= 50, `a pool run of ${Math.max(...runs.map((r) => r.length))} events`);
});
