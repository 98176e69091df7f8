import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { after, before, test } from 'node:test';
import { reconcileLoadBalancer } from '../../workflows/reconcile-lb';
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

/** The innermost failure of a chain. */
function root(err: unknown): ApplicationFailure {
  let e = err as { cause?: unknown };
  while (e.cause) e = e.cause as { cause?: unknown };
  assert.ok(e instanceof ApplicationFailure, `root cause is an ApplicationFailure, got ${String(e)}`);
  return e;
}

test('a Backend of ours that a foreign (untagged) Server still references fails the reconciliation non-retryably, naming the Server, and both are left in place', { timeout: 60_000 }, async () => {
  const uid = `conflict-${randomUUID()}`;
  const tag = `anxccm-svc-uid=${uid}`;
  const lb = seedLoadBalancer(stack.sim, 'lb-conflict');
  // Ours, but no longer desired (the spec has only port http): the pass must destroy it.
  const oldBackend = stack.sim.seedObject({
    kind: 'backend',
    fields: { name: 'old.web.default.prod', mode: 'tcp', health_check: '"adv_check": "tcp-check"', load_balancer: lb },
    state: 'Deployed',
    tags: [tag],
  });
  const foreignServer = stack.sim.seedObject({
    kind: 'server',
    fields: { name: 'someone-else', ip: '10.9.9.9', port: 31000, check: 'enabled', backend: oldBackend },
    state: 'Deployed',
  });
  const spec = exampleSpec([lb], { serviceUid: uid, ports: { http: { external: 80, internal: 30080 } } });

  const handle = await stack.client.workflow.start(reconcileLoadBalancer, {
    taskQueue: stack.taskQueue,
    workflowId: `lbaas/${uid}/lb/${lb}`,
    args: [{ spec, loadBalancer: lb }],
  });
  const err = await handle.result().then(
    () => assert.fail('the reconciliation must fail'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof WorkflowFailedError);
  const cause = root(err);
  assert.equal(cause.type, 'EngineRejected');
  assert.equal(cause.nonRetryable, true);
  assert.match(
    cause.message,
    new RegExp(`^cannot destroy Backend old\\.web\\.default\\.prod \\(${oldBackend}\\): Server someone-else \\(${foreignServer}\\) still references it and is not ours \\(untagged\\); remove or retag it \\(DELETE /api/LBaaS/v1/backend\\.json/${oldBackend}: 409 Conflict`),
  );
  const left = stack.sim.objects().filter((o) => o.identifier === oldBackend || o.identifier === foreignServer);
  assert.equal(left.length, 2, 'neither object was destroyed');
});
