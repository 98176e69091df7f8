/**
 * The cluster discovery of lbaas kube (docs/kubernetes.md#discovery): runs the discoverCluster workflow (a worker
 * does the Engine reads) and merges what it finds with the explicit flags. Only the union logic lives here; when to
 * run it is the controller's.
 */
import { randomUUID } from 'node:crypto';
import type { LbaasClient } from '../client/service-client';
import { workflowIds, workflowTypes, type ClusterDiscovery, type DiscoverClusterWorkflow } from '../contract';
import type { KubeSettings } from './mapping';

/** Upstream's `autoDiscoveryTagPrefix` default. */
export const DEFAULT_TAG_PREFIX = 'anxkube-ccm-lb';
/** Upstream caches discovered prefixes for 2 minutes; lbaas kube looks again as often. */
export const DEFAULT_DISCOVERY_INTERVAL_MS = 120_000;
/** Until a first discovery succeeded no Service is applied, so a failed one is retried sooner than the interval. */
export const FIRST_DISCOVERY_RETRY_MS = 10_000;
/** A run that has not ended by then (no worker polling, the Engine down) is given up; the next one tries again. */
const RUN_TIMEOUT = '3m';

export async function runDiscovery(lbaas: LbaasClient, clusterName: string, tagPrefix: string, workflowId = workflowIds.discoverRun(clusterName, randomUUID())): Promise<ClusterDiscovery> {
  return lbaas.client.workflow.execute<DiscoverClusterWorkflow>(workflowTypes.discoverCluster, {
    workflowId,
    taskQueue: lbaas.taskQueue,
    args: [{ clusterName, tagPrefix }],
    workflowExecutionTimeout: RUN_TIMEOUT,
    staticSummary: `discover the load balancers and external addresses of cluster ${clusterName}`,
  });
}

const union = (first: readonly string[], then: readonly string[]) => [...new Set([...first, ...then])];

/** The settings a Service is mapped with: the flags first, then what discovery found that they do not name. */
export function effectiveSettings(flags: KubeSettings, found: ClusterDiscovery | null): KubeSettings {
  if (found === null) return flags;
  return {
    ...flags,
    loadBalancers: union(flags.loadBalancers, found.loadBalancers),
    externalAddresses: union(flags.externalAddresses, found.externalAddresses),
    externalPrefixes: union(flags.externalPrefixes ?? [], found.prefixes.map((p) => p.cidr)),
  };
}

/** What changed between two discoveries, for the log; null when the result that matters (load balancers, addresses, prefixes) did not. */
export function describeDiscovery(before: ClusterDiscovery | null, now: ClusterDiscovery): string | null {
  const same = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);
  const cidrs = (d: ClusterDiscovery) => d.prefixes.map((p) => p.cidr);
  if (before && same(before.loadBalancers, now.loadBalancers) && same(before.externalAddresses, now.externalAddresses) && same(cidrs(before), cidrs(now))) return null;
  const vips = now.prefixes.map((p) => `${p.vip} (${p.vipSource} in ${p.cidr})`);
  const skipped = now.skipped.map((s) => `${s.identifier} tagged ${s.tag}: ${s.reason}`);
  return (
    `discovered load balancers ${now.loadBalancers.join(', ') || 'none'} (tag ${now.loadBalancerTag}); ` +
    `external addresses ${now.externalAddresses.join(', ') || 'none'}` +
    (vips.length > 0 ? ` from prefix VIPs ${vips.join(', ')}` : '') +
    (skipped.length > 0 ? `; skipped ${skipped.join('; ')}` : '')
  );
}
