/**
 * The cluster discovery of k8s-anexia-ccm, read-only (docs/kubernetes.md#discovery): the load balancers are the Core
 * resources tagged `<tag prefix>-<cluster>` that are LBaaS LoadBalancers; the external addresses come from the IPAM
 * prefixes tagged `kubernetes-lb-prefix-<cluster>`, each prefix's VIP being its address tagged
 * `kubernetes-lb-vip-<cluster>`, else the address below its broadcast address. As upstream allocates one address per
 * IP family from the first prefix of that family, the external addresses are the VIP of the first IPv4 and of the
 * first IPv6 prefix. What is tagged but cannot be used is skipped and reported, as upstream logs and skips it;
 * transient Engine errors fail the activity (and Temporal retries it).
 */
import type { ClusterDiscovery, DiscoveredPrefix, DiscoverClusterInput } from '../contract';
import { canonicalIp } from '../domain';
import { calculatedVip } from './discover-vip';
import { EngineNotFoundError, EngineProtocolError, EngineValidationError, parseCidr, type EngineClient } from './engine';
import { mapLimit, RETRIEVE_CONCURRENCY } from './state';

export const PREFIX_TAG = (cluster: string) => `kubernetes-lb-prefix-${cluster}`;
export const VIP_TAG = (cluster: string) => `kubernetes-lb-vip-${cluster}`;
export const loadBalancerTag = (tagPrefix: string, cluster: string) => `${tagPrefix}-${cluster}`;

/** Answers that say "this identifier is not an object of that kind" (or not a usable one): skip it, do not retry. */
function unusable(err: unknown): err is Error {
  return err instanceof EngineNotFoundError || err instanceof EngineValidationError || err instanceof EngineProtocolError;
}

export async function discoverCluster(engine: EngineClient, input: DiscoverClusterInput): Promise<ClusterDiscovery> {
  const { clusterName, tagPrefix } = input;
  const skipped: ClusterDiscovery['skipped'] = [];
  const lbTag = loadBalancerTag(tagPrefix, clusterName);

  const [lbRefs, prefixRefs, vipRefs] = await Promise.all([
    engine.listResourcesByTag(lbTag),
    engine.listResourcesByTag(PREFIX_TAG(clusterName)),
    engine.listResourcesByTag(VIP_TAG(clusterName)),
  ]);

  const lbs = await mapLimit(lbRefs, RETRIEVE_CONCURRENCY, async (r) => {
    try {
      await engine.get('loadbalancer', r.identifier);
      return r.identifier;
    } catch (err) {
      if (!unusable(err)) throw err;
      skipped.push({ identifier: r.identifier, tag: lbTag, reason: `not a load balancer (${err.message})` });
      return null;
    }
  });

  // Each prefix's tagged VIP: the first tagged address (in listing order) that belongs to it.
  const vips = new Map<string, string>();
  const addresses = await mapLimit(vipRefs, RETRIEVE_CONCURRENCY, async (r) => {
    try {
      return await engine.getAddress(r.identifier);
    } catch (err) {
      if (!unusable(err)) throw err;
      skipped.push({ identifier: r.identifier, tag: VIP_TAG(clusterName), reason: `not an IPAM address (${err.message})` });
      return null;
    }
  });
  for (const a of addresses) {
    const ip = a && canonicalIp(a.name);
    if (a && ip && !vips.has(a.prefix)) vips.set(a.prefix, ip.text);
  }

  const prefixes: DiscoveredPrefix[] = [];
  const read = await mapLimit(prefixRefs, RETRIEVE_CONCURRENCY, async (r) => {
    try {
      return await engine.getPrefix(r.identifier);
    } catch (err) {
      if (!unusable(err)) throw err;
      skipped.push({ identifier: r.identifier, tag: PREFIX_TAG(clusterName), reason: `not an IPAM prefix (${err.message})` });
      return null;
    }
  });
  for (const p of read) {
    if (!p) continue;
    const family = parseCidr(p.name)?.family === 6 ? 6 : 4;
    const tagged = vips.get(p.identifier);
    if (tagged !== undefined) {
      prefixes.push({ identifier: p.identifier, cidr: p.name, family, vip: tagged, vipSource: 'tagged' });
      continue;
    }
    const vip = calculatedVip(p.name);
    if (vip === null) {
      skipped.push({ identifier: p.identifier, tag: PREFIX_TAG(clusterName), reason: `prefix ${p.name} has no address below its broadcast address and no tagged VIP` });
      continue;
    }
    prefixes.push({ identifier: p.identifier, cidr: p.name, family, vip: vip.address, vipSource: 'calculated' });
  }

  const externalAddresses: string[] = [];
  for (const family of [4, 6] as const) {
    const first = prefixes.find((p) => p.family === family);
    if (first) externalAddresses.push(first.vip);
  }
  return {
    clusterName,
    loadBalancerTag: lbTag,
    loadBalancers: lbs.filter((id): id is string => id !== null),
    externalAddresses,
    prefixes,
    skipped: skipped.sort((a, b) => a.identifier.localeCompare(b.identifier)),
  };
}
