/**
 * What the reconcile test files (test/workflow/reconcile-*.test.ts) share: one stack per file with a worker whose
 * readiness polls are fast, hooks that leave nothing running between tests, the example spec's expected objects,
 * and the end-state check of a converged load balancer.
 *
 * `stack`, `worker`, `runs`, `injected` and `testStarted` are live bindings: read them inside tests, after the
 * file's `before` hook ran.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach } from 'node:test';
import type { Worker } from '@temporalio/worker';
import type { PacingOptions } from '../../activities/engine';
import type { AwaitReadyOptions } from '../../activities/objects';
import type { AdminObject } from '../../simulator';
import type { ReconcileServiceResult } from '../../contract';
import { randomUUID } from 'node:crypto';
import { countByName, describeObjects, expectedLines, objectsOn, tagOf, type OracleSpec } from './engine-state';
import { exampleSpec, seedLoadBalancer } from './fixtures';
import { startStack, stopTemporalServer, type Stack } from './stack';
import { drained, Runs } from './workflows';

export const SUFFIX = 'web.default.prod';
/** The example spec (test/helpers/fixtures.ts) as the oracle of expected objects. */
export const ORACLE: OracleSpec = exampleSpec([]) as unknown as OracleSpec;
/** The example spec's merged status: both addresses on both ports. */
export const STATUS = { '2001:db8::10': [80, 443], '203.0.113.10': [80, 443] };
/** An object name: its parts and the example's name suffix, dot-joined. */
export const n = (...parts: string[]) => [...parts, SUFFIX].join('.');
export const HTTP_ONLY = { http: { external: 80, internal: 30080 } };
export const POLICIES = ['recover', 'recreate'] as const;

/** Readiness polls fast enough that a pass over the 20-60 ms simulated deploys takes about a second. */
export const FAST_READINESS = { pollFirstMs: 20, pollMaxMs: 100 };
/** Fast polls, and readiness attempts of 1 s so that a spent readiness policy shows within seconds. */
export const FAULT_READINESS = { ...FAST_READINESS, windowMs: 1000 };

export let stack: Stack;
export let worker: Worker;
export let runs: Runs;
/** Faults the simulator injected since the test began, by kind (counted from its request log). */
export let injected: Record<string, number> = {};
/** The simulator's log since the test began (requests with their status, deploys ending), in order. */
export let simLog: string[] = [];
/** When the running test began: objects created since then are the test's own. */
export let testStarted = 0;

/**
 * Registers the file's hooks: the stack and its worker before the first test; after each test, every run it started
 * terminated, the fault model reset and the worker drained, so the next test's counters are its own. `pacing`: the
 * worker's Engine request budget (activities/engine/pacing.ts); the product's defaults when left out.
 */
export function useReconcileStack(readiness: AwaitReadyOptions, pacing?: PacingOptions): void {
  before(async () => {
    stack = await startStack({
      worker: false,
      ...(pacing ? { engine: { pacing } } : {}),
      sim: {
        log: (line) => {
          simLog.push(line);
          const m = / \[fault (\w+)/.exec(line);
          if (m?.[1]) injected[m[1]] = (injected[m[1]] ?? 0) + 1;
        },
      },
    });
    worker = await stack.startWorker({ activities: { readiness } });
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
    simLog = [];
  });
  after(async () => {
    await stack?.stop();
    await stopTemporalServer();
  });
}

export async function reconcile(spec: Record<string, unknown>): Promise<ReconcileServiceResult> {
  return (await runs.service({ spec })).result();
}

/**
 * Converges `spec` and checks that it did, so later steps start from the example of docs/spec.md#format on every LB.
 */
export async function converge(spec: Record<string, unknown>, lbs: string[]): Promise<void> {
  const r = await reconcile(spec);
  assert.equal(r.converged, true);
  for (const lb of lbs) assert.deepEqual(describeObjects(objectsOn(stack.sim, lb), stack.sim), expectedLines(ORACLE));
}

/** One load balancer's summary in a converged pass's result, with `over` changed. */
export const lbSummary = (over: Partial<ReconcileServiceResult['loadBalancers'][string]> = {}) => ({
  converged: true,
  status: STATUS,
  created: 0,
  destroyed: 0,
  recovered: 0,
  passes: 1,
  cleanup: false,
  ...over,
});

/** The final-state invariants every fault test ends with: exactly the desired objects, once each, tagged, ready. */
export function assertConverged(lb: string, tag: string, oracle: OracleSpec = ORACLE): AdminObject[] {
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

/**
 * A service of the test's own (`<prefix>-<uuid>`) on fresh load balancers named `lbNames`: its tag, and
 * `spec(overrides)`, the example spec on them.
 */
export function freshService(prefix: string, lbNames: readonly string[]) {
  const uid = `${prefix}-${randomUUID()}`;
  const lbs = lbNames.map((name) => seedLoadBalancer(stack.sim, name));
  const spec = (overrides: Record<string, unknown> = {}) => exampleSpec(lbs, { serviceUid: uid, ...overrides });
  return { uid, tag: tagOf(uid), lbs, spec };
}

/** `freshService` on `count` load balancers named lb-1, lb-2, ... */
export const freshOn = (prefix: string, count: number) => freshService(prefix, Array.from({ length: count }, (_, i) => `lb-${i + 1}`));

/** `freshService` on one load balancer named lb, with the spec's overrides given at once. */
export function freshOnOne(prefix: string, overrides: Record<string, unknown> = {}) {
  const { uid, tag, lbs, spec } = freshService(prefix, ['lb']);
  return { uid, tag, lb: lbs[0] as string, spec: spec(overrides) };
}
