/**
 * A Service's own VIP (docs/kubernetes.md#a-vip-of-its-own), as lbaas kube reaches it: through the workflows
 * allocateServiceVips and releaseServiceVips, which a worker runs (the Engine calls, and the token, stay there), the
 * way discovery does (kube/discovery.ts). Which prefix serves which family is decided here; when to run them is the
 * controller's.
 */
import type { LbaasClient } from '../client/service-client';
import { workflowIds, workflowTypes, type AllocateServiceVipsResult, type AllocateServiceVipsWorkflow, type ClusterDiscovery, type ReleaseServiceVipsResult, type ReleaseServiceVipsWorkflow, type VipPrefix } from '../contract';
import type { IpFamily } from '../domain/ip';

/** A run that has not ended by then (no worker, the Engine down past the activity's retries) fails the sync, which retries. */
const RUN_TIMEOUT = '3m';

const KUBE_FAMILY: Record<IpFamily, string> = { v4: 'IPv4', v6: 'IPv6' };

/** The first discovered prefix of each family, as upstream takes the first prefix of a family; or why there is none. */
export function vipPrefixes(families: readonly IpFamily[], found: ClusterDiscovery | null, clusterName: string): { ok: true; prefixes: VipPrefix[] } | { ok: false; reason: string } {
  const prefixes: VipPrefix[] = [];
  for (const fam of families) {
    const family = fam === 'v6' ? 6 : 4;
    const p = found?.prefixes.find((x) => x.family === family);
    if (!p) {
      const why = found === null ? 'discovery is off (--auto-discover-load-balancer false)' : `no ${KUBE_FAMILY[fam]} prefix is tagged kubernetes-lb-prefix-${clusterName}`;
      return { ok: false, reason: `lbaas.anx.io/vip: cannot allocate an ${KUBE_FAMILY[fam]} address: ${why}` };
    }
    prefixes.push({ identifier: p.identifier, cidr: p.cidr, family });
  }
  return { ok: true, prefixes };
}

/**
 * Allocates (or adopts) the Service's VIPs. One workflow id per Service, joined when running (two replicas, a retry
 * after a lost answer): one run, one reservation.
 */
export async function allocateVips(lbaas: LbaasClient, serviceUid: string, prefixes: VipPrefix[], reserved: string[]): Promise<AllocateServiceVipsResult> {
  return lbaas.client.workflow.execute<AllocateServiceVipsWorkflow>(workflowTypes.allocateServiceVips, {
    workflowId: workflowIds.vipAllocate(serviceUid),
    workflowIdConflictPolicy: 'USE_EXISTING',
    taskQueue: lbaas.taskQueue,
    args: [{ serviceUid, prefixes, reserved }],
    workflowExecutionTimeout: RUN_TIMEOUT,
    staticSummary: `allocate the VIPs of service ${serviceUid}`,
  });
}

/** Releases the addresses tagged as the Service's VIPs (nothing else). */
export async function releaseVips(lbaas: LbaasClient, serviceUid: string): Promise<ReleaseServiceVipsResult> {
  return lbaas.client.workflow.execute<ReleaseServiceVipsWorkflow>(workflowTypes.releaseServiceVips, {
    workflowId: workflowIds.vipRelease(serviceUid),
    workflowIdConflictPolicy: 'USE_EXISTING',
    taskQueue: lbaas.taskQueue,
    args: [{ serviceUid }],
    workflowExecutionTimeout: RUN_TIMEOUT,
    staticSummary: `release the VIPs of service ${serviceUid}`,
  });
}
