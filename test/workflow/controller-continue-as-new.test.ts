import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { applyUpdate, controllerStatusQuery, resyncSignal, serviceController, waitConvergedUpdate } from '../../workflows';
import { exampleSpec, seedLoadBalancer } from '../helpers/fixtures';
import { startStack, stopTemporalServer, type Stack } from '../helpers/stack';

let stack: Stack;
before(async () => {
  stack = await startStack();
});
after(async () => {
  await stack?.stop();
  await stopTemporalServer();
});

test('a controller continues as new once its history passes the limit, keeping spec, revision and last result, and the new run goes on serving apply and waitConverged', { timeout: 120_000 }, async () => {
  const uid = `can-${randomUUID()}`;
  const lb = seedLoadBalancer(stack.sim, 'lb-can');
  const spec = exampleSpec([lb], { serviceUid: uid, ports: { http: { external: 80, internal: 30080 } } });
  const workflowId = `lbaas/${uid}`;
  const op = new WithStartWorkflowOperation(serviceController, {
    workflowId,
    taskQueue: stack.taskQueue,
    args: [{ serviceUid: uid, historyLimit: 20 }],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  const { revision } = await stack.client.workflow.executeUpdateWithStart(applyUpdate, { args: [spec], startWorkflowOperation: op });
  const handle = stack.client.workflow.getHandle(workflowId);
  const first = await handle.executeUpdate(waitConvergedUpdate, { args: [revision] });
  assert.equal(first.converged, true);
  const firstRun = (await handle.describe()).runId;

  // The history is now past 20 events. The length a workflow sees is read at each activation, so the next one (here
  // a resync, whose pass adds more events) makes the controller continue as new.
  await handle.signal(resyncSignal);
  let runId = firstRun;
  // Bounded generously: the resync's pass runs first, and a loaded CI machine took more than 10 s for it once.
  for (const until = Date.now() + 60_000; Date.now() < until && runId === firstRun; ) {
    await new Promise((r) => setTimeout(r, 100));
    runId = (await handle.describe()).runId;
  }
  assert.notEqual(runId, firstRun, 'a new run was started');
  const previous = await stack.client.workflow.getHandle(workflowId, firstRun).describe();
  assert.equal(previous.status.name, 'CONTINUED_AS_NEW');

  const status = await handle.query(controllerStatusQuery);
  assert.equal(status.revision, 1);
  assert.equal(status.phase, 'Converged');
  assert.deepEqual(status.status, { '2001:db8::10': [80], '203.0.113.10': [80] });
  assert.ok((status.lastPass?.pass ?? 0) >= 1);

  // The new run serves updates and signals with the state it carried over.
  const spec2 = { ...spec, ports: { http: { external: 8080, internal: 30080 } } };
  const applied = await handle.executeUpdate(applyUpdate, { args: [spec2] });
  assert.equal(applied.revision, 2);
  const second = await handle.executeUpdate(waitConvergedUpdate, { args: [2] });
  assert.equal(second.converged, true);
  assert.equal(second.revision, 2);
  assert.ok(second.pass >= 2, `pass numbers continue across runs (got ${second.pass})`);
  assert.deepEqual(second.status, { '2001:db8::10': [8080], '203.0.113.10': [8080] });
});
