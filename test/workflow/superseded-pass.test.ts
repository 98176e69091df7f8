/**
 * A superseded pass stops waiting for deploys as soon as its cancellation reaches the running realizeObjects group
 * through a heartbeat, instead of watching until the group's readiness window ends; the creates it had sent are
 * finished and tagged first (docs/architecture.md, "Superseding").
 *
 * The Engine simulator deploys every object for ten minutes, far past the 30 s window: a group that ignored the
 * cancellation would end by its window, completed with every member still deploying; one that honours it ends
 * cancelled. Which of the two happened is read from the pass's own reconcileLoadBalancer history, so the test
 * needs no timing assertion.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { temporal } from '@temporalio/proto';
import { LbaasClient } from '../../client/service-client';
import { workflowIds } from '../../contract';
import { validateSpec } from '../../domain';
import { objectsOn, tagOf } from '../helpers/engine-state';
import { exampleSpec, seedLoadBalancer } from '../helpers/fixtures';
import { startStack, stopTemporalServer, type Stack } from '../helpers/stack';
import { until } from '../helpers/workflows';

let stack: Stack;
before(async () => {
  stack = await startStack();
});
after(async () => {
  await stack?.stop();
  await stopTemporalServer();
});

const valid = (raw: Record<string, unknown>) => {
  const r = validateSpec(raw);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.spec;
};

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** How each realizeObjects activity of a history ended: the name of its closing event, or 'open'. */
function realizeOutcomes(events: readonly HistoryEvent[]): string[] {
  const scheduled = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'realizeObjects').map((e) => String(e.eventId));
  return scheduled.map((id) => {
    const closed = events.find((e) =>
      [e.activityTaskCompletedEventAttributes, e.activityTaskFailedEventAttributes, e.activityTaskCanceledEventAttributes, e.activityTaskTimedOutEventAttributes].some(
        (a) => a && String(a.scheduledEventId) === id,
      ),
    );
    if (!closed) return 'open';
    if (closed.activityTaskCanceledEventAttributes) return 'canceled';
    if (closed.activityTaskCompletedEventAttributes) return 'completed';
    return closed.activityTaskFailedEventAttributes ? 'failed' : 'timed out';
  });
}

test('a pass superseded while its group watches slow deploys: the group ends cancelled, not by its window, and every object it created is tagged', async () => {
  const uid = 'superseded-watch';
  const lb = seedLoadBalancer(stack.sim, 'lb-superseded');
  const lbaas = new LbaasClient(stack.client, stack.taskQueue);
  stack.sim.setFaults({ deployMs: { min: 600_000, max: 600_000 } });
  try {
    const raw1 = exampleSpec([lb], { serviceUid: uid });
    await lbaas.apply(raw1, valid(raw1));
    // Pass 1 created its Backends (they deploy for ten minutes) and watches them in its Backend group.
    await until('pass 1 to have created its Backends', () => objectsOn(stack.sim, lb).filter((o) => o.kind === 'backend').length === 2, 30_000);

    const raw2 = { ...raw1, ports: { http: { external: 8080, internal: 30080 } } };
    assert.equal((await lbaas.apply(raw2, valid(raw2))).revision, 2);
    const pass1 = stack.client.workflow.getHandle(workflowIds.pass(uid, 1));
    await until('pass 1 to end', async () => (await pass1.describe()).status.name !== 'RUNNING', 60_000);
    assert.equal((await pass1.describe()).status.name, 'CANCELLED');

    // The load balancer run of pass 1, from the child pass 1 started.
    const started = (await pass1.fetchHistory()).events?.find((e) => e.childWorkflowExecutionStartedEventAttributes)?.childWorkflowExecutionStartedEventAttributes;
    assert.equal(started?.workflowExecution?.workflowId, workflowIds.loadBalancer(uid, lb));
    const child = stack.client.workflow.getHandle(workflowIds.loadBalancer(uid, lb), started?.workflowExecution?.runId ?? undefined);
    assert.equal((await child.describe()).status.name, 'CANCELLED');
    assert.deepEqual(realizeOutcomes((await child.fetchHistory()).events ?? []), ['canceled']);

    // What the cancelled group created was finished and tagged before it ended: nothing on the load balancer is untagged.
    const objects = objectsOn(stack.sim, lb);
    assert.deepEqual(
      objects.map((o) => `${o.kind} ${o.name} ${o.tags.includes(tagOf(uid)) ? 'tagged' : 'untagged'}`).sort(),
      ['backend http.web.default.prod tagged', 'backend https.web.default.prod tagged'],
    );
  } finally {
    stack.sim.setFaults({});
  }
});
