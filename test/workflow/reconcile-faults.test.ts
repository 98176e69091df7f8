/**
 * Reconciliation when the Engine misbehaves (docs/spec.md#reconciliation-semantics, docs/engine-api.md#fault-model):
 * failed deployments under both failed-resource policies, objects that take their time, lost answers, error storms, a
 * 4xx that no retry can fix, a reconciliation that cannot converge, and inputs no workflow may accept.
 *
 * Faults are injected by the simulator with fixed seeds; the file's tests run one after the other and each resets
 * the fault model and the request counters it measures.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, afterEach, before, beforeEach, test } from 'node:test';
import type { ApplicationFailure } from '@temporalio/common';
import type { Worker } from '@temporalio/worker';
import type { AdminObject } from '../../simulator';
import { EngineClient } from '../../activities/engine';
import { workflowIds } from '../../workflows/options';
import { loadBalancerStatusQuery } from '../../workflows/reconcile-lb';
import { reconcileService, type ReconcileServiceResult } from '../../workflows/reconcile-service';
import { createLbaasWorker } from '../../worker/main';
import {
  admin,
  countByName,
  describeObjects,
  expectedLines,
  idOf,
  objectsOn,
  seedConverged,
  snapshotById,
  tagOf,
  writeRequests,
  type OracleSpec,
} from '../helpers/engine-state';
import { exampleSpec, seedLoadBalancer } from '../helpers/fixtures';
import { historyTexts, historyToJson } from '../helpers/history-json';
import { startStack, stopTemporalServer, workflowBundle, type Stack } from '../helpers/stack';
import { chainOf, drained, eventsOf, failureOf, Runs, scheduledActivities, until } from '../helpers/workflows';

/** Fast polls, and readiness attempts of 1 s so that a spent readiness policy shows within seconds. */
const FAST_READINESS = { pollFirstMs: 20, pollMaxMs: 100, windowMs: 1000 };
const SUFFIX = 'web.default.prod';
const ORACLE: OracleSpec = exampleSpec([]) as unknown as OracleSpec;
const n = (...parts: string[]) => [...parts, SUFFIX].join('.');
const HTTP_ONLY = { http: { external: 80, internal: 30080 } };
const POLICIES = ['recover', 'recreate'] as const;
const STATUS = { '2001:db8::10': [80, 443], '203.0.113.10': [80, 443] };

let stack: Stack;
let worker: Worker;
let runs: Runs;
/** Faults the simulator injected since the test began, by kind (counted from its request log). */
let injected: Record<string, number> = {};
/** When the running test began: objects created since then are the test's own. */
let testStarted = 0;

