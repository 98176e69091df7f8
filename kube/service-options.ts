/**
 * The per-Service options of `lbaas kube` (docs/kubernetes.md#per-service-options): which of the cluster's external
 * addresses a Service gets Binds on, and the Service fields lbaas does not enforce, which are said rather than
 * ignored. Pure, no I/O: a bad value is a reason, and the controller applies nothing for a Service with a reason.
 *
 * The addresses come from one place, externalAddressesOf; a Service's own VIP (`lbaas.anx.io/vip: allocate`) is one
 * branch there, allocated by the controller through a workflow (kube/vip.ts) before the spec is mapped.
 */
import { BlockList } from 'node:net';
import { canonicalIp, type IpFamily } from '../domain/ip';
import type { KubeService } from './objects';

/** k8s-anexia-ccm's annotation: the IP families (`IPv4`, `IPv6`, comma-separated) whose external address the Service gets. */
export const EXTERNAL_IP_FAMILIES_ANNOTATION = 'lbaas.anx.io/external-ip-families';
/** The Service's own external addresses (comma-separated), each one of the cluster's. */
export const LOAD_BALANCER_IPS_ANNOTATION = 'lbaas.anx.io/load-balancer-ips';

/** A Service's own VIP, allocated from the cluster's prefix (docs/kubernetes.md#a-vip-of-its-own): the one value is `allocate`. */
export const VIP_ANNOTATION = 'lbaas.anx.io/vip';
export const VIP_ALLOCATE = 'allocate';
/** Written by lbaas kube: the VIPs it allocated for the Service, so that its teardown releases them whatever changed since. */
export const VIP_ADDRESSES_ANNOTATION = 'lbaas.anx.io/vip-addresses';

/** What the cluster offers: the configured and discovered addresses, and the discovered prefixes (CIDR). */
export interface ClusterAddresses {
  externalAddresses: readonly string[];
  externalPrefixes?: readonly string[];
}

/** The Service's VIP request: none, the IP families to allocate an address of, or why its value is refused. */
export type VipRequest = { kind: 'none' } | { kind: 'allocate'; families: IpFamily[] } | { kind: 'invalid'; reasons: string[] };

/**
 * What `lbaas.anx.io/vip` asks for. `allocate` gets one address per family: those `lbaas.anx.io/external-ip-families`
 * names, else the Service's `spec.ipFamilies`, else IPv4. It replaces the addresses a Service could ask for, so it is
 * refused together with `spec.loadBalancerIP` or `lbaas.anx.io/load-balancer-ips`.
 */
export function vipRequestOf(svc: KubeService): VipRequest {
  const raw = svc.metadata.annotations?.[VIP_ANNOTATION];
  if (raw === undefined) return { kind: 'none' };
  const reasons: string[] = [];
  if (raw !== VIP_ALLOCATE) reasons.push(`${VIP_ANNOTATION}: ${JSON.stringify(raw)} is not a valid value (the one value is "${VIP_ALLOCATE}"; leave the annotation out for the cluster's addresses)`);
  const families = familiesAnnotation(svc, reasons);
  for (const r of requestedAddresses(svc, [])) reasons.push(`${VIP_ANNOTATION}: ${VIP_ALLOCATE} cannot be combined with ${r.from} (${r.text}): the Service gets the address allocated for it`);
  if (reasons.length > 0) return { kind: 'invalid', reasons };
  return { kind: 'allocate', families: families ?? serviceFamilies(svc) ?? ['v4'] };
}

export type AddressChoice = { ok: true; addresses: string[] } | { ok: false; reasons: string[] };

const KUBE_FAMILY: Record<IpFamily, string> = { v4: 'IPv4', v6: 'IPv6' };
const FAMILY_OF: Record<string, IpFamily> = { IPv4: 'v4', IPv6: 'v6' };

/**
 * Upstream's parse of the families annotation (its serviceAddressFamilies): split at commas, each part exactly `IPv4`
 * or `IPv6` (case and spaces matter, as there); null when absent.
 */
function familiesAnnotation(svc: KubeService, reasons: string[]): IpFamily[] | null {
  const raw = svc.metadata.annotations?.[EXTERNAL_IP_FAMILIES_ANNOTATION];
  if (raw === undefined) return null;
  const out: IpFamily[] = [];
  for (const part of raw.split(',')) {
    const fam = FAMILY_OF[part];
    if (fam === undefined) reasons.push(`${EXTERNAL_IP_FAMILIES_ANNOTATION}: ${JSON.stringify(part)} is not an IP family (IPv4 or IPv6, comma-separated)`);
    else if (!out.includes(fam)) out.push(fam);
  }
  return out;
}

/** `spec.loadBalancerIP` and the addresses annotation, canonical; each unreadable one is a reason. */
function requestedAddresses(svc: KubeService, reasons: string[]): { text: string; family: IpFamily; from: string }[] {
  const out: { text: string; family: IpFamily; from: string }[] = [];
  const add = (raw: string, from: string) => {
    const ip = canonicalIp(raw);
    if (ip === null) reasons.push(`${from}: ${JSON.stringify(raw)} is not an IP address`);
    else if (!out.some((o) => o.text === ip.text)) out.push({ ...ip, from });
  };
  const single = svc.spec?.loadBalancerIP ?? '';
  if (single !== '') add(single, 'spec.loadBalancerIP');
  const listed = svc.metadata.annotations?.[LOAD_BALANCER_IPS_ANNOTATION];
  if (listed !== undefined) {
    const parts = listed.split(',').map((p) => p.trim()).filter((p) => p !== '');
    if (parts.length === 0) reasons.push(`${LOAD_BALANCER_IPS_ANNOTATION}: lists no address`);
    for (const p of parts) add(p, LOAD_BALANCER_IPS_ANNOTATION);
  }
  return out;
}

