/**
 * Reconciliations that must fail, and how (docs/spec.md#reconciliation-semantics): a 4xx that no retry can fix, a
 * destroy blocked by a foreign object or by an object of ours the pass did not observe, a refused token, one load
 * balancer of two failing, a pass that cannot converge, and inputs no workflow may accept. Each failure is
 * non-retryable where retrying cannot help and names what failed.
 *
 * Faults are injected by the simulator with fixed seeds; the file's tests run one after the other and each resets
 * the fault model and the request counters it measures.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { ApplicationFailure } from '@temporalio/common';
import { EngineClient } from '../../activities/engine';
import { type ReconcileServiceResult, workflowIds } from '../../contract';
import type { PlanOutline } from '../../domain';
import { reconcileLoadBalancer } from '../../workflows/reconcile-lb';
import { reconcileService } from '../../workflows/reconcile-service';
import { createLbaasWorker } from '../../worker/main';
import {
  describeObjects,
  expectedLines,
  objectsOn,
  seedConverged,
  writeRequests,
} from '../helpers/engine-state';
import { exampleSpec, seedLoadBalancer } from '../helpers/fixtures';
import { historyTexts, historyToJson } from '../helpers/history-json';
import { assertConverged, FAULT_READINESS, freshOnOne, HTTP_ONLY, injected, n, ORACLE, POLICIES, runs, stack, STATUS, useReconcileStack } from '../helpers/reconcile-kit';
import { workflowBundle } from '../helpers/stack';
import { chainOf, eventsOf, failureOf, scheduledActivities } from '../helpers/workflows';

useReconcileStack(FAULT_READINESS);

const fresh = (overrides: Record<string, unknown> = {}) => freshOnOne('faults', overrides);

// --- failures -----------------------------------------------------------------------------------------------------

test('a 4xx no retry can fix (a load balancer the Engine does not know: 422) fails the reconciliation non-retryably with the Engine\'s message', async () => {
  const missing = '0123456789abcdef0123456789abcdef';
  const uid = `faults-${randomUUID()}`;
  const spec = exampleSpec([missing], { serviceUid: uid });
  stack.sim.resetStats();

  const handle = await runs.service({ spec });
  const err = await failureOf(handle.result());

  const engineMessage = `POST /api/LBaaS/v1/backend.json: 422 Unprocessable Entity: load_balancer: Object "${missing}" does not exist.`;
  const chain = chainOf(err);
  assert.deepEqual(chain[0], { class: 'ApplicationFailure', type: 'ReconcileFailed', message: `${uid} on ${missing}: ${engineMessage}`, nonRetryable: true });
  assert.deepEqual(chain.at(-1), { class: 'ApplicationFailure', type: 'EngineRejected', message: engineMessage, nonRetryable: true });
  // Each of the two Backends was tried exactly once: the rejection is not retried.
  assert.deepEqual(writeRequests(stack.sim.stats()), { 'POST /api/LBaaS/v1/backend.json': 2 });
  assert.deepEqual(objectsOn(stack.sim, missing), []);
});

test('a Backend to destroy that a foreign (untagged) Server still references: fails at once, non-retryably, naming that Server, and leaves it alone', async () => {
  const { uid, tag, lb, spec } = fresh();
  const seeded = seedConverged(stack.sim, lb, ORACLE, { tags: [tag] });
  const backend = seeded[`backend ${n('https')}`] as string;
  const manual = stack.sim.seedObject({ kind: 'server', fields: { name: 'manual', ip: '10.1.1.1', port: 1, check: 'enabled', backend }, state: 'Deployed' });
  const manualBefore = stack.sim.objects().find((o) => o.identifier === manual);
  stack.sim.resetStats();

  // Dropping the https port means destroying its Backend, which the Engine refuses (409) while `manual` points at it.
  const handle = await runs.service({ spec: { ...spec, ports: HTTP_ONLY } });
  const err = await failureOf(handle.result());

  const last = chainOf(err).at(-1);
  assert.equal(last?.type, 'EngineRejected');
  assert.equal(last?.nonRetryable, true);
  assert.ok(last?.message.startsWith(`cannot destroy Backend ${n('https')} (${backend}): Server manual (${manual}) still references it and is not ours (untagged)`), last?.message);
  assert.ok(chainOf(err)[0]?.message.startsWith(`${uid} on ${lb}: cannot destroy Backend`));
  assert.deepEqual(stack.sim.objects().find((o) => o.identifier === manual), manualBefore);
  assert.equal(writeRequests(stack.sim.stats())['DELETE /api/LBaaS/v1/backend.json/{id}'], 1, 'the refused delete was not retried');
  // What could go is gone (dependents first); what could not stayed: the https Backend, still ours.
  assert.deepEqual(
    describeObjects(objectsOn(stack.sim, lb).filter((o) => o.tags.includes(tag)), stack.sim),
    [...expectedLines({ ...ORACLE, ports: HTTP_ONLY }), `Backend ${n('https')} mode=tcp health_check="adv_check": "tcp-check" load_balancer=LB`].sort(),
  );
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
  const spec = exampleSpec([seedLoadBalancer(stack.sim, 'lb-conflict-next')], { serviceUid: uid, ports: HTTP_ONLY });
  const removal = (outline?: PlanOutline) => ({
    taskQueue: stack.taskQueue,
    workflowId: workflowIds.loadBalancer(uid, lb),
    args: [{ spec, loadBalancer: lb, cleanup: true, ...(outline ? { outline } : {}) }] as Parameters<typeof reconcileLoadBalancer>,
  });

  // The first pass is handed the outline of a parent's plan made from an observation that holds the Backend only, as
  // a parent's observation does while the tag index has not listed the Server yet: destroy the Backend, nothing else.
  const lagging: PlanOutline = { actions: {}, creates: 0, destroy: [{ kind: 'backend', identifier: backend, name: backendFields.name, reason: 'not desired', state: 'Deployed' }] };
  const err = await failureOf((await stack.client.workflow.start(reconcileLoadBalancer, removal(lagging))).result());
  const cause = chainOf(err).at(-1);
  assert.deepEqual(cause && { type: cause.type, nonRetryable: cause.nonRetryable }, { type: 'EngineRejected', nonRetryable: true });
  assert.match(
    cause?.message ?? '',
    new RegExp(`^cannot destroy Backend http\\.svc\\.prod \\(${backend}\\) yet: Server node-1\\.http\\.svc\\.prod \\(${server}\\) of this service still references it and this pass did not plan its removal \\(the tag index may lag\\); the next pass removes it first \\(DELETE /api/LBaaS/v1/backend\\.json/${backend}: 409 Conflict`),
  );
  assert.equal(stack.sim.objects().filter((o) => o.identifier === backend || o.identifier === server).length, 2, 'both still there after the failed pass');

  // The next pass observes for itself: it finds the Server and removes it before the Backend.
  const second = await (await stack.client.workflow.start(reconcileLoadBalancer, removal())).result();
  assert.deepEqual({ converged: second.converged, destroyed: second.destroyed }, { converged: true, destroyed: 2 });
  assert.deepEqual(stack.sim.objects().filter((o) => o.identifier === backend || o.identifier === server), []);
});

test('an Engine that refuses the worker\'s token (401) fails the reconciliation at once, non-retryably, and the token is nowhere in the history', async () => {
  const wrongToken = `wrong-token-${randomUUID()}`;
  const taskQueue = `${stack.taskQueue}-401`;
  const engine = new EngineClient({ baseUrl: stack.sim.url, token: wrongToken });
  const other = await createLbaasWorker({
    connection: stack.nativeConnection,
    namespace: stack.namespace,
    taskQueue,
    engine,
    temporalClient: stack.client,
    workflowBundle: await workflowBundle(),
    activities: { readiness: FAULT_READINESS },
    shutdownGraceTime: '1s',
  });
  const running = other.run();
  try {
    const { lb, spec } = fresh();
    stack.sim.resetStats();
    const handle = await stack.client.workflow.start(reconcileService, { taskQueue, workflowId: `faults-401-${randomUUID()}`, args: [{ spec }] });

    const err = await failureOf(handle.result());

    const last = chainOf(err).at(-1);
    assert.equal(last?.type, 'EngineRejected');
    assert.equal(last?.nonRetryable, true);
    assert.match(last?.message ?? '', /^GET \/api\/core\/v1\/resource\.json\?tag_name=\S+: 401 Unauthorized/);
    // The parent's observation of the service (workflows/reconcile-service.ts plans before starting children), refused
    // once and not retried; no reconcileLoadBalancer started.
    assert.deepEqual(stack.sim.stats().requests, { 'GET /api/core/v1/resource.json': 1 });
    assert.deepEqual(objectsOn(stack.sim, lb), []);
    await assert.rejects(stack.client.workflow.getHandle(workflowIds.loadBalancer(String(spec.serviceUid), lb)).describe(), WorkflowNotFoundError);
    const history = await handle.fetchHistory();
    const { strings, payloads } = historyTexts(historyToJson(history));
    assert.ok(strings.some((t) => t.includes('401 Unauthorized')), 'the history holds the failure');
    assert.ok(payloads.some((t) => t.includes(lb)), 'payloads were decoded');
    assert.deepEqual([...strings, ...payloads].filter((t) => t.includes(wrongToken)), [], 'the history does not hold the token');
  } finally {
    other.shutdown();
    await running;
    await engine.close();
  }
});

test('one load balancer failing does not stop the other: it converges, and the failure names the failed load balancer with the merged status empty', async () => {
  const missing = 'fedcba9876543210fedcba9876543210';
  const { uid, tag, lb, spec } = fresh();
  const both = { ...spec, loadBalancers: [lb, missing] };

  const err = await failureOf((await runs.service({ spec: both })).result());

  const engineMessage = `POST /api/LBaaS/v1/backend.json: 422 Unprocessable Entity: load_balancer: Object "${missing}" does not exist.`;
  const cause = err.cause as ApplicationFailure;
  assert.equal(cause.type, 'ReconcileFailed');
  assert.equal(cause.message, `${uid} on ${missing}: ${engineMessage}`);
  const details = cause.details?.[0] as ReconcileServiceResult;
  assert.equal(details.converged, false);
  assert.deepEqual(details.status, {}, 'nothing is served on every load balancer');
  assert.deepEqual(details.loadBalancers[lb], { converged: true, status: STATUS, created: 12, destroyed: 0, recovered: 0, passes: 2, cleanup: false });
  const failed = details.loadBalancers[missing];
  assert.deepEqual([failed?.converged, failed?.status, failed?.created, failed?.error], [false, {}, 0, engineMessage]);
  assertConverged(lb, tag);
});

for (const policy of POLICIES) {
  test(`a reconciliation that cannot converge (every deploy fails, maxPasses 2, ${policy}) fails with NotConverged naming the pending objects`, async () => {
    const { uid, lb, spec } = fresh({ failedResources: policy });
    stack.sim.setFaults({ seed: 1, rates: { deploymentError: 1 } });
    stack.sim.resetStats();

    const err = await failureOf((await runs.loadBalancer({ spec, loadBalancer: lb, maxPasses: 2 })).result());

    const first = chainOf(err)[0];
    assert.equal(first?.type, 'NotConverged');
    assert.equal(first?.nonRetryable, true);
    const backendState = policy === 'recover' ? 'DeploymentError' : 'Pending';
    assert.equal(
      first?.message,
      `${uid} on ${lb} did not converge after 2 passes; still pending: ` +
        [
          `Backend ${n('http')} (${backendState})`,
          `Backend ${n('https')} (${backendState})`,
          `Frontend ${n('http')} (Pending)`,
          `Frontend ${n('https')} (Pending)`,
          `Bind ${n('v4', 'http')} (Pending)`,
          `Bind ${n('v6', 'http')} (Pending)`,
          `Bind ${n('v4', 'https')} (Pending)`,
          `Bind ${n('v6', 'https')} (Pending)`,
          `Server ${n('node-1', 'http')} (Pending)`,
          `Server ${n('node-2', 'http')} (Pending)`,
        ].join(', ') +
        ', …',
    );
    // Nothing below a failed Backend was ever created; the failed Backends were recovered or recreated once each.
    const on = objectsOn(stack.sim, lb);
    assert.deepEqual(on.map((o) => `${o.kind} ${o.name} ${o.state}`).sort(), [`backend ${n('http')} DeploymentError`, `backend ${n('https')} DeploymentError`]);
    assert.deepEqual(
      writeRequests(stack.sim.stats()),
      policy === 'recover'
        ? { 'POST /api/LBaaS/v1/backend.json': 2, 'POST /api/core/v1/resource.json/{id}/tags/{tag}': 2, 'PUT /api/LBaaS/v1/backend.json/{id}': 2 }
        : { 'DELETE /api/LBaaS/v1/backend.json/{id}': 2, 'POST /api/LBaaS/v1/backend.json': 4, 'POST /api/core/v1/resource.json/{id}/tags/{tag}': 4 },
    );
  });
}

const BAD_SPEC = () => {
  const spec = exampleSpec(['6f0c3d2e9a8b4c7d8e9f0a1b2c3d4e5f'], { serviceUid: 'faults-invalid' });
  return { ...spec, ports: { http: { external: 0, internal: 30080 } }, servers: [{ name: 'node-1', address: '10.0.0.300' }] };
};

for (const c of [
  { workflow: 'reconcileLoadBalancer', input: { spec: BAD_SPEC(), loadBalancer: '6f0c3d2e9a8b4c7d8e9f0a1b2c3d4e5f' }, names: ['spec.ports.http.external: ', 'spec.servers[0].address: '] },
  { workflow: 'reconcileService', input: { spec: BAD_SPEC() }, names: ['spec.ports.http.external: ', 'spec.servers[0].address: '] },
  { workflow: 'planService', input: { spec: BAD_SPEC() }, names: ['spec.ports.http.external: ', 'spec.servers[0].address: '] },
  { workflow: 'reconcileService', input: { spec: { ...BAD_SPEC(), ports: {}, servers: [], serviceUid: '' } }, names: ['spec.serviceUid: '] },
  { workflow: 'reconcileService', input: { spec: { ...exampleSpec(['lb']), extra: true } }, names: ['spec.extra: '] },
  { workflow: 'reconcileLoadBalancer', input: { spec: exampleSpec(['lb']) }, names: [' loadBalancer: '] },
  { workflow: 'reconcileLoadBalancer', input: { spec: exampleSpec(['lb']), loadBalancer: 'lb', maxPasses: 0 }, names: [' maxPasses: '] },
  { workflow: 'planService', input: {}, names: [' spec: required'] },
  { workflow: 'reconcileService', input: null, names: ['input must be an object with a "spec" field'] },
]) {
  test(`invalid input to ${c.workflow} from a raw client (${c.names.map((x) => x.trim()).join(', ')}) fails at once, non-retryably, naming the field, without any Engine request`, async () => {
    stack.sim.resetStats();
    const handle = await runs.raw(c.workflow, c.input);

    const err = await failureOf(handle.result());

    const first = chainOf(err)[0];
    assert.equal(first?.type, 'InvalidInput');
    assert.equal(first?.nonRetryable, true);
    const message = first?.message ?? '';
    assert.ok(message.startsWith(`${c.workflow}: `), message);
    for (const name of c.names) assert.ok(message.includes(name), `${JSON.stringify(message)} names ${name}`);
    const events = await eventsOf(handle);
    assert.deepEqual(scheduledActivities(events), []);
    assert.equal(events.filter((e) => e.workflowTaskFailedEventAttributes).length, 0, 'no workflow task failed and retried');
    assert.equal(events.at(-1)?.workflowExecutionFailedEventAttributes ? 'failed' : 'other', 'failed');
    assert.equal(stack.sim.stats().total, 0);
  });
}

// Last in the file: when it fails it leaves Engine calls retrying until the workflow is terminated. Reads fail too,
// so every observation, create and readiness poll is retried many times: a small service keeps it to seconds.
test('5xx storm (serverError 0.3) on every Engine route, reads included: a small service still converges to exactly its objects', async () => {
  const small = { externalAddresses: ['203.0.113.10'], ports: { http: { external: 80, internal: 30080 } }, servers: [{ name: 'node-1', address: '10.0.0.11' }] };
  const { tag, lb, spec } = fresh(small);
  stack.sim.setFaults({ seed: 5, rates: { serverError: 0.3 } });

  const handle = await runs.service({ spec });
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    handle.result().then(() => 'done'),
    new Promise<string>((resolve) => (timer = setTimeout(() => resolve('timed out'), 45_000))),
  ]);
  clearTimeout(timer);

  assert.equal(outcome, 'done', `not converged after 45 s, ${injected.serverError ?? 0} errors injected`);
  assert.ok((injected.serverError ?? 0) >= 5, `the storm happened (${injected.serverError ?? 0} injected)`);
  assertConverged(lb, tag, { ...ORACLE, ...small });
});
