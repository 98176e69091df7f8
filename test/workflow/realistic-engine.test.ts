/**
 * The orchestrator against the simulator's realistic profile (simulator/README.md): 429 without Retry-After per
 * token, deleted objects that stay readable and listed while they are deprovisioned (409 on their parents), a tag
 * index that lags 1-4 s behind tagging, overlapping tag requests that fail, and sparse answers. Driven through the
 * service controller as `lbaas apply` / `lbaas delete --wait` drive it, on the real Temporal dev server.
 *
 * After every step: exactly the spec's objects, each once, each tagged, nothing else touched; after delete, nothing
 * tagged for the service is left on the Engine, not even an object still being deprovisioned.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, afterEach, before, test } from 'node:test';
import type { AdminObject } from '../../simulator';
import { admin, countByName, describeObjects, expectedLines, objectsOn, tagOf, type OracleSpec } from '../helpers/engine-state';
import { exampleSpec, seedLoadBalancer } from '../helpers/fixtures';
import { TrackedLbaas, valid } from '../helpers/ops-services';
import { startStack, stopTemporalServer, type Stack } from '../helpers/stack';
import { until } from '../helpers/workflows';

/** The realistic manners, with a looser rate limit where a test is not about it (5/s would make each apply ~30 s). */
const REALISTIC = { profile: 'realistic', deleteMs: { min: 500, max: 1500 }, deployMs: { min: 200, max: 600 } };
const LOOSE = { ...REALISTIC, rateLimit: { rps: 40, burst: 40, retryAfter: false } };
const HTTP_ONLY = { http: { external: 80, internal: 30080 } };

let stack: Stack;
let lbaas: TrackedLbaas;

before(async () => {
  stack = await startStack({ sim: { profile: 'realistic' }, engine: { pacing: { requestsPerSecond: 10, burst: 10 } } });
  lbaas = new TrackedLbaas(stack.client, stack.taskQueue);
});
afterEach(async () => {
  await lbaas.cleanup();
});
after(async () => {
  await stack?.stop();
  await stopTemporalServer();
});

function fresh(lbCount: number, prefix: string) {
  const uid = `${prefix}-${randomUUID().slice(0, 8)}`;
  const lbs = Array.from({ length: lbCount }, (_, i) => seedLoadBalancer(stack.sim, `${uid}-lb-${i + 1}`));
  const spec = (overrides: Record<string, unknown> = {}) => exampleSpec(lbs, { serviceUid: uid, ...overrides });
  return { uid, tag: tagOf(uid), lbs, spec };
}

async function apply(raw: Record<string, unknown>) {
  const { revision } = await lbaas.apply(raw, valid(raw));
  return lbaas.waitConverged(String(raw.serviceUid), revision);
}

