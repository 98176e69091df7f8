import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { applyUpdate, controllerStatusQuery, resyncSignal, waitConvergedUpdate } from '../../contract';
import { serviceController } from '../../workflows';
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
    args: [{ v: 2, serviceUid: uid, historyLimit: 20 }],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  const { revision } = await stack.client.workflow.executeUpdateWithStart(applyUpdate, { args: [spec], startWorkflowOperation: op });
  const handle = stack.client.workflow.getHandle(workflowId);
  const first = await handle.executeUpdate(waitConvergedUpdate, { args: [revision] });
  assert.equal(first.converged, true);

  // The history is now past 20 events. The length a workflow sees is read at each activation: the controller
  // continues as new once its pass ends and nothing is pending, or at the next activation (here a resync) at latest.
  // Which run is "the first" is read from visibility, not from describe() after the pass: the controller may have
  // rotated before that, and a test that took the new run for the first waited in vain for a second rotation (a CI
  // run did).
  await handle.signal(resyncSignal);
  const rotated = async () => {
    const runs: string[] = [];
    for await (const w of stack.client.workflow.list({ query: `WorkflowId = '${workflowId}' AND ExecutionStatus = 'ContinuedAsNew'` })) runs.push(w.runId);
    return runs;
  };
  let previousRuns = await rotated();
  for (const until = Date.now() + 60_000; Date.now() < until && previousRuns.length === 0; ) {
    await new Promise((r) => setTimeout(r, 200));
    previousRuns = await rotated();
  }
  assert.ok(previousRuns.length >= 1, 'a run continued as new');
  const current = await handle.describe();
  assert.equal(current.status.name, 'RUNNING');
  assert.ok(!previousRuns.includes(current.runId), 'the running run is a new one');

  // The resync's pass may run in the new run (when the first rotated right after its own pass): wait for it to end.
  let status = await handle.query(controllerStatusQuery);
  for (const until = Date.now() + 60_000; Date.now() < until && status.phase !== 'Converged'; ) {
    await new Promise((r) => setTimeout(r, 100));
    status = await handle.query(controllerStatusQuery);
  }
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
