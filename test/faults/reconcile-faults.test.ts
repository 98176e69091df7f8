/**
 * Reconciliation when the Engine misbehaves (docs/spec.md#reconciliation-semantics, docs/engine-api.md#fault-model):
 * failed deployments under both failed-resource policies, objects that take their time, lost answers and error
 * storms, each ending in exactly the desired objects. Failures no retry can fix are in reconcile-failures.test.ts.
 *
 * Faults are injected by the simulator with fixed seeds; the file's tests run one after the other and each resets
 * the fault model and the request counters it measures.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadBalancerStatusQuery, workflowIds } from '../../contract';
import { deployDraw, deployKey } from '../../simulator';
import {
  admin,
  describeObjects,
  expectedLines,
  idOf,
  objectsOn,
  seedConverged,
  snapshotById,
  writeRequests,
} from '../helpers/engine-state';
import { assertConverged, FAULT_READINESS, freshOnOne, injected, n, ORACLE, POLICIES, runs, stack, useReconcileStack } from '../helpers/reconcile-kit';
import { chainOf, eventsOf, failureOf, summaryOf, until } from '../helpers/workflows';

/**
 * The shared 429 backoff with its product defaults except the floor: the 429 storm below halves the request rate on
 * every new 429, and at the product's floor of 0.5 requests/s (regained at 0.1/s each second) its pass took over a
 * minute of waiting for tokens. A floor of 10/s keeps every other part of it (each 429 fails its request and pauses
 * all requests for its Retry-After, the rate is halved down to the floor) and lets the storm end in seconds; the
 * floor itself is proven in test/unit/engine-pacing.test.ts.
 */
const STORM_PACING = { minRequestsPerSecond: 10 };

useReconcileStack(FAULT_READINESS, STORM_PACING);

const fresh = (overrides: Record<string, unknown> = {}) => freshOnOne('faults', overrides);

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
    // The first seed whose draws fail the first deploy of both Backends on this load balancer (the simulator draws a
    // deploy for the object: seed, kind, name, load balancer); what follows depends on scheduling, so the counts below
    // are bounds where they have to be.
    const deployMs = { min: 20, max: 60 };
    const backendsFail = (seed: number) => ['http', 'https'].every((port) => deployDraw(seed, deployKey('backend', n(port), lb), 0, deployMs, 0.3).failed);
    const seed = Array.from({ length: 1_000 }, (_, i) => i).find(backendsFail);
    assert.ok(seed !== undefined, 'a seed below 1,000 fails both Backends first deploys');
    stack.sim.setFaults({ seed, deployMs, rates: { deploymentError: 0.3 } });

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

test('a destroy stage whose one DELETE fails: the retried destroyObjects neither deletes twice nor forgets what the failed attempt destroyed', async () => {
  const { uid, tag, lb, spec } = fresh();
  seedStale(lb, tag);
  const stale = objectsOn(stack.sim, lb).filter((o) => o.kind === 'server' && o.name.startsWith('node-1.old.'));
  assert.equal(stale.length, 1);
  const failing = (stale[0] as { identifier: string }).identifier;
  stack.sim.resetStats();
  // The first stage (2 Binds, 2 Servers of port old) runs in one activity: this Server's DELETE fails until cleared,
  // after the other three were deleted in the same attempt.
  stack.sim.setFaults({ seed: 1, rates: { serverError: 1 }, routes: `^DELETE /api/LBaaS/v1/server\\.json/${failing}$` });
  const started = await runs.service({ spec });
  await until('the DELETE failed', () => (injected.serverError ?? 0) >= 1);
  stack.sim.setFaults({});

  const r = await started.result();

  assertConverged(lb, tag);
  assert.deepEqual({ destroyed: r.loadBalancers[lb]?.destroyed, created: r.loadBalancers[lb]?.created }, { destroyed: 6, created: 12 }, 'the three destroyed by the failed attempt count too');
  const stats = stack.sim.stats();
  assert.equal(stats.mutations, 6 + 12 * 2, 'six DELETEs applied, none twice (and 12 creates with their tags)');
  const deletes = Object.entries(stats.requests).reduce((n, [route, count]) => (route.startsWith('DELETE ') ? n + count : n), 0);
  assert.equal(deletes, 6 + (injected.serverError ?? 0), 'the retry sent no DELETE for what the failed attempt had destroyed (only the failed ones were sent again)');
  // One activity per destroy stage (2 Binds and 2 Servers, the Frontend, the Backend), each summary naming its objects.
  const events = await eventsOf(stack.client.workflow.getHandle(workflowIds.loadBalancer(uid, lb)));
  const destroys = events.flatMap((e) => (e.activityTaskScheduledEventAttributes?.activityType?.name === 'destroyObjects' ? [summaryOf(e)] : []));
  assert.equal(destroys.length, 3, destroys.join('\n'));
  assert.match(destroys[0] as string, new RegExp(`^destroy 4 objects on ${lb.slice(0, 8)}…: (Bind|Server) .*\\(not desired\\)`));
  assert.match(destroys[1] as string, /^destroy Frontend old\..* \(not desired\)$/);
  assert.match(destroys[2] as string, /^destroy Backend old\..* \(not desired\)$/);
});

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
