import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ClusterDiscovery } from '../../contract';
import { describeDiscovery, effectiveSettings } from '../../kube/discovery';
import type { KubeSettings } from '../../kube/mapping';

const flags: KubeSettings = { clusterName: 'prod', loadBalancers: ['lb-flag'], externalAddresses: ['203.0.113.10'], loadBalancerClass: null };
const found = (o: Partial<ClusterDiscovery> = {}): ClusterDiscovery => ({
  clusterName: 'prod',
  loadBalancerTag: 'anxkube-ccm-lb-prod',
  loadBalancers: ['lb-tagged'],
  externalAddresses: ['198.51.100.14'],
  prefixes: [{ identifier: 'p1', cidr: '198.51.100.0/28', family: 4, vip: '198.51.100.14', vipSource: 'calculated' }],
  skipped: [],
  ...o,
});

test('effectiveSettings: the flags first, then what discovery found that they do not name; the flags alone before any discovery', () => {
  assert.deepEqual(effectiveSettings(flags, null), flags);
  const both = effectiveSettings(flags, found({ loadBalancers: ['lb-tagged', 'lb-flag'], externalAddresses: ['203.0.113.10', '198.51.100.14'] }));
  assert.deepEqual([both.loadBalancers, both.externalAddresses], [['lb-flag', 'lb-tagged'], ['203.0.113.10', '198.51.100.14']]);
  assert.deepEqual(both.externalPrefixes, ['198.51.100.0/28'], "the discovered prefixes, inside which a Service may ask for an address");
  const none = effectiveSettings({ ...flags, loadBalancers: [], externalAddresses: [] }, found({ loadBalancers: [], externalAddresses: [], prefixes: [] }));
  assert.deepEqual([none.loadBalancers, none.externalAddresses], [[], []]);
});

test('describeDiscovery: says what was found, with each VIP\'s source and what was skipped; null when load balancers, addresses and prefixes did not change', () => {
  assert.equal(
    describeDiscovery(null, found({ skipped: [{ identifier: 'x1', tag: 'anxkube-ccm-lb-prod', reason: 'not a load balancer (404)' }] })),
    'discovered load balancers lb-tagged (tag anxkube-ccm-lb-prod); external addresses 198.51.100.14 from prefix VIPs 198.51.100.14 (calculated in 198.51.100.0/28); skipped x1 tagged anxkube-ccm-lb-prod: not a load balancer (404)',
  );
  assert.equal(describeDiscovery(found(), found({ skipped: [{ identifier: 'x2', tag: 't', reason: 'r' }] })), null);
  assert.equal(describeDiscovery(found(), found({ loadBalancers: [], externalAddresses: [], prefixes: [] })), 'discovered load balancers none (tag anxkube-ccm-lb-prod); external addresses none');
  // A prefix added with a tagged VIP already known (the same addresses) still changes what a Service may ask for.
  const more = found({ prefixes: [...found().prefixes, { identifier: 'p2', cidr: '198.51.100.16/28', family: 4, vip: '198.51.100.14', vipSource: 'tagged' }] });
  assert.notEqual(describeDiscovery(found(), more), null);
});
