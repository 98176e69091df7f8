/**
 * kube/mapping.ts: a Service and the cluster's Nodes become the spec and pool members k8s-anexia-ccm's names imply,
 * and every Service or Node that cannot be mapped is reported with the reason, nothing half-mapped.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  CLEANUP_FINALIZER,
  ingressOf,
  intentOf,
  nodeAddress,
  nodeExclusion,
  nodeMembers,
  parseGoBool,
  nodePoolName,
  serviceSpec,
  type KubeSettings,
} from '../../kube/mapping';
import { upstreamPortReading } from '../../domain/import-names';
import { validateSpec } from '../../domain';
import type { KubeNode, KubeService } from '../../kube/objects';
import { APPLIED_ANNOTATION, APPLIED_CONDITION, appliedHash } from '../../kube/writes';

const settings: KubeSettings = { clusterName: 'prod', loadBalancers: ['lb-a', 'lb-b'], externalAddresses: ['203.0.113.10'], loadBalancerClass: null };

function service(ports: KubeService['spec'] extends infer S ? (S extends { ports?: infer P } ? P : never) : never, extra: Partial<KubeService['spec']> = {}): KubeService {
  return {
    metadata: { name: 'web', namespace: 'shop', uid: '0b5e3c1a-5d3f-4b8e-9e1d-2f0c6a7b8c9d' },
    spec: { type: 'LoadBalancer', ports, ...extra },
  };
}

function node(name: string, addresses: [string, string][], ready = true, labels?: Record<string, string>): KubeNode {
  return {
    metadata: { name, ...(labels ? { labels } : {}) },
    status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }], addresses: addresses.map(([type, address]) => ({ type, address })) },
  };
}

test('a Service maps to upstream names: uid, <service>.<namespace>.<cluster>, port -> external, nodePort -> internal, the node pool', () => {
  const r = serviceSpec(
    service([
      { name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 },
      { name: 'https', port: 443, nodePort: 30443 },
    ]),
    settings,
  );
  const doc = {
    serviceUid: '0b5e3c1a-5d3f-4b8e-9e1d-2f0c6a7b8c9d',
    nameSuffix: 'web.shop.prod',
    loadBalancers: ['lb-a', 'lb-b'],
    externalAddresses: ['203.0.113.10'],
    ports: { http: { external: 80, internal: 30080 }, https: { external: 443, internal: 30443 } },
    serverPool: 'k8s-prod',
  };
  // The document the apply carries, and its validated form, made by the one validation of lbaas kube's path.
  const checked = validateSpec(doc);
  assert.ok(checked.ok);
  assert.deepEqual(r, { ok: true, spec: doc, validated: checked.spec });
});

test("a Service's single unnamed port is the port \"\" (upstream allows it)", () => {
  const r = serviceSpec(service([{ port: 8080, nodePort: 31000, protocol: 'TCP' }]), settings);
  assert.equal(r.ok, true);
  assert.deepEqual(r.ok && r.spec.ports, { '': { external: 8080, internal: 31000 } });
});

test('duplicate port names, non-TCP ports and missing nodePorts are each reported, and no spec is made', () => {
  const r = serviceSpec(
    service([
      { name: 'dns', protocol: 'UDP', port: 53, nodePort: 30053 },
      { name: 'web', port: 80, nodePort: 30080 },
      { name: 'web', port: 81, nodePort: 30081 },
      { name: 'late', port: 82 },
    ]),
    settings,
  );
  assert.deepEqual(r, {
    ok: false,
    reasons: [
      'port "dns" (53): protocol UDP is not supported, only TCP',
      'port "web" (81): port name "web" is not unique',
      'port "late" (82): has no nodePort (spec.allocateLoadBalancerNodePorts is false?)',
    ],
  });
});

test('what validateSpec refuses is reported with its field path (a bad load balancer id from the settings)', () => {
  const r = serviceSpec(service([{ name: 'http', port: 80, nodePort: 30080 }]), { ...settings, loadBalancers: [] });
  assert.equal(r.ok, false);
  assert.match(!r.ok ? (r.reasons[0] ?? '') : '', /^loadBalancers: /);
});

test('intent: our class ensures; ClusterIP and foreign classes are ignored; our finalizer without our type or class tears down', () => {
  const lb = service([]);
  assert.equal(intentOf(lb, settings), 'ensure');
  assert.equal(intentOf({ ...lb, spec: { type: 'ClusterIP' } }, settings), 'ignore');
  assert.equal(intentOf({ ...lb, spec: { type: 'LoadBalancer', loadBalancerClass: 'other.example/lb' } }, settings), 'ignore');
  assert.equal(intentOf({ ...lb, spec: { type: 'LoadBalancer', loadBalancerClass: 'lbaas.anx.io/x' } }, { loadBalancerClass: 'lbaas.anx.io/x' }), 'ensure');
  assert.equal(intentOf(lb, { loadBalancerClass: 'lbaas.anx.io/x' }), 'ignore', 'with a class configured, class-less Services are not ours');
  const finalized = { ...lb, metadata: { ...lb.metadata, finalizers: [CLEANUP_FINALIZER] } };
  assert.equal(intentOf({ ...finalized, spec: { type: 'ClusterIP' } }, settings), 'teardown');
  assert.equal(intentOf({ ...finalized, metadata: { ...finalized.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }, settings), 'teardown');
  assert.equal(intentOf({ ...lb, metadata: { ...lb.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }, settings), 'ignore');
});

test("node address: ExternalIP before InternalIP, the last of a type as upstream's loop leaves it, unspecified skipped", () => {
  assert.equal(nodeAddress(node('n', [['InternalIP', '10.0.0.1'], ['ExternalIP', '192.0.2.1'], ['Hostname', 'n']])), '192.0.2.1');
  assert.equal(nodeAddress(node('n', [['InternalIP', '10.0.0.1'], ['InternalIP', '10.0.0.2']])), '10.0.0.2');
  assert.equal(nodeAddress(node('n', [['InternalIP', '10.0.0.1'], ['ExternalIP', '0.0.0.0']])), '10.0.0.1');
  assert.equal(nodeAddress(node('n', [['Hostname', 'n']])), null);
});

test('pool members: every node the 1.30+ service controller keeps, Ready or not, sorted by name; a Ready one without address is reported, one not Ready yet left out', () => {
  const m = nodeMembers([
    node('node-b', [['InternalIP', '10.0.0.2']]),
    node('node-a', [['ExternalIP', '192.0.2.1']]),
    node('node-down', [['InternalIP', '10.0.0.3']], false),
    node('node-excluded', [['InternalIP', '10.0.0.4']], true, { 'node.kubernetes.io/exclude-from-external-load-balancers': '' }),
    node('node-bare', [['Hostname', 'node-bare']]),
    node('node-registering', [], false),
  ]);
  assert.deepEqual(m, {
    servers: [
      { name: 'node-a', address: '192.0.2.1' },
      { name: 'node-b', address: '10.0.0.2' },
      { name: 'node-down', address: '10.0.0.3' },
    ],
    unusable: ['node node-bare lacks a usable address (no ExternalIP or InternalIP)'],
  });
  assert.equal(nodePoolName('prod'), 'k8s-prod');
});

test("node exclusion: being deleted, the exclusion label unless Go's ParseBool reads it as false, the autoscaler's taint; NotReady is no reason", () => {
  const labelled = (v: string) => nodeExclusion(node('n', [], true, { 'node.kubernetes.io/exclude-from-external-load-balancers': v }));
  for (const v of ['0', 'f', 'F', 'FALSE', 'false', 'False']) assert.equal(labelled(v), null, `label ${JSON.stringify(v)} keeps the node`);
  for (const v of ['1', 't', 'T', 'TRUE', 'true', 'True', '', 'yes', 'no', 'fAlse', ' false']) {
    assert.equal(labelled(v), `labelled node.kubernetes.io/exclude-from-external-load-balancers=${JSON.stringify(v)}`, `label ${JSON.stringify(v)} excludes the node`);
  }
  assert.equal(parseGoBool('no'), null);
  assert.equal(nodeExclusion(node('n', [], false)), null);
  const deleting = node('n', []);
  deleting.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
  assert.equal(nodeExclusion(deleting), 'being deleted');
  const tainted: KubeNode = { ...node('n', []), spec: { taints: [{ key: 'ToBeDeletedByClusterAutoscaler', value: '1700000000', effect: 'NoSchedule' }] } };
  assert.equal(nodeExclusion(tainted), 'tainted ToBeDeletedByClusterAutoscaler by the cluster autoscaler');
  const otherTaint: KubeNode = { ...node('n', []), spec: { taints: [{ key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' }] } };
  assert.equal(nodeExclusion(otherTaint), null, 'other taints (unreachable, not-ready) keep the node');
});

test('ingress: one entry per address with every port; the hostname annotation gives one hostname entry instead', () => {
  const status = { '203.0.113.10': [80, 443], '2001:db8::10': [443, 80] };
  assert.deepEqual(ingressOf(status, service([])), [
    { ip: '2001:db8::10', ports: [{ port: 80, protocol: 'TCP' }, { port: 443, protocol: 'TCP' }] },
    { ip: '203.0.113.10', ports: [{ port: 80, protocol: 'TCP' }, { port: 443, protocol: 'TCP' }] },
  ]);
  const svc = service([]);
  svc.metadata.annotations = { 'lbaas.anx.io/load-balancer-proxy-pass-hostname': 'Web.Example.com' };
  assert.deepEqual(ingressOf(status, svc), [{ hostname: 'web.example.com', ports: [{ port: 80, protocol: 'TCP' }, { port: 443, protocol: 'TCP' }] }]);
});

test("import's upstream reading: one port by <service>.<namespace>.<cluster>; several ports and the unnamed port unchanged", () => {
  const p = { external: 80, internal: 30080 };
  assert.deepEqual(upstreamPortReading({ web: p }, 'default.prod', 'prod'), { ok: true, ports: { '': p }, nameSuffix: 'web.default.prod', changed: true });
  assert.deepEqual(upstreamPortReading({ http: p }, 'web.default.prod', 'prod'), { ok: true, ports: { http: p }, nameSuffix: 'web.default.prod', changed: false });
  assert.deepEqual(upstreamPortReading({ '': p }, 'web.default.prod', 'prod'), { ok: true, ports: { '': p }, nameSuffix: 'web.default.prod', changed: false });
  assert.deepEqual(upstreamPortReading({ a: p, b: p }, 'x.prod', 'prod'), { ok: true, ports: { a: p, b: p }, nameSuffix: 'x.prod', changed: false });
  assert.deepEqual(upstreamPortReading({ web: p }, 'default.prod', 'stage'), { ok: false, message: 'neither nameSuffix "default.prod" nor "web.default.prod" is <service>.<namespace>.stage' });
  // A cluster name with dots is matched as a whole.
  assert.deepEqual(upstreamPortReading({ web: p }, 'default.k8s.example', 'k8s.example'), { ok: true, ports: { '': p }, nameSuffix: 'web.default.k8s.example', changed: true });
});

test('the spec hash recorded on a Service: its SpecConverged condition when True, else (no condition) the annotation of an earlier release', () => {
  const hash = 'sha256:0123456789abcdef0123456789abcdef';
  const older = 'sha256:ffffffffffffffffffffffffffffffff';
  const svc = service([]);
  assert.equal(appliedHash(svc), undefined);
  svc.metadata.annotations = { [APPLIED_ANNOTATION]: older };
  assert.equal(appliedHash(svc), older);
  svc.status = { conditions: [{ type: 'Other', status: 'True', message: `spec ${hash} converged` }] };
  assert.equal(appliedHash(svc), older);
  svc.status.conditions?.push({ type: APPLIED_CONDITION, status: 'True', reason: 'Converged', message: `spec ${hash} converged` });
  assert.equal(appliedHash(svc), hash);
  svc.status = { conditions: [{ type: APPLIED_CONDITION, status: 'False', message: `spec ${hash} converged` }] };
  assert.equal(appliedHash(svc), undefined);
  svc.status = { conditions: [{ type: APPLIED_CONDITION, status: 'True', message: 'something else' }] };
  assert.equal(appliedHash(svc), undefined);
});
