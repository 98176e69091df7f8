import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { after, before, test } from 'node:test';
import type { PlanOutline } from '../../domain';
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

test('a Backend whose own (tagged) Server the pass did not observe (a lagging tag index) fails the pass after the grace time, naming the Server, instead of waiting forever; the next pass removes the Server first, then the Backend', { timeout: 120_000 }, async () => {
  const uid = `conflict-own-${randomUUID()}`;
  const tag = `anxccm-svc-uid=${uid}`;
  const lb = seedLoadBalancer(stack.sim, 'lb-conflict-own');
  const backendFields = { name: 'http.svc.prod', mode: 'tcp', health_check: '"adv_check": "tcp-check"', load_balancer: lb } as const;
  const backend = stack.sim.seedObject({ kind: 'backend', fields: backendFields, state: 'Deployed', tags: [tag] });
  const server = stack.sim.seedObject({
    kind: 'server',
    fields: { name: 'node-1.http.svc.prod', ip: '10.0.0.1', port: 30080, check: 'enabled', backend },
    state: 'Deployed',
    tags: [tag],
  });
  // The service moved to another load balancer: this one is being emptied (cleanup).
  const spec = exampleSpec([seedLoadBalancer(stack.sim, 'lb-conflict-next')], { serviceUid: uid, ports: { http: { external: 80, internal: 30080 } } });
  const removal = (outline?: PlanOutline) => ({
    taskQueue: stack.taskQueue,
    workflowId: `lbaas/${uid}/lb/${lb}`,
    args: [{ spec, loadBalancer: lb, cleanup: true, ...(outline ? { outline } : {}) }] as Parameters<typeof reconcileLoadBalancer>,
  });

  // The first pass is handed the outline of a parent's plan made from an observation that holds the Backend only, as
  // a parent's observation does while the tag index has not listed the Server yet: destroy the Backend, nothing else.
  const lagging: PlanOutline = { actions: {}, creates: 0, destroy: [{ kind: 'backend', identifier: backend, name: backendFields.name, reason: 'not desired', state: 'Deployed' }] };
  const err = await (await stack.client.workflow.start(reconcileLoadBalancer, removal(lagging))).result().then(
    () => assert.fail('the first pass must fail'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof WorkflowFailedError);
  const cause = root(err);
  assert.equal(cause.type, 'EngineRejected');
  assert.equal(cause.nonRetryable, true);
  assert.match(
    cause.message,
    new RegExp(`^cannot destroy Backend http\\.svc\\.prod \\(${backend}\\) yet: Server node-1\\.http\\.svc\\.prod \\(${server}\\) of this service still references it and this pass did not plan its removal \\(the tag index may lag\\); the next pass removes it first \\(DELETE /api/LBaaS/v1/backend\\.json/${backend}: 409 Conflict`),
  );
  assert.equal(stack.sim.objects().filter((o) => o.identifier === backend || o.identifier === server).length, 2, 'both still there after the failed pass');

  // The next pass observes for itself: it finds the Server and removes it before the Backend.
  const second = await (await stack.client.workflow.start(reconcileLoadBalancer, removal())).result();
  assert.deepEqual({ converged: second.converged, destroyed: second.destroyed }, { converged: true, destroyed: 2 });
  assert.deepEqual(stack.sim.objects().filter((o) => o.identifier === backend || o.identifier === server), []);
});
