/**
 * discoverCluster: one read of the cluster's load balancers and external addresses the way k8s-anexia-ccm discovers
 * them (activities/discover.ts), for `lbaas kube` at its start and every discovery interval (docs/kubernetes.md#discovery).
 * A short one-shot: it writes nothing, and a failure only means lbaas kube keeps what it discovered last.
 */
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { ClusterDiscovery, DiscoverClusterInput } from '../contract';
import { fieldsOf, invalidInput, onlyKnownFields } from './input';
import { ENGINE_CALL } from './options';

/** 13 attempts at 250 ms x 1.5 ride out about a minute of Engine trouble; longer, and the next interval tries again. */
const DISCOVERY_CALL = { ...ENGINE_CALL, retry: { ...ENGINE_CALL.retry, maximumAttempts: 13 } };

const NAME = /^[^\s/]{1,128}$/;

export async function discoverCluster(input: DiscoverClusterInput): Promise<ClusterDiscovery> {
  const where = `discoverCluster (${workflowInfo().workflowId})`;
  const fields = fieldsOf(input, where, '"clusterName" and "tagPrefix"');
  onlyKnownFields(fields, where, ['clusterName', 'tagPrefix']);
  const { clusterName, tagPrefix } = fields;
  if (typeof clusterName !== 'string' || !NAME.test(clusterName)) throw invalidInput(`${where}: clusterName: must be 1-128 characters without whitespace or "/"`);
  if (typeof tagPrefix !== 'string' || !NAME.test(tagPrefix)) throw invalidInput(`${where}: tagPrefix: must be 1-128 characters without whitespace or "/"`);
  const engine = proxyActivities<Activities>(DISCOVERY_CALL);
  return engine.discoverCluster.executeWithOptions({ summary: `discover cluster ${clusterName}` }, [{ clusterName, tagPrefix }]);
}
