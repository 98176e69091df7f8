/**
 * discoverCluster on the real dev server and the simulator over HTTP, started the way lbaas kube starts it
 * (kube/discovery.ts): what a cluster set up for k8s-anexia-ccm is found to have, with reads only; a prefix added
 * later is found by the next run; bad input fails at once, naming the field.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, test } from 'node:test';
import type { Worker } from '@temporalio/worker';
import { LbaasClient } from '../../client/service-client';
import { FAILURE_TYPES, workflowIds, workflowTypes, type ClusterDiscovery } from '../../contract';
import { runDiscovery } from '../../kube/discovery';
import { rawRequest } from '../../simulator/testkit';
import { writeRequests } from '../helpers/engine-state';
import { startStack, stopTemporalServer, TEST_TOKEN, type Stack } from '../helpers/stack';
import { chainOf, drained, eventsOf, failureOf, Runs, scheduledActivities } from '../helpers/workflows';

let stack: Stack;
let worker: Worker;
let runs: Runs;
let lbaas: LbaasClient;

before(async () => {
  stack = await startStack({ worker: false });
  worker = await stack.startWorker();
  runs = new Runs(stack.client, stack.taskQueue);
  lbaas = new LbaasClient(stack.client, stack.taskQueue);
});
afterEach(async () => {
  await runs.terminateRunning();
  await drained(worker, () => stack.sim.stats().total);
});
after(async () => {
  await stack?.stop();
  await stopTemporalServer();
});

/** Seeds through the admin API over HTTP, as an operator's fixture would. */
async function seed(body: Record<string, unknown>): Promise<string> {
  const res = await rawRequest(stack.sim.url, 'POST', '/_sim/objects', { body });
  assert.equal(res.status, 201, res.text);
  return (res.json as { identifier: string }).identifier;
}

test('a cluster tagged for k8s-anexia-ccm: its load balancers and the VIPs of its first IPv4 and IPv6 prefixes, with no Engine write', async () => {
  const lb1 = await seed({ kind: 'loadbalancer', name: 'disc-1', tags: ['anxkube-ccm-lb-disc'] });
  const lb2 = await seed({ kind: 'loadbalancer', name: 'disc-2', tags: ['anxkube-ccm-lb-disc'] });
  await seed({ kind: 'loadbalancer', name: 'other-cluster', tags: ['anxkube-ccm-lb-other'] });
  const v4 = await seed({ kind: 'prefix', name: '198.51.100.16/28', tags: ['kubernetes-lb-prefix-disc'] });
  await seed({ kind: 'address', name: '198.51.100.20', fields: { prefix: v4 }, tags: ['kubernetes-lb-vip-disc'] });
  stack.sim.resetStats();

  const found = await runDiscovery(lbaas, 'disc', 'anxkube-ccm-lb');
  assert.deepEqual([...found.loadBalancers].sort(), [lb1, lb2].sort());
  assert.deepEqual(found.externalAddresses, ['198.51.100.20']);
  assert.deepEqual(found.prefixes, [{ identifier: v4, cidr: '198.51.100.16/28', family: 4, vip: '198.51.100.20', vipSource: 'tagged' }]);
  assert.deepEqual(writeRequests(stack.sim.stats()), {});

  // An IPv6 prefix tagged later is found by the next run (started here by hand to read its history), its VIP calculated.
  await seed({ kind: 'prefix', name: '2001:db8:5::/64', tags: ['kubernetes-lb-prefix-disc'] });
  const handle = await stack.client.workflow.start(workflowTypes.discoverCluster, {
    workflowId: workflowIds.discoverRun('disc', 'by-hand'),
    taskQueue: stack.taskQueue,
    args: [{ clusterName: 'disc', tagPrefix: 'anxkube-ccm-lb' }],
  });
  const again = (await handle.result()) as ClusterDiscovery;
  assert.deepEqual(again.externalAddresses, ['198.51.100.20', '2001:db8:5:0:ffff:ffff:ffff:fffe']);
  assert.deepEqual(writeRequests(stack.sim.stats()), {});

  // One activity, and the token nowhere in the history.
  const events = await eventsOf(handle);
  assert.deepEqual(scheduledActivities(events), ['discoverCluster']);
  assert.ok(!JSON.stringify(events).includes(TEST_TOKEN), 'the Engine token is not in the history');
});

test('bad input fails at once as non-retryable InvalidInput naming the field, with no Engine request', async () => {
  stack.sim.resetStats();
  const handle = await stack.client.workflow.start(workflowTypes.discoverCluster, {
    workflowId: `lbaas-discover/bad/${Date.now()}`,
    taskQueue: stack.taskQueue,
    args: [{ clusterName: 'a cluster', tagPrefix: 'anxkube-ccm-lb' }],
  });
  const err = await failureOf(handle.result());
  const cause = chainOf(err).find((l) => l.type === FAILURE_TYPES.invalidInput);
  assert.ok(cause, JSON.stringify(chainOf(err)));
  assert.match(cause.message, /clusterName: must be 1-128 characters/);
  assert.equal(stack.sim.stats().total, 0);
});
