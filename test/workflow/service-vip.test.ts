/**
 * allocateServiceVips and releaseServiceVips on the real dev server and the simulator over HTTP, started the way lbaas
 * kube starts them (kube/vip.ts): Temporal retries a create whose answer was lost and the retry finds the address by
 * its description (one address); two starts at once join one run; the release deletes only the Service's tagged
 * address; the Engine token is in no history; bad input fails at once, naming the field.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, test } from 'node:test';
import type { Worker } from '@temporalio/worker';
import { LbaasClient } from '../../client/service-client';
import { FAILURE_TYPES, workflowIds, workflowTypes } from '../../contract';
import { allocateVips, releaseVips } from '../../kube/vip';
import { rawRequest } from '../../simulator/testkit';
import { startStack, stopTemporalServer, TEST_TOKEN, type Stack } from '../helpers/stack';
import { chainOf, drained, eventsOf, failureOf, Runs, scheduledActivities } from '../helpers/workflows';

let stack: Stack;
let worker: Worker;
let runs: Runs;
let lbaas: LbaasClient;
let prefix: string;
const CIDR = '198.51.100.96/28';

before(async () => {
  stack = await startStack({ worker: false });
  worker = await stack.startWorker();
  runs = new Runs(stack.client, stack.taskQueue);
  lbaas = new LbaasClient(stack.client, stack.taskQueue);
});
beforeEach(async () => {
  stack.sim.reset();
  prefix = await seed({ kind: 'prefix', name: CIDR, tags: ['kubernetes-lb-prefix-wf'] });
});
afterEach(async () => {
  await rawRequest(stack.sim.url, 'PUT', '/_sim/faults', { body: {} });
  await runs.terminateRunning();
  await drained(worker, () => stack.sim.stats().total);
});
after(async () => {
  await stack?.stop();
  await stopTemporalServer();
});

async function seed(body: Record<string, unknown>): Promise<string> {
  const res = await rawRequest(stack.sim.url, 'POST', '/_sim/objects', { body });
  assert.equal(res.status, 201, res.text);
  return (res.json as { identifier: string }).identifier;
}

const addresses = () =>
  stack.sim
    .objects()
    .filter((o) => o.kind === 'address')
    .map((o) => `${o.name} [${o.tags.join(',')}]`)
    .sort();
const PREFIXES = () => [{ identifier: prefix, cidr: CIDR, family: 4 as const }];

test('every create answer lost (applied, then a 502 or a reset): Temporal retries the activity, which finds the address by its description and tags it; one address, no token in the history', async () => {
  const res = await rawRequest(stack.sim.url, 'PUT', '/_sim/faults', { body: { rates: { dropAfterCommit: 1 }, routes: '^POST /api/ipam/v1/address\\.json$' } });
  assert.equal(res.status, 200, res.text);
  stack.sim.resetStats();
  const r = await allocateVips(lbaas, 'wf-u1', PREFIXES(), []);
  assert.deepEqual(r.vips.map((v) => [v.address, v.how]), [['198.51.100.98', 'adopted']]);
  assert.deepEqual(addresses(), ['198.51.100.98 [lbaas-kube-vip=wf-u1]']);
  assert.equal(stack.sim.stats().requests['POST /api/ipam/v1/address.json'], 1);
  const events = await eventsOf(stack.client.workflow.getHandle(workflowIds.vipAllocate('wf-u1')));
  assert.deepEqual(scheduledActivities(events), ['allocateServiceVips']);
  const failedAttempts = events.filter((e) => e.activityTaskStartedEventAttributes?.attempt && e.activityTaskStartedEventAttributes.attempt > 1);
  assert.equal(failedAttempts.length, 1, 'one retried attempt');
  assert.ok(!JSON.stringify(events).includes(TEST_TOKEN), 'the Engine token is not in the history');
});

test('two starts for one Service at once (two replicas, a retry) join one run: one address, the same answer', async () => {
  stack.sim.resetStats();
  const [a, b] = await Promise.all([allocateVips(lbaas, 'wf-u2', PREFIXES(), []), allocateVips(lbaas, 'wf-u2', PREFIXES(), [])]);
  assert.deepEqual(a, b);
  assert.equal(stack.sim.stats().requests['POST /api/ipam/v1/address.json'], 1);
  assert.deepEqual(addresses(), ['198.51.100.98 [lbaas-kube-vip=wf-u2]']);
});

test("the release deletes the Service's tagged address and nothing else; a second release finds nothing", async () => {
  const other = await seed({ kind: 'address', name: '198.51.100.98', fields: { prefix }, tags: ['kubernetes-lb-vip-wf'] });
  const mine = await allocateVips(lbaas, 'wf-u3', PREFIXES(), []);
  assert.deepEqual(mine.vips.map((v) => v.address), ['198.51.100.99']);
  const released = await releaseVips(lbaas, 'wf-u3');
  assert.deepEqual(released.released.map((x) => x.address), ['198.51.100.99']);
  assert.deepEqual(addresses(), ['198.51.100.98 [kubernetes-lb-vip-wf]']);
  assert.ok(stack.sim.objects().some((o) => o.identifier === other));
  assert.deepEqual((await releaseVips(lbaas, 'wf-u3')).released, []);
});

test('bad input fails at once as non-retryable InvalidInput naming the field, with no Engine request', async () => {
  stack.sim.resetStats();
  for (const [args, message] of [
    [{ serviceUid: 'a uid', prefixes: PREFIXES(), reserved: [] }, /serviceUid: must be 1-128 characters/],
    [{ serviceUid: 'u', prefixes: [], reserved: [] }, /prefixes: must list 1 or 2 prefixes/],
    [{ serviceUid: 'u', prefixes: [{ identifier: prefix, cidr: 'ten', family: 4 }], reserved: [] }, /prefixes\[0\]: must be \{identifier, cidr, family: 4 \| 6\}/],
    [{ serviceUid: 'u', prefixes: PREFIXES(), reserved: [7] }, /reserved: must be a list of addresses/],
  ] as const) {
    const handle = await stack.client.workflow.start(workflowTypes.allocateServiceVips, { workflowId: `lbaas-vip/bad/${Date.now()}`, taskQueue: stack.taskQueue, args: [args] });
    const cause = chainOf(await failureOf(handle.result())).find((l) => l.type === FAILURE_TYPES.invalidInput);
    assert.ok(cause, JSON.stringify(args));
    assert.match(cause.message, message);
  }
  assert.equal(stack.sim.stats().total, 0);
});
