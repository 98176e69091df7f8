/**
 * Per-object progress while a realizeObjects group runs (docs/architecture.md#passes): the worker signals each
 * member's identifier to the group's workflow (worker/progress-signals.ts), so the load balancer's `status` query shows
 * it long before the group's result; a report that is malformed, of another round, or about an object outside the
 * running groups changes nothing.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { admin, objectsOn, tagOf } from '../helpers/engine-state';
import { exampleSpec, seedLoadBalancer } from '../helpers/fixtures';
import { pendingActivities } from '../helpers/ops-services';
import { startStack, stopTemporalServer, type Stack } from '../helpers/stack';
import { eventsOf, Runs, summaryOf, until } from '../helpers/workflows';
import { loadBalancerStatusQuery, objectsProgressSignal } from '../../contract';

let stack: Stack;

before(async () => {
  // Deploys of 3 s: a group is still deploying well after its progress signal (sent 1 s after the creates).
  stack = await startStack({ sim: { deployMs: { min: 3000, max: 3000 } }, activities: { readiness: { pollFirstMs: 20, pollMaxMs: 100 } } });
});
after(async () => {
  await stack?.stop();
  await stopTemporalServer();
});

test('while the Backends group deploys, the status query shows both Backends with their Engine identifiers (from an objectsProgress signal, before the group returned); bad reports change nothing; the run converges', async () => {
  const runs = new Runs(stack.client, stack.taskQueue);
  const uid = `progress-${randomUUID()}`;
  const lb = seedLoadBalancer(stack.sim, 'lb');
  try {
    const handle = await runs.loadBalancer({ spec: exampleSpec([lb], { serviceUid: uid }), loadBalancer: lb });
    const backends = async () => (await handle.query(loadBalancerStatusQuery)).objects.filter((o) => o.kind === 'backend');

    // The group is running: the workflow has only what the plan said.
    await until('the Backends group running', async () => (await pendingActivities(handle)).some((p) => p.activityType === 'realizeObjects' && p.state === 'STARTED'));
    // Reports the workflow must ignore: malformed, of another round, about an object no running group holds.
    await handle.signal(objectsProgressSignal, { pass: 1, objects: [{ key: 'backend:http', identifier: 'not/an/id', state: 'Deployed' }] });
    await handle.signal(objectsProgressSignal, { pass: 7, objects: [{ key: 'backend:http', identifier: 'aaaa', state: 'Deployed' }] });
    await handle.signal(objectsProgressSignal, { pass: 1, objects: [{ key: 'bind:http:203.0.113.10', identifier: 'bbbb', state: 'Deployed' }] });
    const afterBad = await handle.query(loadBalancerStatusQuery);
    assert.deepEqual(
      afterBad.objects.filter((o) => ['not/an/id', 'aaaa', 'bbbb'].includes(o.identifier ?? '')),
      [],
      'no identifier from a bad report',
    );

    // Known, with the state they were created in: a group's result comes only when their deploys have ended, so
    // these identifiers came from the group's progress report.
    const known = await until('both Backends known to the workflow while deploying', async () => {
      const b = await backends();
      return b.length === 2 && b.every((o) => o.identifier !== null && o.state === 'NewlyCreated') ? b : undefined;
    });
    const inEngine = objectsOn(stack.sim, lb).filter((o) => o.kind === 'backend');
    assert.deepEqual(
      known.map((o) => [o.name, o.identifier]).sort(),
      inEngine.map((o) => [o.name, o.identifier]).sort(),
      'each Backend with the identifier the Engine gave it',
    );
    const bind = (await handle.query(loadBalancerStatusQuery)).objects.find((o) => o.key === 'bind:http:203.0.113.10');
    assert.deepEqual(bind && [bind.identifier, bind.state], [null, 'Pending'], 'the report about a Bind no group holds was ignored');

    const r = await handle.result();
    assert.equal(r.converged, true);
    assert.equal(r.created, 12);
    assert.deepEqual(
      r.objects.filter((o) => o.kind === 'backend').map((o) => [o.name, o.identifier, o.state]).sort(),
      inEngine.map((o) => [o.name, o.identifier, 'Deployed']).sort(),
    );
    assert.ok(objectsOn(stack.sim, lb).every((o) => o.tags.includes(tagOf(uid))));

    // In the history, the worker's report naming the Backends came before the Backends group completed.
    const events = await eventsOf(handle);
    const reports = events.flatMap((e) => {
      const a = e.workflowExecutionSignaledEventAttributes;
      const data = a?.signalName === 'objectsProgress' ? a.input?.payloads?.[0]?.data : undefined;
      return data ? [{ eventId: Number(e.eventId), text: Buffer.from(data).toString('utf8') }] : [];
    });
    const workerReports = reports.filter((r) => inEngine.every((o) => r.text.includes(o.identifier)));
    const testReports = reports.filter((r) => ['not/an/id', 'aaaa', 'bbbb'].some((id) => r.text.includes(`"${id}"`)));
    const groupScheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'realizeObjects');
    const groupDone = events.find((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(groupScheduled?.eventId));
    assert.equal(testReports.length, 3, 'the three reports sent by this test');
    assert.ok(workerReports.length > 0 && groupDone, 'the worker reported the Backends; the group completed');
    assert.ok(Number(workerReports[0]?.eventId) < Number(groupDone?.eventId), "the worker's report precedes the Backends group's completion");
  } finally {
    await runs.terminateRunning();
  }
});

test("a port's Frontend and Servers are created on its own Backend's deploy, announced by the Backends group while the other port's Backend still deploys (announced parents); then the run converges", async () => {
  const runs = new Runs(stack.client, stack.taskQueue);
  const uid = `parents-${randomUUID()}`;
  const lb = seedLoadBalancer(stack.sim, 'lb');
  // Deploys of a minute: nothing deploys by itself during the test; the test ends each deploy it needs.
  stack.sim.setFaults({ deployMs: { min: 60_000, max: 60_000 } });
  const deploy = (id: string) => admin.patch(stack.sim, id, { state: 'Deployed' });
  const named = (kind: string, port: string) => objectsOn(stack.sim, lb).find((o) => o.kind === kind && o.name.split('.')[0] === port);
  try {
    const handle = await runs.loadBalancer({ spec: exampleSpec([lb], { serviceUid: uid }), loadBalancer: lb });
    const [http, https] = await until('both Backends created', () => {
      const a = named('backend', 'http');
      const b = named('backend', 'https');
      return a && b ? [a, b] : undefined;
    });
    await deploy(http.identifier);
    // Before the announcement, the http port's children waited for the group's result: the https Backend's minute.
    await until("the http port's Frontend and its 2 Servers created", () => named('frontend', 'http') && objectsOn(stack.sim, lb).filter((o) => o.kind === 'server' && o.name.endsWith(`.${http.name}`)).length === 2);
    assert.equal(stack.sim.objects().find((o) => o.identifier === https.identifier)?.state, 'NewlyCreated', 'the https Backend still deploys');
    assert.equal(named('frontend', 'https'), undefined, "nothing of the https port's is created yet");

    // Every deploy ends as soon as the test sees it: the run converges with every object once.
    let done = false;
    const finish = handle.result().finally(() => (done = true));
    while (!done) {
      for (const o of objectsOn(stack.sim, lb)) if (o.state === 'NewlyCreated') await deploy(o.identifier);
      await new Promise((r) => setTimeout(r, 50));
    }
    const r = await finish;
    assert.equal(r.converged, true);
    assert.equal(r.created, 12);
    const events = await eventsOf(handle);
    const scheduled = events.flatMap((e) => (e.activityTaskScheduledEventAttributes?.activityType?.name === 'realizeObjects' ? [e] : []));
    // One group of Backends, 2 Frontends, 2 groups of Servers, 2 groups of Binds.
    assert.equal(scheduled.length, 7);
    // The http Frontend's group was scheduled after a report of the http Backend as Deployed, before the Backends' result.
    const at = (e: (typeof events)[number]) => Number(e.eventId);
    const announcement = events.find((e) => {
      const data = e.workflowExecutionSignaledEventAttributes?.input?.payloads?.[0]?.data;
      return data !== undefined && data !== null && Buffer.from(data).toString('utf8').includes(`"identifier":"${http.identifier}","state":"Deployed"`);
    });
    const frontendGroup = scheduled.find((e) => /^create and await Frontend http\./.test(summaryOf(e)));
    const backendsDone = events.find((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(scheduled[0]?.eventId));
    assert.ok(announcement && frontendGroup && backendsDone, 'the announcement, the Frontend group and the Backends result are in the history');
    assert.ok(at(announcement) < at(frontendGroup) && at(frontendGroup) < at(backendsDone), `announcement ${at(announcement)} < Frontend group ${at(frontendGroup)} < Backends done ${at(backendsDone)}`);
  } finally {
    stack.sim.setFaults({ deployMs: { min: 3000, max: 3000 } });
    await runs.terminateRunning();
  }
});
