/**
 * The dry run's result stays bounded for a service of any size the validator accepts (activities/plan-service.ts):
 * counts in full, step lines up to PLAN_LIMITS.lines over the whole service, plan objects only while few.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { boundedPlans } from '../../activities/plan-service';
import { PLAN_LIMITS } from '../../contract';
import { desiredObjects, planLoadBalancer, validateSpec } from '../../domain';

const LB_A = 'a'.repeat(32);
const LB_B = 'b'.repeat(32);

function specWith(servers: number) {
  const r = validateSpec({
    serviceUid: '0b5e3c1a-5d3f-4b8e-9e1d-2f0c6a7b8c9d',
    nameSuffix: 'web.default.prod',
    loadBalancers: [LB_A, LB_B],
    externalAddresses: ['192.0.2.10'],
    ports: { http: { external: 80, internal: 30080 } },
    servers: Array.from({ length: servers }, (_, i) => ({ name: `node-${i}`, address: `10.${Math.floor(i / 250) % 250}.${Math.floor(i / 62_500)}.${(i % 250) + 1}` })),
  });
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.spec;
}

const plansOf = (servers: number) => {
  const spec = specWith(servers);
  return spec.loadBalancers.map((loadBalancer) => ({ loadBalancer, cleanup: false, plan: planLoadBalancer(desiredObjects(spec, loadBalancer), { loadBalancer, objects: [] }, spec.failedResources) }));
};

test('a small service: every step listed and the plans carried, nothing omitted', () => {
  const out = boundedPlans(plansOf(2));
  for (const lb of [LB_A, LB_B]) {
    // Backend, Frontend, Bind and 2 Servers to create.
    assert.deepEqual(out[lb]?.summary, { create: 5, destroy: 0, recover: 0, wait: 0, keep: 0 });
    assert.equal(out[lb]?.lines.length, 5);
    assert.equal(out[lb]?.linesOmitted, undefined);
    assert.equal(out[lb]?.plan?.objects.length, 5);
  }
});

test('5,000 servers (the validator\'s largest pool) on 2 load balancers: counts in full, PLAN_LIMITS.lines lines in all (the first load balancer first), no plan objects, and the result far below 2 MiB', () => {
  const out = boundedPlans(plansOf(5_000));
  const a = out[LB_A];
  const b = out[LB_B];
  assert.deepEqual(a?.summary, { create: 5_003, destroy: 0, recover: 0, wait: 0, keep: 0 });
  assert.deepEqual(b?.summary, { create: 5_003, destroy: 0, recover: 0, wait: 0, keep: 0 });
  assert.equal(a?.lines.length, PLAN_LIMITS.lines);
  assert.equal(a?.linesOmitted, 5_003 - PLAN_LIMITS.lines);
  assert.deepEqual(b?.lines, []);
  assert.equal(b?.linesOmitted, 5_003);
  assert.equal(a?.plan, undefined);
  assert.equal(b?.plan, undefined);
  assert.ok(Buffer.byteLength(JSON.stringify(out)) < 512 * 1024, `${Buffer.byteLength(JSON.stringify(out))} bytes`);
});
