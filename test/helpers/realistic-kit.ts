/**
 * What the realistic-Engine workflow files (test/workflow/realistic-*.test.ts, test/faults/realistic-*.test.ts) share:
 * one stack per file on the simulator's realistic profile (simulator/README.md) with a worker whose Engine budget is
 * the product default, hooks that end every controller a test started, and the end-state checks. The tests are spread
 * over four files, two in `npm test` and two in `npm run test:faults`, so that each suite runs them side by side: each
 * waits mostly on the Engine's manners (tag index lag, deprovisioning, the rate limit), not on the CPU.
 *
 * `stack` and `lbaas` are live bindings: read them inside tests, after the file's `before` hook ran.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, afterEach, before } from 'node:test';
import type { AdminObject } from '../../simulator';
import { countByName, describeObjects, expectedLines, objectsOn, tagOf, type OracleSpec } from './engine-state';
import { exampleSpec, seedLoadBalancer } from './fixtures';
import { TrackedLbaas, valid } from './ops-services';
import { startStack, stopTemporalServer, type Stack } from './stack';
import { engineBudgetFromEnv } from '../../worker/engine-settings';

/** The realistic manners, with a looser rate limit where a test is not about it (5/s would make each apply ~30 s). */
export const REALISTIC = { profile: 'realistic', deleteMs: { min: 500, max: 1500 }, deployMs: { min: 200, max: 600 } };
export const LOOSE = { ...REALISTIC, rateLimit: { rps: 40, burst: 40, retryAfter: false } };
export const HTTP_ONLY = { http: { external: 80, internal: 30080 } };
/** The example spec (test/helpers/fixtures.ts) as the oracle of expected objects. */
export const ORACLE = exampleSpec([]) as unknown as OracleSpec;

export let stack: Stack;
export let lbaas: TrackedLbaas;

/** Registers the file's hooks: the stack before the first test, every controller ended after each, the stack stopped after the last. */
export function useRealisticStack(): void {
  before(async () => {
    // The budget `lbaas worker` has without environment (worker/engine-settings.ts).
    stack = await startStack({ sim: { profile: 'realistic' }, engine: { pacing: engineBudgetFromEnv({}).pacing } });
    lbaas = new TrackedLbaas(stack.client, stack.taskQueue);
  });
  afterEach(async () => {
    await lbaas.cleanup();
  });
  after(async () => {
    await stack?.stop();
    await stopTemporalServer();
  });
}

/** A service of its own on `lbCount` fresh load balancers. */
export function fresh(lbCount: number, prefix: string) {
  const uid = `${prefix}-${randomUUID().slice(0, 8)}`;
  const lbs = Array.from({ length: lbCount }, (_, i) => seedLoadBalancer(stack.sim, `${uid}-lb-${i + 1}`));
  const spec = (overrides: Record<string, unknown> = {}) => exampleSpec(lbs, { serviceUid: uid, ...overrides });
  return { uid, tag: tagOf(uid), lbs, spec };
}

/** Applies `raw` as `lbaas apply --wait` does and waits for its revision's pass. */
export async function apply(raw: Record<string, unknown>) {
  const { revision } = await lbaas.apply(raw, valid(raw));
  return lbaas.waitConverged(String(raw.serviceUid), revision);
}

/** Exactly the spec's objects on every load balancer: each once, each tagged, nothing untagged beside them. */
export function assertExact(lbs: string[], tag: string, oracle: OracleSpec): void {
  for (const lb of lbs) {
    const on = objectsOn(stack.sim, lb);
    assert.deepEqual(describeObjects(on, stack.sim), expectedLines(oracle), `objects on ${lb}`);
    assert.deepEqual(
      Object.entries(countByName(on)).filter(([, c]) => c !== 1),
      [],
      'no duplicates',
    );
    assert.deepEqual(on.filter((o) => !o.tags.includes(tag)).map((o) => `${o.kind} ${o.name}`), [], 'nothing untagged');
    assert.deepEqual(on.filter((o) => (o as AdminObject & { deleting?: boolean }).deleting).map((o) => o.name), [], 'nothing still deprovisioning');
  }
}

/** Objects anywhere on the Engine still tagged for the service, as "kind name". */
export const taggedLeft = (tag: string) => stack.sim.objects().filter((o) => o.tags.includes(tag)).map((o) => `${o.kind} ${o.name}`);
/** Tag POSTs the Engine answered since the last stats reset. */
export const tagPosts = () => Object.entries(stack.sim.stats().requests).filter(([r]) => r.startsWith('POST /api/core/v1/resource.json/{id}/tags/')).reduce((a, [, n]) => a + n, 0);
/** LBaaS object creates (POSTs) the Engine answered since the last stats reset. */
export const creates = () => Object.entries(stack.sim.stats().requests).filter(([r]) => /^POST \/api\/LBaaS\/v1\/\w+\.json$/.test(r)).reduce((a, [, n]) => a + n, 0);