function prefixList(prefixes: readonly string[]): BlockList {
  const list = new BlockList();
  for (const cidr of prefixes) {
    const [address, length] = cidr.split('/');
    const ip = address === undefined ? null : canonicalIp(address);
    if (ip === null || length === undefined || !/^\d{1,3}$/.test(length)) continue;
    list.addSubnet(ip.text, Number(length), ip.family === 'v4' ? 'ipv4' : 'ipv6');
  }
  return list;
}

/**
 * The external addresses of one Service, in the cluster's order:
 * - with `lbaas.anx.io/vip: allocate`, the VIPs allocated for it (`vips`), and nothing else;
 * - the addresses it asks for (`spec.loadBalancerIP`, `lbaas.anx.io/load-balancer-ips`), each of which must be one of
 *   the cluster's external addresses or inside one of its discovered prefixes; without any, the cluster's addresses;
 * - of those, the families `lbaas.anx.io/external-ip-families` names (each must then have an address), else, unless
 *   the Service asked for addresses, the families of the Service itself (`spec.ipFamilies`), as upstream chooses.
 * A cluster without external addresses gives every Service none, as before any option existed.
 */
export function externalAddressesOf(svc: KubeService, cluster: ClusterAddresses, vips?: readonly string[]): AddressChoice {
  const vip = vipRequestOf(svc);
  if (vip.kind === 'invalid') return { ok: false, reasons: vip.reasons };
  // The VIPs allocated for the Service, one per family it asked for; before they are allocated, none (the rest of the
  // Service is checked first, so that a Service that cannot be applied gets no address).
  if (vip.kind === 'allocate') return { ok: true, addresses: [...(vips ?? [])] };
  const reasons: string[] = [];
  const families = familiesAnnotation(svc, reasons);
  const requested = requestedAddresses(svc, reasons);
  const known = cluster.externalAddresses.flatMap((a) => {
    const ip = canonicalIp(a);
    return ip === null ? [] : [ip];
  });
  const prefixes = cluster.externalPrefixes ?? [];
  const inPrefix = prefixList(prefixes);
  for (const r of requested) {
    if (known.some((k) => k.text === r.text) || inPrefix.check(r.text, r.family === 'v4' ? 'ipv4' : 'ipv6')) continue;
    const offered = [...known.map((k) => k.text), ...prefixes].join(', ') || 'none';
    reasons.push(`${r.from}: ${r.text} is not one of the cluster's external addresses or prefixes (${offered})`);
  }
  if (families !== null) {
    for (const r of requested) {
      if (!families.includes(r.family)) reasons.push(`${r.from}: ${r.text} is ${KUBE_FAMILY[r.family]}, which ${EXTERNAL_IP_FAMILIES_ANNOTATION} (${families.map((f) => KUBE_FAMILY[f]).join(',')}) leaves out`);
    }
  }
  if (reasons.length > 0) return { ok: false, reasons };
  const candidates = requested.length > 0 ? requested : known;
  if (candidates.length === 0) return { ok: true, addresses: [] };
  const wanted = families ?? (requested.length > 0 ? null : serviceFamilies(svc));
  if (wanted === null) return { ok: true, addresses: candidates.map((c) => c.text) };
  const chosen = candidates.filter((c) => wanted.includes(c.family));
  const where = requested.length > 0 ? 'the addresses the Service asks for' : `the cluster's external addresses (${candidates.map((c) => c.text).join(', ')})`;
  if (families !== null) {
    for (const fam of families) {
      if (!chosen.some((c) => c.family === fam)) reasons.push(`${EXTERNAL_IP_FAMILIES_ANNOTATION}: no ${KUBE_FAMILY[fam]} address among ${where}`);
    }
  } else if (chosen.length === 0) {
    reasons.push(`spec.ipFamilies (${(svc.spec?.ipFamilies ?? []).join(',')}): no address of the Service's families among ${where}; name the families to use with ${EXTERNAL_IP_FAMILIES_ANNOTATION}`);
  }
  if (reasons.length > 0) return { ok: false, reasons };
  return { ok: true, addresses: chosen.map((c) => c.text) };
}

/** The families of `spec.ipFamilies` lbaas knows; null (every family) when the Service lists none. */
function serviceFamilies(svc: KubeService): IpFamily[] | null {
  const listed = (svc.spec?.ipFamilies ?? []).flatMap((f) => (FAMILY_OF[f] ? [FAMILY_OF[f]] : []));
  return listed.length > 0 ? listed : null;
}

/** The Warning Event reason for Service fields lbaas accepts but does not enforce. */
export const NOT_ENFORCED_REASON = 'LoadBalancerOptionNotEnforced';

/**
 * Service fields the load balancer does not honour, each with what that means for traffic. The Service is still
 * applied: refusing it would take down a working load balancer over a field that was never enforced.
 */
export function unenforcedOptions(svc: KubeService): string[] {
  const out: string[] = [];
  const ranges = svc.spec?.loadBalancerSourceRanges ?? [];
  if (ranges.length > 0) {
    out.push(`spec.loadBalancerSourceRanges (${ranges.join(', ')}) is not enforced by lbaas: the load balancer accepts connections from every source; restrict them with a NetworkPolicy or a firewall`);
  }
  if (svc.spec?.externalTrafficPolicy === 'Local') {
    out.push(
      "spec.externalTrafficPolicy Local is not enforced by lbaas: the load balancer sends to every node and does not ask the Service's healthCheckNodePort, so a node without a ready endpoint drops connections until the TCP health check of its nodePort takes it out; use Cluster",
    );
  }
  return out;
}
