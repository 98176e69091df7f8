/**
 * From Kubernetes objects to lbaas specs, exactly as k8s-anexia-ccm maps them (docs/kubernetes.md#mapping), so that
 * `lbaas import` of what the upstream controller built and `lbaas kube` name the same Engine objects: pure, no I/O.
 *
 * A Service becomes one service spec: serviceUid = metadata.uid, nameSuffix = `<name>.<namespace>.<cluster>`, one
 * port per Service port keyed by its name ("" for a single unnamed port), `port` as external and `nodePort` as
 * internal. The cluster's Nodes become one server pool that every Service names, so a node joining or leaving is one
 * pool change that the pool fans out.
 */
import { formatIssues, validateSpec, validateMembers, type ServerSpec, type ValidatedSpec } from '../domain';
import type { KubeNode, KubeService } from './objects';
import { externalAddressesOf } from './service-options';

/** What `lbaas kube` is configured with (flags, env). */
export interface KubeSettings {
  clusterName: string;
  loadBalancers: string[];
  externalAddresses: string[];
  /** Discovered prefixes (CIDR): a Service may ask for an address inside one (kube/service-options.ts). */
  externalPrefixes?: string[];
  /** The `spec.loadBalancerClass` that is ours; null: Services without a class. */
  loadBalancerClass: string | null;
  /** Discovery as upstream's auto-discovery does it (kube/discovery.ts); null or absent: the flags alone. */
  discovery?: { tagPrefix: string; intervalMs: number } | null;
}

/** The finalizer every cloud provider's service controller sets before it creates anything. */
export const CLEANUP_FINALIZER = 'service.kubernetes.io/load-balancer-cleanup';
/** Upstream's annotation: report this hostname as the ingress instead of the IPs (no hair-pinning inside the cluster). */
export const HOSTNAME_ANNOTATION = 'lbaas.anx.io/load-balancer-proxy-pass-hostname';
/** The cloud-provider convention for nodes that must not receive load-balancer traffic. */
export const EXCLUDE_NODE_LABEL = 'node.kubernetes.io/exclude-from-external-load-balancers';

/** The cluster name goes into object names and the pool name: a DNS-ish label set that both accept. */
export const CLUSTER_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
export const CLUSTER_NAME_RULE = 'must be 1-100 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit';

/** The server pool holding the cluster's nodes. */
export const nodePoolName = (clusterName: string) => `k8s-${clusterName}`;

/** Upstream's GetLoadBalancerName: the suffix of every object name of the Service. */
export const nameSuffixOf = (svc: KubeService, clusterName: string) => `${svc.metadata.name}.${svc.metadata.namespace}.${clusterName}`;

/** `namespace/name`, the key Services are known by in logs and the work queue. */
export const serviceKey = (svc: KubeService) => `${svc.metadata.namespace}/${svc.metadata.name}`;

/** What lbaas kube does with a Service. */
export type Intent = 'ensure' | 'teardown' | 'ignore';

/**
 * `ensure` a LoadBalancer Service of our class; `teardown` one that carries our finalizer but is being deleted,
 * stopped being type LoadBalancer, or changed class; `ignore` everything else (ClusterIP, another controller's class).
 */
export function intentOf(svc: KubeService, settings: Pick<KubeSettings, 'loadBalancerClass'>): Intent {
  const ours = svc.spec?.type === 'LoadBalancer' && (svc.spec.loadBalancerClass ?? null) === settings.loadBalancerClass;
  const finalized = (svc.metadata.finalizers ?? []).includes(CLEANUP_FINALIZER);
  if (ours && !svc.metadata.deletionTimestamp) return 'ensure';
  return finalized ? 'teardown' : 'ignore';
}

/** `spec`: the document (what the controller's apply carries); `validated`: its validated form, checked here once. */
export type SpecMapping = { ok: true; spec: Record<string, unknown>; validated: ValidatedSpec } | { ok: false; reasons: string[] };

/**
 * The spec document (as `lbaas apply -f` would read it) for a Service, or every reason it cannot have one: a port
 * that is not TCP, two ports with one name, a port without a nodePort, an option of kube/service-options.ts with a bad
 * value, or anything validateSpec refuses.
 */
export function serviceSpec(svc: KubeService, settings: KubeSettings, vips?: readonly string[]): SpecMapping {
  const reasons: string[] = [];
  const ports: Record<string, { external: number; internal: number }> = {};
  for (const [i, p] of (svc.spec?.ports ?? []).entries()) {
    const name = p.name ?? '';
    const shown = name === '' ? `port ${i} (${p.port})` : `port "${name}" (${p.port})`;
    if ((p.protocol ?? 'TCP') !== 'TCP') reasons.push(`${shown}: protocol ${p.protocol} is not supported, only TCP`);
    if (Object.hasOwn(ports, name)) {
      // Upstream refuses the whole Service (ErrPortNameNotUnique): two Backends would share one name.
      reasons.push(`${shown}: port name "${name}" is not unique`);
      continue;
    }
    if (p.nodePort === undefined || p.nodePort === null || p.nodePort === 0) {
      reasons.push(`${shown}: has no nodePort (spec.allocateLoadBalancerNodePorts is false?)`);
      continue;
    }
    ports[name] = { external: p.port, internal: p.nodePort };
  }
  const addresses = externalAddressesOf(svc, settings, vips);
  if (!addresses.ok) reasons.push(...addresses.reasons);
  if (reasons.length > 0 || !addresses.ok) return { ok: false, reasons };
  const spec: Record<string, unknown> = {
    serviceUid: svc.metadata.uid,
    nameSuffix: nameSuffixOf(svc, settings.clusterName),
    loadBalancers: settings.loadBalancers,
    externalAddresses: addresses.addresses,
    ports,
    serverPool: nodePoolName(settings.clusterName),
  };
  const checked = validateSpec(spec);
  if (!checked.ok) return { ok: false, reasons: formatIssues(checked.issues).split('\n') };
  return { ok: true, spec, validated: checked.spec };
}