/** Exactly the spec's objects on every load balancer: each once, each tagged, nothing untagged beside them. */
function assertExact(lbs: string[], tag: string, oracle: OracleSpec): void {
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

const taggedLeft = (tag: string) => stack.sim.objects().filter((o) => o.tags.includes(tag)).map((o) => `${o.kind} ${o.name}`);
const tagPosts = () => Object.entries(stack.sim.stats().requests).filter(([r]) => r.startsWith('POST /api/core/v1/resource.json/{id}/tags/')).reduce((a, [, n]) => a + n, 0);
const creates = () => Object.entries(stack.sim.stats().requests).filter(([r]) => /^POST \/api\/LBaaS\/v1\/\w+\.json$/.test(r)).reduce((a, [, n]) => a + n, 0);

test('apply, drop a port, delete: exact objects after each step, one tag POST per created object, nothing left after delete --wait', async () => {
  await admin.putFaults(stack.sim, LOOSE);
  const s = fresh(2, 'real-flow');
  stack.sim.resetStats();
  const first = await apply(s.spec());
  assert.equal(first.converged, true, first.error);
  assertExact(s.lbs, s.tag, exampleSpec([]) as unknown as OracleSpec);
  // 24 objects created; none tagged twice, none re-tagged after a 422: the tag index lag did not trigger a second set.
  assert.equal(creates(), 24);
  assert.equal(tagPosts(), 24);

  const second = await apply(s.spec({ ports: HTTP_ONLY }));
  assert.equal(second.converged, true, second.error);
  assertExact(s.lbs, s.tag, exampleSpec([], { ports: HTTP_ONLY }) as unknown as OracleSpec);
  assert.equal(creates(), 24, 're-apply created nothing');

  const deleted = await lbaas.delete(s.uid);
  assert.equal(deleted.converged, true, deleted.error);
  assert.deepEqual(taggedLeft(s.tag), []);
});

test('lost create answers while the tag index lags: every object exists once and is tagged; a second apply right after creates nothing', async () => {
  await admin.putFaults(stack.sim, { ...LOOSE, seed: 11, rates: { dropAfterCommit: 0.3 }, routes: '^POST /api/LBaaS/' });
  const s = fresh(1, 'real-lost');
  const first = await apply(s.spec());
  assert.equal(first.converged, true, first.error);
  await admin.putFaults(stack.sim, LOOSE);
  const before = creates();
  // Within the tag index lag of the first apply: the objects must be found without the index.
  const again = await apply(s.spec({ servers: [{ name: 'node-1', address: '10.0.0.11' }, { name: 'node-2', address: '10.0.0.12' }] }));
  assert.equal(again.converged, true, again.error);
  assertExact(s.lbs, s.tag, exampleSpec([]) as unknown as OracleSpec);
  assert.equal(creates(), before);
  assert.equal((await lbaas.delete(s.uid)).converged, true);
  assert.deepEqual(taggedLeft(s.tag), []);
});

test('a worker stopped mid-pass: a fresh worker (no memory of what the first created) converges without duplicates', async () => {
  await admin.putFaults(stack.sim, LOOSE);
  const s = fresh(1, 'real-crash');
  const raw = s.spec();
  const { revision } = await lbaas.apply(raw, valid(raw));
  await until('a third of the objects exist', () => objectsOn(stack.sim, s.lbs[0] as string).length >= 4, 60_000, 20);
  await stack.stopWorker();
  await stack.startWorker();
  const result = await lbaas.waitConverged(s.uid, revision);
  assert.equal(result.converged, true, result.error);
  assertExact(s.lbs, s.tag, exampleSpec([]) as unknown as OracleSpec);
  assert.equal((await lbaas.delete(s.uid)).converged, true);
  assert.deepEqual(taggedLeft(s.tag), []);
});

test('a fresh worker right after apply, inside the tag index lag: the next pass and the delete find every object through the last pass\'s identifiers', async () => {
  await admin.putFaults(stack.sim, { ...LOOSE, tagLagMs: { min: 20_000, max: 20_000 } });
  const s = fresh(1, 'real-handover');
  assert.equal((await apply(s.spec())).converged, true);
  // The new worker has no memory of what the old one created; the index lists nothing of this service for 20 s.
  await stack.stopWorker();
  await stack.startWorker();
  const before = creates();
  const again = await apply(s.spec({ servers: [{ name: 'node-1', address: '10.0.0.11' }, { name: 'node-2', address: '10.0.0.12' }] }));
  assert.equal(again.converged, true, again.error);
  assertExact(s.lbs, s.tag, exampleSpec([]) as unknown as OracleSpec);
  assert.equal(creates(), before, 'nothing created twice');
  await stack.stopWorker();
  await stack.startWorker();
  assert.equal((await lbaas.delete(s.uid)).converged, true);
  assert.deepEqual(taggedLeft(s.tag), []);
});

test('an object untagged out of band (its resource then answers tags: null) is neither adopted nor destroyed; ours is recreated beside it', async () => {
  await admin.putFaults(stack.sim, LOOSE);
  const s = fresh(1, 'real-adopt');
  const lb = s.lbs[0] as string;
  // Converge once, then remove the tag from one Server out of band: its Core resource now answers "tags": null.
  assert.equal((await apply(s.spec())).converged, true);
  const server = objectsOn(stack.sim, lb).find((o) => o.kind === 'server') as AdminObject;
  await admin.patch(stack.sim, server.identifier, { tags: [] });
  const result = await apply(s.spec({ servers: [{ name: 'node-1', address: '10.0.0.11' }, { name: 'node-2', address: '10.0.0.12' }] }));
  assert.equal(result.converged, true, result.error);
  // The untagged Server is not ours any more: left alone, and ours recreated beside it.
  const on = objectsOn(stack.sim, lb);
  assert.equal(on.filter((o) => o.identifier === server.identifier && o.tags.length === 0).length, 1, 'the untagged look-alike is untouched');
  assert.deepEqual(describeObjects(on.filter((o) => o.tags.includes(s.tag)), stack.sim), expectedLines(exampleSpec([]) as unknown as OracleSpec));
  await admin.delete(stack.sim, server.identifier);
  assert.equal((await lbaas.delete(s.uid)).converged, true);
  assert.deepEqual(taggedLeft(s.tag), []);
});

test('429 without Retry-After at 5 requests/s per token: converges, backs off (few 429s), and status says rate limited while it lasts', async () => {
  await admin.putFaults(stack.sim, { ...REALISTIC, rateLimit: { rps: 5, burst: 10, retryAfter: false } });
  const s = fresh(1, 'real-429');
  stack.sim.resetStats();
  const raw = s.spec();
  const { revision } = await lbaas.apply(raw, valid(raw));
  let sawNotice = false;
  const watching = (async () => {
    for (;;) {
      const st = await lbaas.status(s.uid).catch(() => null);
      if (st?.engineRateLimitedUntil) sawNotice = true;
      if (st?.lastPass?.revision === revision) return;
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  const result = await lbaas.waitConverged(s.uid, revision);
  await watching;
  assert.equal(result.converged, true, result.error);
  assertExact(s.lbs, s.tag, exampleSpec([]) as unknown as OracleSpec);
  const stats = stack.sim.stats();
  assert.ok(stats.throttled > 0, 'the worker met the Engine limit (its own budget is 10/s)');
  assert.ok(stats.throttled / stats.total <= 0.1, `429s ${stats.throttled} of ${stats.total} requests: backing off, not hammering`);
  assert.equal(sawNotice, true, 'status reported the rate limit while it lasted');
  assert.equal((await lbaas.delete(s.uid)).converged, true);
  assert.deepEqual(taggedLeft(s.tag), []);
});
