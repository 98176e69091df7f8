/**
 * kube/service-options.ts: which external addresses a Service gets Binds on (upstream's families annotation, the
 * addresses a Service asks for), every bad value a reason naming its field, and the unenforced fields said.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { externalAddressesOf, unenforcedOptions, vipRequestOf, type ClusterAddresses } from '../../kube/service-options';
import { vipPrefixes } from '../../kube/vip';
import type { KubeService } from '../../kube/objects';

const dual: ClusterAddresses = { externalAddresses: ['203.0.113.10', '2001:db8::10'], externalPrefixes: ['198.51.100.0/28', '2001:db8:7::/64'] };

function svc(annotations: Record<string, string> = {}, spec: Partial<NonNullable<KubeService['spec']>> = {}): KubeService {
  return { metadata: { name: 'web', namespace: 'shop', uid: 'u1', annotations }, spec: { type: 'LoadBalancer', ...spec } };
}

test("without options a Service gets the cluster's addresses of its own spec.ipFamilies, every address when it lists none", () => {
  assert.deepEqual(externalAddressesOf(svc({}, { ipFamilies: ['IPv4'] }), dual), { ok: true, addresses: ['203.0.113.10'] });
  assert.deepEqual(externalAddressesOf(svc({}, { ipFamilies: ['IPv6'] }), dual), { ok: true, addresses: ['2001:db8::10'] });
  assert.deepEqual(externalAddressesOf(svc({}, { ipFamilies: ['IPv4', 'IPv6'] }), dual), { ok: true, addresses: ['203.0.113.10', '2001:db8::10'] });
  assert.deepEqual(externalAddressesOf(svc(), dual), { ok: true, addresses: ['203.0.113.10', '2001:db8::10'] });
  assert.deepEqual(externalAddressesOf(svc({}, { ipFamilies: ['IPv4'] }), { externalAddresses: [] }), { ok: true, addresses: [] }, 'a cluster without addresses: none, no error');
  assert.deepEqual(externalAddressesOf(svc({}, { ipFamilies: ['IPv6'] }), { externalAddresses: ['203.0.113.10'] }), {
    ok: false,
    reasons: ["spec.ipFamilies (IPv6): no address of the Service's families among the cluster's external addresses (203.0.113.10); name the families to use with lbaas.anx.io/external-ip-families"],
  });
});

test('lbaas.anx.io/external-ip-families: upstream syntax (IPv4, IPv6, comma-separated, exact case), overriding spec.ipFamilies', () => {
  const fam = (v: string) => externalAddressesOf(svc({ 'lbaas.anx.io/external-ip-families': v }, { ipFamilies: ['IPv4'] }), dual);
  assert.deepEqual(fam('IPv6'), { ok: true, addresses: ['2001:db8::10'] });
  assert.deepEqual(fam('IPv4,IPv6'), { ok: true, addresses: ['203.0.113.10', '2001:db8::10'] });
  assert.deepEqual(fam('IPv6,IPv4'), { ok: true, addresses: ['203.0.113.10', '2001:db8::10'] }, "in the cluster's order");
  assert.deepEqual(fam('ipv6'), { ok: false, reasons: ['lbaas.anx.io/external-ip-families: "ipv6" is not an IP family (IPv4 or IPv6, comma-separated)'] });
  assert.deepEqual(fam('IPv4, IPv6'), { ok: false, reasons: ['lbaas.anx.io/external-ip-families: " IPv6" is not an IP family (IPv4 or IPv6, comma-separated)'] });
  assert.deepEqual(fam(''), { ok: false, reasons: ['lbaas.anx.io/external-ip-families: "" is not an IP family (IPv4 or IPv6, comma-separated)'] });
  assert.deepEqual(externalAddressesOf(svc({ 'lbaas.anx.io/external-ip-families': 'IPv6' }), { externalAddresses: ['203.0.113.10'] }), {
    ok: false,
    reasons: ["lbaas.anx.io/external-ip-families: no IPv6 address among the cluster's external addresses (203.0.113.10)"],
  });
});

test("spec.loadBalancerIP and lbaas.anx.io/load-balancer-ips choose the Service's addresses among the cluster's addresses and prefixes", () => {
  assert.deepEqual(externalAddressesOf(svc({}, { loadBalancerIP: '203.0.113.10', ipFamilies: ['IPv4'] }), dual), { ok: true, addresses: ['203.0.113.10'] });
  assert.deepEqual(externalAddressesOf(svc({ 'lbaas.anx.io/load-balancer-ips': ' 2001:DB8:0::10 , 198.51.100.5' }, { ipFamilies: ['IPv4'] }), dual), {
    ok: true,
    addresses: ['2001:db8::10', '198.51.100.5'],
  }, 'canonical, in the order given, inside a discovered prefix allowed; the families of the addresses asked for, not spec.ipFamilies');
  assert.deepEqual(externalAddressesOf(svc({ 'lbaas.anx.io/load-balancer-ips': '203.0.113.10' }, { loadBalancerIP: '203.0.113.10' }), dual), { ok: true, addresses: ['203.0.113.10'] });
  assert.deepEqual(externalAddressesOf(svc({ 'lbaas.anx.io/load-balancer-ips': '192.0.2.99,not-an-ip' }), dual), {
    ok: false,
    reasons: [
      'lbaas.anx.io/load-balancer-ips: "not-an-ip" is not an IP address',
      "lbaas.anx.io/load-balancer-ips: 192.0.2.99 is not one of the cluster's external addresses or prefixes (203.0.113.10, 2001:db8::10, 198.51.100.0/28, 2001:db8:7::/64)",
    ],
  });
  assert.deepEqual(externalAddressesOf(svc({ 'lbaas.anx.io/load-balancer-ips': ' , ' }), dual), { ok: false, reasons: ['lbaas.anx.io/load-balancer-ips: lists no address'] });
  assert.deepEqual(externalAddressesOf(svc({}, { loadBalancerIP: '198.51.100.16' }), dual), {
    ok: false,
    reasons: ["spec.loadBalancerIP: 198.51.100.16 is not one of the cluster's external addresses or prefixes (203.0.113.10, 2001:db8::10, 198.51.100.0/28, 2001:db8:7::/64)"],
  });
  assert.deepEqual(externalAddressesOf(svc({ 'lbaas.anx.io/load-balancer-ips': '2001:db8::10', 'lbaas.anx.io/external-ip-families': 'IPv4' }), dual), {
    ok: false,
    reasons: ['lbaas.anx.io/load-balancer-ips: 2001:db8::10 is IPv6, which lbaas.anx.io/external-ip-families (IPv4) leaves out'],
  });
});

test('unenforced fields: loadBalancerSourceRanges and externalTrafficPolicy Local are each said; Cluster and no ranges say nothing', () => {
  assert.deepEqual(unenforcedOptions(svc({}, { externalTrafficPolicy: 'Cluster', loadBalancerSourceRanges: [] })), []);
  const notes = unenforcedOptions(svc({}, { externalTrafficPolicy: 'Local', loadBalancerSourceRanges: ['10.0.0.0/8', '192.0.2.0/24'] }));
  assert.equal(notes.length, 2);
  assert.match(notes[0] ?? '', /^spec\.loadBalancerSourceRanges \(10\.0\.0\.0\/8, 192\.0\.2\.0\/24\) is not enforced by lbaas: /);
  assert.match(notes[1] ?? '', /^spec\.externalTrafficPolicy Local is not enforced by lbaas: /);
});

test('lbaas.anx.io/vip: allocate asks for one address per family (the families annotation, else spec.ipFamilies, else IPv4) and gets only its allocated VIPs', () => {
  const vip = { 'lbaas.anx.io/vip': 'allocate' };
  assert.deepEqual(vipRequestOf(svc()), { kind: 'none' });
  assert.deepEqual(vipRequestOf(svc(vip)), { kind: 'allocate', families: ['v4'] });
  assert.deepEqual(vipRequestOf(svc(vip, { ipFamilies: ['IPv6', 'IPv4'] })), { kind: 'allocate', families: ['v6', 'v4'] });
  assert.deepEqual(vipRequestOf(svc({ ...vip, 'lbaas.anx.io/external-ip-families': 'IPv6' }, { ipFamilies: ['IPv4'] })), { kind: 'allocate', families: ['v6'] });
  assert.deepEqual(externalAddressesOf(svc(vip), dual, ['198.51.100.3']), { ok: true, addresses: ['198.51.100.3'] }, "the VIP, not the cluster's addresses");
  assert.deepEqual(externalAddressesOf(svc(vip), dual), { ok: true, addresses: [] }, 'before it is allocated: none, so the rest of the Service is checked first');
});

test('a bad lbaas.anx.io/vip value, or allocate with an address asked for by name, is a reason naming the annotation', () => {
  for (const value of ['yes', 'Allocate', '', 'allocate ']) {
    assert.deepEqual(externalAddressesOf(svc({ 'lbaas.anx.io/vip': value }), dual), {
      ok: false,
      reasons: [`lbaas.anx.io/vip: ${JSON.stringify(value)} is not a valid value (the one value is "allocate"; leave the annotation out for the cluster's addresses)`],
    });
  }
  assert.deepEqual(vipRequestOf(svc({ 'lbaas.anx.io/vip': 'allocate', 'lbaas.anx.io/load-balancer-ips': '203.0.113.10' })), {
    kind: 'invalid',
    reasons: ['lbaas.anx.io/vip: allocate cannot be combined with lbaas.anx.io/load-balancer-ips (203.0.113.10): the Service gets the address allocated for it'],
  });
  assert.deepEqual(vipRequestOf(svc({ 'lbaas.anx.io/vip': 'allocate', 'lbaas.anx.io/external-ip-families': 'IPv7' })), {
    kind: 'invalid',
    reasons: ['lbaas.anx.io/external-ip-families: "IPv7" is not an IP family (IPv4 or IPv6, comma-separated)'],
  });
});

test("vipPrefixes takes the first discovered prefix of each family, and names what is missing", () => {
  const found = {
    clusterName: 'prod',
    loadBalancerTag: 'anxkube-ccm-lb-prod',
    loadBalancers: [],
    externalAddresses: [],
    skipped: [],
    prefixes: [
      { identifier: 'p4a', cidr: '198.51.100.0/28', family: 4 as const, vip: '198.51.100.14', vipSource: 'calculated' as const },
      { identifier: 'p4b', cidr: '198.51.100.16/28', family: 4 as const, vip: '198.51.100.30', vipSource: 'calculated' as const },
    ],
  };
  assert.deepEqual(vipPrefixes(['v4'], found, 'prod'), { ok: true, prefixes: [{ identifier: 'p4a', cidr: '198.51.100.0/28', family: 4 }] });
  assert.deepEqual(vipPrefixes(['v4', 'v6'], found, 'prod'), { ok: false, reason: 'lbaas.anx.io/vip: cannot allocate an IPv6 address: no IPv6 prefix is tagged kubernetes-lb-prefix-prod' });
  assert.deepEqual(vipPrefixes(['v4'], null, 'prod'), { ok: false, reason: 'lbaas.anx.io/vip: cannot allocate an IPv4 address: discovery is off (--auto-discover-load-balancer false)' });
});