before(async () => {
  stack = await startStack({
    worker: false,
    sim: {
      log: (line) => {
        const m = / \[fault (\w+)/.exec(line);
        if (m?.[1]) injected[m[1]] = (injected[m[1]] ?? 0) + 1;
      },
    },
  });
  worker = await stack.startWorker({ activities: { readiness: FAST_READINESS } });
  runs = new Runs(stack.client, stack.taskQueue);
});
beforeEach(() => {
  testStarted = Date.now();
});
afterEach(async () => {
  await runs.terminateRunning();
  stack.sim.setFaults({});
  await drained(worker, () => stack.sim.stats().total);
  injected = {};
});
after(async () => {
  await stack?.stop();
  await stopTemporalServer();
});

function fresh(overrides: Record<string, unknown> = {}) {
  const uid = `faults-${randomUUID()}`;
  const lb = seedLoadBalancer(stack.sim, 'lb');
  return { uid, tag: tagOf(uid), lb, spec: exampleSpec([lb], { serviceUid: uid, ...overrides }) };
}

/** The final-state invariants every fault test ends with: exactly the desired objects, once each, tagged, ready. */
function assertConverged(lb: string, tag: string, oracle: OracleSpec = ORACLE): AdminObject[] {
  const on = objectsOn(stack.sim, lb);
  assert.deepEqual(describeObjects(on, stack.sim), expectedLines(oracle));
  assert.deepEqual(
    Object.entries(countByName(on)).filter(([, c]) => c !== 1),
    [],
    'exactly one object per name',
  );
  for (const o of on) {
    assert.deepEqual(o.tags, [tag], `${o.kind} ${o.name} carries the service tag`);
    assert.ok(o.state === 'Deployed' || o.state === 'Updated', `${o.kind} ${o.name} is ready (${o.state})`);
  }
  assert.deepEqual(
    stack.sim.objects().filter((o) => o.kind !== 'loadbalancer' && o.tags.length === 0 && Date.parse(o.createdAt) >= testStarted),
    [],
    'no untagged object created anywhere on the Engine',
  );
  return on;
}

// --- DeploymentError -------------------------------------------------------------------------------------------

const FAILED_CASES = [
  {
    what: 'a Server',
    kind: 'server',
    name: n('node-2', 'https'),
    // The Server has no children: recreate replaces it alone.
    replaced: [`server ${n('node-2', 'https')}`],
  },
  {
    what: 'a Backend',
    kind: 'backend',
    name: n('http'),
    // Its Frontend and Servers link to the failed identifier: recreate replaces them too (and the Frontend's Binds).
    replaced: [`backend ${n('http')}`, `bind ${n('v4', 'http')}`, `bind ${n('v6', 'http')}`, `frontend ${n('http')}`, `server ${n('node-1', 'http')}`, `server ${n('node-2', 'http')}`],
  },
] as const;

for (const policy of POLICIES) {
  for (const c of FAILED_CASES) {
    const outcome =
      policy === 'recover'
        ? 'is PUT with state "0" and the same identifier ends Updated'
        : `is destroyed and created again under a new identifier${c.replaced.length > 1 ? ' with everything linked to it' : ''}`;
    test(`DeploymentError, failedResources ${policy}: ${c.what} in DeploymentError ${outcome}`, async () => {
      const { tag, lb, spec } = fresh({ failedResources: policy });
      const seeded = seedConverged(stack.sim, lb, ORACLE, { tags: [tag] });
      const failed = seeded[`${c.kind} ${c.name}`] as string;
      await admin.patch(stack.sim, failed, { state: 'DeploymentError' });
      const before = snapshotById(objectsOn(stack.sim, lb));
      stack.sim.resetStats();

      const r = await (await runs.service({ spec })).result();

      const on = assertConverged(lb, tag);
      const summary = r.loadBalancers[lb];
      if (policy === 'recover') {
        assert.deepEqual(summary, { converged: true, status: r.status, created: 0, destroyed: 0, recovered: 1, passes: 2, cleanup: false });
        assert.deepEqual(writeRequests(stack.sim.stats()), { [`PUT /api/LBaaS/v1/${c.kind}.json/{id}`]: 1 });
        const recovered = on.find((o) => o.identifier === failed);
        assert.equal(recovered?.state, 'Updated');
        for (const o of on) if (o.identifier !== failed) assert.deepEqual(o, before[o.identifier], `${o.kind} ${o.name} untouched`);
      } else {
        const k = c.replaced.length;
        assert.deepEqual(summary, { converged: true, status: r.status, created: k, destroyed: k, recovered: 0, passes: 2, cleanup: false });
        assert.equal(on.some((o) => o.identifier === failed), false, 'the failed identifier is gone');
        assert.equal(idOf(on, c.kind, c.name) === failed, false);
        const gone = Object.values(before).filter((o) => !on.some((x) => x.identifier === o.identifier));
        assert.deepEqual(gone.map((o) => `${o.kind} ${o.name}`).sort(), [...c.replaced]);
        assert.equal(writeRequests(stack.sim.stats())['PUT /api/LBaaS/v1/server.json/{id}'], undefined, 'nothing is PUT under recreate');
        for (const o of on) if (o.identifier in before) assert.deepEqual(o, before[o.identifier], `${o.kind} ${o.name} untouched`);
      }
      assert.deepEqual(r.status, { '2001:db8::10': [80, 443], '203.0.113.10': [80, 443] });
    });
  }

  test(`DeploymentError from the Engine (seeded rate 0.3, both first deploys fail), failedResources ${policy}: converges to exactly the desired objects`, async () => {
    const { tag, lb, spec } = fresh({ failedResources: policy });
    // Seed 3 makes the first two deploys the Engine starts (the two Backends, whichever comes first) fail; what follows
    // depends on scheduling, so the counts below are bounds where they have to be.
    stack.sim.setFaults({ seed: 3, deployMs: { min: 20, max: 60 }, rates: { deploymentError: 0.3 } });

    const r = await (await runs.service({ spec })).result();

    const on = assertConverged(lb, tag);
    const s = r.loadBalancers[lb];
    assert.ok(s);
    if (policy === 'recover') {
      assert.equal(s.created, 12);
      assert.equal(s.destroyed, 0);
      assert.ok(s.recovered >= 2, `both failed Backends were recovered (recovered ${s.recovered})`);
      assert.ok(on.filter((o) => o.kind === 'backend').every((o) => o.state === 'Updated'), 'the Backends were recovered in place');
    } else {
      assert.equal(s.recovered, 0);
      assert.ok(s.destroyed >= 2, `both failed Backends were destroyed (destroyed ${s.destroyed})`);
      assert.equal(s.created, 12 + s.destroyed, 'every destroyed object was created again, nothing more');
      assert.equal(writeRequests(stack.sim.stats())['PUT /api/LBaaS/v1/backend.json/{id}'], undefined);
    }
  });
}

for (const state of ['NewlyCreated', 'Updating'] as const) {
  test(`an object stuck ${state} is waited for while it settles late, never duplicated or rewritten`, async () => {
    const { uid, tag, lb, spec } = fresh();
    const seeded = seedConverged(stack.sim, lb, ORACLE, { tags: [tag] });
    const slow = seeded[`backend ${n('http')}`] as string;
    // force: no deploy timer; the object stays as it is until the test settles it.
    await admin.patch(stack.sim, slow, { state, force: true });
    const before = snapshotById(objectsOn(stack.sim, lb));
    stack.sim.resetStats();

    const handle = await runs.loadBalancer({ spec, loadBalancer: lb });
    await until('the workflow polling the slow Backend', async () => {
      const progress = await handle.query(loadBalancerStatusQuery);
      return progress.phase === 'creating' && (stack.sim.stats().requests['GET /api/LBaaS/v1/backend.json/{id}'] ?? 0) >= 3;
    });
    assert.equal((await handle.describe()).status.name, 'RUNNING');
    const progress = await handle.query(loadBalancerStatusQuery);
    assert.deepEqual(
      progress.objects.filter((o) => o.state !== 'Deployed').map((o) => [o.kind, o.name, o.identifier, o.state]),
      [['backend', n('http'), slow, state]],
    );
    await admin.patch(stack.sim, slow, { state: state === 'NewlyCreated' ? 'Deployed' : 'Updated' });

    const r = await handle.result();

    assert.equal(r.serviceUid, uid);
    assert.deepEqual([r.converged, r.created, r.destroyed, r.recovered, r.passes], [true, 0, 0, 0, 2]);
    const on = assertConverged(lb, tag);
    assert.deepEqual(Object.keys(snapshotById(on)).sort(), Object.keys(before).sort(), 'the same identifiers, no new one');
    for (const o of on) if (o.identifier !== slow) assert.deepEqual(o, before[o.identifier], `${o.kind} ${o.name} untouched`);
    assert.equal(stack.sim.stats().mutations, 0);
    assert.deepEqual(writeRequests(stack.sim.stats()), {});
  });
}

test('an object that never settles fails the reconciliation once the spec\'s readiness policy is spent, naming the object', async () => {
  const { tag, lb, spec } = fresh({ readiness: { initialInterval: '100ms', backoffCoefficient: 1, maximumInterval: '100ms', maximumAttempts: 2 } });
  const seeded = seedConverged(stack.sim, lb, ORACLE, { tags: [tag] });
  const stuck = seeded[`server ${n('node-1', 'https')}`] as string;
  await admin.patch(stack.sim, stuck, { state: 'NewlyCreated', force: true });
  stack.sim.resetStats();

  const handle = await runs.loadBalancer({ spec, loadBalancer: lb });
  const err = await failureOf(handle.result());

  const chain = chainOf(err);
  assert.deepEqual(chain.at(-1), { class: 'ApplicationFailure', type: 'NotReady', message: `Server ${n('node-1', 'https')} (${stuck}) is still NewlyCreated`, nonRetryable: false });
  const events = await eventsOf(handle);
  const attempts = events.flatMap((e) => (e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt] : []));
  assert.equal(Math.max(...attempts.map(Number)), 2, 'exactly maximumAttempts readiness attempts');
  assert.equal(stack.sim.stats().mutations, 0, 'waiting never rewrites or duplicates the object');
});

