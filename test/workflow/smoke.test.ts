import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { reconcileService } from '../../workflows/reconcile-service';
import { exampleSpec, seedLoadBalancer, taggedLines } from '../helpers/fixtures';
import { startStack, stopTemporalServer, type Stack } from '../helpers/stack';

let stack: Stack;
before(async () => {
  stack = await startStack();
});
after(async () => {
  await stack?.stop();
  await stopTemporalServer();
});

test('smoke: a service converges from empty on two load balancers', async () => {
  const lb1 = seedLoadBalancer(stack.sim, 'lb-1');
  const lb2 = seedLoadBalancer(stack.sim, 'lb-2');
  const spec = exampleSpec([lb1, lb2]);
  const result = await stack.client.workflow.execute(reconcileService, {
    taskQueue: stack.taskQueue,
    workflowId: `smoke-${Date.now()}`,
    args: [{ spec }],
  });
  assert.equal(result.converged, true);
  assert.deepEqual(result.status, { '2001:db8::10': [80, 443], '203.0.113.10': [80, 443] });
  assert.equal(result.loadBalancers[lb1]?.created, 12);
  assert.equal(taggedLines(stack.sim, 'anxccm-svc-uid=9a5f0c1e-3b7d-4c7a-9d8e-0f1a2b3c4d5e').length, 24);
});