export interface NodeMembers {
  /** Pool members: the nodes memberOf keeps, by name. */
  servers: ServerSpec[];
  /** Ready member nodes without a usable address, with the reason (upstream fails every Service while one exists). */
  unusable: string[];
}

/** The cluster autoscaler's taint on a node it is about to delete (upstream's ToBeDeletedTaint). */
export const TO_BE_DELETED_TAINT = 'ToBeDeletedByClusterAutoscaler';

export function isReady(node: KubeNode): boolean {
  return (node.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** Go's strconv.ParseBool: the only spellings it accepts, and null for anything else. */
export function parseGoBool(text: string): boolean | null {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false;
  return null;
}

/**
 * Why a node is not a load-balancer member, or null when it is: the service controller's node set since Kubernetes
 * 1.30 (cloud-provider's stableNodeSetPredicates, KEP-3458). Readiness is not among the reasons on purpose: a kubelet
 * that misses heartbeats for a while must not rewrite every load balancer; the load balancer's health checks take a
 * node that does not answer out of rotation. The exclusion label excludes with any value Go's ParseBool does not
 * read as false, so a typo excludes rather than includes.
 */
export function nodeExclusion(node: KubeNode): string | null {
  if (node.metadata.deletionTimestamp) return 'being deleted';
  const label = node.metadata.labels?.[EXCLUDE_NODE_LABEL];
  if (label !== undefined && parseGoBool(label) !== false) return `labelled ${EXCLUDE_NODE_LABEL}=${JSON.stringify(label)}`;
  if ((node.spec?.taints ?? []).some((t) => t.key === TO_BE_DELETED_TAINT)) return `tainted ${TO_BE_DELETED_TAINT} by the cluster autoscaler`;
  return null;
}

/**
 * The address upstream's getNodeEndpointAddress picks: the ExternalIP, else the InternalIP; with several of a type the
 * last one listed, as upstream's loop leaves it (so adopted Server objects keep their IP). Null when there is neither.
 */
export function nodeAddress(node: KubeNode): string | null {
  let internal: string | null = null;
  let external: string | null = null;
  for (const a of node.status?.addresses ?? []) {
    if (a.address === '' || a.address === '0.0.0.0' || a.address === '::') continue;
    if (a.type === 'ExternalIP') external = a.address;
    else if (a.type === 'InternalIP') internal = a.address;
  }
  return external ?? internal;
}

/** The node pool's members from the cluster's Nodes. */
export function nodeMembers(nodes: readonly KubeNode[]): NodeMembers {
  const servers: ServerSpec[] = [];
  const unusable: string[] = [];
  for (const node of nodes) {
    if (nodeExclusion(node) !== null) continue;
    const address = nodeAddress(node);
    if (address === null) {
      // A node still registering (no kubelet report yet, or its cloud provider has not set its addresses) is left
      // out until it has one; a Ready node without one is a fault that holds every Service back, as upstream.
      if (isReady(node)) unusable.push(`node ${node.metadata.name} lacks a usable address (no ExternalIP or InternalIP)`);
      continue;
    }
    servers.push({ name: node.metadata.name, address });
  }
  const checked = validateMembers(servers);
  if (!checked.ok) return { servers: [], unusable: [...unusable, ...formatIssues(checked.issues).split('\n').map((l) => `nodes: ${l}`)] };
  return { servers: checked.servers, unusable };
}

export interface IngressEntry {
  ip?: string;
  hostname?: string;
  ports: { port: number; protocol: 'TCP' }[];
}

/**
 * status.loadBalancer.ingress from a converged pass's address status (address -> external ports), as upstream's
 * lbStatusFromReconcileStatus builds it: one entry per address, each with every port found on any address; with the
 * hostname annotation one hostname entry instead (never an IP then: kube-proxy would short-circuit it).
 */
export function ingressOf(status: Record<string, number[]>, svc: KubeService): IngressEntry[] {
  const ports = [...new Set(Object.values(status).flat())].filter((p) => p > 0).sort((a, b) => a - b).map((port) => ({ port, protocol: 'TCP' as const }));
  const hostname = svc.metadata.annotations?.[HOSTNAME_ANNOTATION]?.toLowerCase();
  if (hostname) return [{ hostname, ports }];
  return Object.keys(status)
    .sort()
    .map((ip) => ({ ip, ports }));
}