// --- lost answers and storms ----------------------------------------------------------------------------------

test('lost create and tag answers (dropAfterCommit 0.5 on every POST) leave no duplicate and no untagged object, and every object counts as created once', async () => {
  const { tag, lb, spec } = fresh();
  stack.sim.setFaults({ seed: 11, rates: { dropAfterCommit: 0.5 }, routes: '^POST /api/' });

  const r = await (await runs.service({ spec })).result();

  assert.ok((injected.dropAfterCommit ?? 0) >= 5, `answers were lost (${injected.dropAfterCommit ?? 0})`);
  assertConverged(lb, tag);
  assert.equal(r.converged, true);
  assert.equal(r.loadBalancers[lb]?.destroyed, 0, 'nothing was created twice, so nothing had to be destroyed');
  assert.equal(r.loadBalancers[lb]?.created, 12, 'an object found again after its lost answer still counts as created');
});

test(
  'lost create answers next to an untagged look-alike (same name, fields and parent, created just before): the look-alike is neither tagged nor destroyed',
  async () => {
    const { tag, lb, spec } = fresh();
    const lookalike = stack.sim.seedObject({
      kind: 'backend',
      fields: { name: n('http'), mode: 'tcp', health_check: '"adv_check": "tcp-check"', load_balancer: lb },
      state: 'Deployed',
    });
    const before = stack.sim.objects().find((o) => o.identifier === lookalike);
    // Every Backend create is applied and its answer lost: the retry has to find what it created by name and parent.
    stack.sim.setFaults({ seed: 1, rates: { dropAfterCommit: 1 }, routes: '^POST /api/LBaaS/v1/backend\\.json$' });

    const r = await (await runs.service({ spec })).result();

    assert.equal(r.converged, true);
    assert.deepEqual(stack.sim.objects().find((o) => o.identifier === lookalike), before, 'the look-alike is exactly as it was');
    assert.deepEqual(describeObjects(objectsOn(stack.sim, lb).filter((o) => o.tags.includes(tag)), stack.sim), expectedLines(ORACLE));
  },
);

/** A converged-looking start that also needs destroys: a tagged port `old` the spec no longer has. */
function seedStale(lb: string, tag: string): void {
  const seeded = seedConverged(stack.sim, lb, { ...ORACLE, ports: { old: { external: 8080, internal: 30808 } } }, { tags: [tag] });
  assert.equal(Object.keys(seeded).length, 6);
}

for (const storm of [
  // Each create is a POST and a tag: a 5xx storm over both fails half of the create attempts, and Temporal's backoff
  // (500 ms doubling) stretches that to a minute; tags get their storm of 429s (retried after Retry-After) instead.
  { name: '5xx storm (serverError 0.3) on every LBaaS create, update and delete', rates: { serverError: 0.3 }, routes: '^(POST|PUT|DELETE) /api/LBaaS/', fault: 'serverError', least: 3 },
  { name: '429 storm (rateLimited 0.3, Retry-After 1 s) on every create, tag, update and delete', rates: { rateLimited: 0.3 }, routes: '^(POST|PUT|DELETE) /api/', fault: 'rateLimited', least: 8 },
]) {
  test(`${storm.name}: still converges to exactly the desired objects`, async () => {
    const { tag, lb, spec } = fresh();
    seedStale(lb, tag);
    stack.sim.setFaults({ seed: 5, rates: storm.rates, routes: storm.routes });

    const r = await (await runs.service({ spec })).result();

    assert.ok((injected[storm.fault] ?? 0) >= storm.least, `the storm happened (${injected[storm.fault] ?? 0} injected)`);
    assertConverged(lb, tag);
    const s = r.loadBalancers[lb];
    assert.deepEqual({ destroyed: s?.destroyed, recovered: s?.recovered }, { destroyed: 6, recovered: 0 });
    assert.equal(s?.created, 12, 'every object created once and counted once, retried or not');
  });
}

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
    activities: { readiness: FAST_READINESS },
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
    // The child's observation and the parent's look for objects elsewhere, each refused once and not retried.
    assert.deepEqual(stack.sim.stats().requests, { 'GET /api/core/v1/resource.json': 2 });
    assert.deepEqual(objectsOn(stack.sim, lb), []);
    const histories = [await handle.fetchHistory(), await stack.client.workflow.getHandle(workflowIds.loadBalancer(String(spec.serviceUid), lb)).fetchHistory()];
    for (const history of histories) {
      const { strings, payloads } = historyTexts(historyToJson(history));
      assert.ok(strings.some((t) => t.includes('401 Unauthorized')), 'the history holds the failure');
      assert.ok(payloads.some((t) => t.includes(lb)), 'payloads were decoded');
      assert.deepEqual([...strings, ...payloads].filter((t) => t.includes(wrongToken)), [], 'the history does not hold the token');
    }
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
