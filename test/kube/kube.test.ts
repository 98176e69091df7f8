/**
 * `lbaas kube` on a real Kubernetes API server (etcd + kube-apiserver, token auth), the real CLI process, the real
 * Temporal dev server, worker and Engine simulator: the proofs of docs/kubernetes.md. The tests share one control plane
 * and run in order; each names the state it starts from.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { V1Service } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { k8s, loadTarget, mergePatch } from '../../kube/client';
import { LeaderElector } from '../../kube/lease';
import { writeRequests } from '../helpers/engine-state';
import { LbaasClient } from '../../client/service-client';
import { CLUSTER, EXTERNAL, LBAAS_BIN, kubeEvents, lbService, putNode, startSuite, until, type KubeProcess, type Suite } from './harness';
import { drawPort } from '../../common/ports';
import { startWorker, type RunningWorker } from '../../worker/start';
import { workflowBundle } from '../helpers/stack';

let s: Suite;
let kube: KubeProcess;

/** The Event lines of a Service once `last` is among them: Events are recorded after the write they report. */
async function eventsWith(name: string, last: string): Promise<string[]> {
  return until(async () => {
    const lines = (await kubeEvents(s.core, name)).map((e) => e.line);
    return lines.includes(last) ? lines : null;
  }, `the ${last} event of ${name}`, 15_000);
}

const tag = (uid: string) => `anxccm-svc-uid=${uid}`;

/** The simulator's objects tagged for a service, as sorted "kind name" lines (servers with their IP). */
function objectsOf(uid: string): string[] {
  return s.stack.sim
    .objects()
    .filter((o) => o.tags.includes(tag(uid)))
    .map((o) => `${o.kind} ${o.name}${o.kind === 'server' ? ` ${o.fields.ip}` : ''}`)
    .sort();
}

async function readService(name: string): Promise<V1Service | null> {
  try {
    return await s.core.readNamespacedService({ name, namespace: 'default' });
  } catch (err) {
    if ((err as { code?: number }).code === 404) return null;
    throw err;
  }
}

const ingressOf = async (name: string) => {
  const svc = await readService(name);
  return (svc?.status?.loadBalancer?.ingress?.length ?? 0) > 0 ? svc : null;
};

before(async () => {
  s = await startSuite();
  await putNode(s.core, 'node-1', [['InternalIP', '10.0.0.11']]);
  await putNode(s.core, 'node-2', [['InternalIP', '10.0.0.12'], ['ExternalIP', '192.0.2.12']]);
  kube = s.kube();
  await kube.saw('became the leader');
});

after(async () => {
  await s?.close();
});

const sfx = `default.${CLUSTER}`;
const webLines = [
  `backend http.web.${sfx}`,
  `backend https.web.${sfx}`,
  `bind v4.http.web.${sfx}`,
  `bind v4.https.web.${sfx}`,
  `frontend http.web.${sfx}`,
  `frontend https.web.${sfx}`,
  `server node-1.http.web.${sfx} 10.0.0.11`,
  `server node-1.https.web.${sfx} 10.0.0.11`,
  `server node-2.http.web.${sfx} 192.0.2.12`,
  `server node-2.https.web.${sfx} 192.0.2.12`,
];

test("a LoadBalancer Service converges with the upstream's names, tags and ports, gets its finalizer, ingress and Events", async () => {
  const created = await s.core.createNamespacedService({
    namespace: 'default',
    body: lbService('web', [
      { name: 'http', port: 80 },
      { name: 'https', port: 443 },
    ]),
  });
  const uid = created.metadata?.uid as string;
  const svc = await until(() => ingressOf('web'), 'the ingress of web');
  assert.deepEqual(svc.metadata?.finalizers, ['service.kubernetes.io/load-balancer-cleanup']);
  // The API server fills in ipMode (VIP) itself.
  assert.deepEqual(JSON.parse(JSON.stringify(svc.status?.loadBalancer?.ingress)), [
    { ip: EXTERNAL, ipMode: 'VIP', ports: [{ port: 80, protocol: 'TCP' }, { port: 443, protocol: 'TCP' }] },
  ]);
  assert.deepEqual(objectsOf(uid), webLines);
  // The ports are the Service's: external = port, internal = nodePort (allocated by the API server).
  const nodePorts = Object.fromEntries((svc.spec?.ports ?? []).map((p) => [p.name, p.nodePort]));
  const backendServers = s.stack.sim.objects().filter((o) => o.kind === 'server' && o.tags.includes(tag(uid)));
  for (const o of backendServers) assert.equal(o.fields.port, nodePorts[o.name.split('.')[1] as string], `${o.name} listens on the nodePort`);
  const frontends = s.stack.sim.objects().filter((o) => o.kind === 'bind' && o.tags.includes(tag(uid)));
  assert.deepEqual(frontends.map((o) => [o.name, o.fields.address, o.fields.port]).sort(), [
    [`v4.http.web.${sfx}`, EXTERNAL, 80],
    [`v4.https.web.${sfx}`, EXTERNAL, 443],
  ]);
  // The Ensured event is recorded after the ingress is written: wait for it rather than read once.
  assert.deepEqual(await eventsWith('web', 'Normal EnsuredLoadBalancer'), ['Normal EnsuringLoadBalancer', 'Normal EnsuredLoadBalancer']);
});

test("a node joins, changes its address and leaves: each writes exactly that node's Servers, once per port", async () => {
  const uid = (await readService('web'))?.metadata?.uid as string;
  s.stack.sim.resetStats();
  await putNode(s.core, 'node-3', [['InternalIP', '10.0.0.13']]);
  await until(() => objectsOf(uid).filter((l) => l.startsWith('server node-3.')).length === 2, 'the Servers of node-3');
  await until(() => s.stack.sim.objects().every((o) => o.state === 'Deployed'), 'every object deployed');
  const joined = writeRequests(s.stack.sim.stats());
  assert.deepEqual(Object.keys(joined).filter((r) => !/server|tag|Tag/.test(r)), [], `only Server (and their tag) writes: ${JSON.stringify(joined)}`);
  assert.equal(Object.entries(joined).filter(([r]) => /^POST .*server/.test(r)).reduce((n, [, c]) => n + c, 0), 2, JSON.stringify(joined));
  assert.deepEqual(objectsOf(uid), [...webLines, `server node-3.http.web.${sfx} 10.0.0.13`, `server node-3.https.web.${sfx} 10.0.0.13`].sort());

  // An address change replaces that node's Servers and touches nothing else.
  const untouched = () =>
    s.stack.sim
      .objects()
      .filter((o) => !o.name.startsWith('node-3.'))
      .map((o) => `${o.identifier} ${o.name} ${JSON.stringify(o.fields)}`)
      .sort();
  const before = untouched();
  s.stack.sim.resetStats();
  await putNode(s.core, 'node-3', [['InternalIP', '10.0.0.23']]);
  await until(() => objectsOf(uid).filter((l) => l.startsWith('server node-3.') && l.endsWith(' 10.0.0.23')).length === 2, 'the Servers of node-3 at its new address');
  await until(() => s.stack.sim.objects().every((o) => o.state === 'Deployed'), 'every object deployed');
  const moved = writeRequests(s.stack.sim.stats());
  assert.deepEqual(untouched(), before, 'every other object unchanged, identifiers and fields');
  assert.deepEqual(Object.keys(moved).filter((r) => !/server|tag|Tag/.test(r)), [], `only Server (and their tag) writes: ${JSON.stringify(moved)}`);
  assert.deepEqual(objectsOf(uid), [...webLines, `server node-3.http.web.${sfx} 10.0.0.23`, `server node-3.https.web.${sfx} 10.0.0.23`].sort());

  // Leaving is being deleted (NotReady is no longer leaving: see the flap below).
  s.stack.sim.resetStats();
  await s.core.deleteNode({ name: 'node-3' });
  await until(() => objectsOf(uid).every((l) => !l.startsWith('server node-3.')), 'the Servers of node-3 to go');
  const left = writeRequests(s.stack.sim.stats());
  assert.deepEqual(
    Object.entries(left).map(([r, n]) => `${r.split(' ')[0]} ${n}`),
    ['DELETE 2'],
    `two Server deletes and nothing else: ${JSON.stringify(left)}`,
  );
  assert.deepEqual(objectsOf(uid), webLines);
});

const EXCLUDE = 'node.kubernetes.io/exclude-from-external-load-balancers';
const poolRevision = async () => (await new LbaasClient(s.stack.client, s.stack.taskQueue).pools.status(`k8s-${CLUSTER}`)).revision;
const patchNode = async (name: string, body: Record<string, unknown>) => s.core.patchNode({ name, body }, mergePatch(await k8s()));

test('a node flapping NotReady and back, and an unrelated label, change no member: no pool revision, no Engine write', async () => {
  const revision = await poolRevision();
  const from = kube.output().length;
  s.stack.sim.resetStats();
  await putNode(s.core, 'node-1', [['InternalIP', '10.0.0.11']], false);
  await patchNode('node-1', { metadata: { labels: { 'example.com/rack': 'r1' } } });
  await putNode(s.core, 'node-1', [['InternalIP', '10.0.0.11']], true);
  // A node event after the flap that lbaas kube logs: the flap's events were synced before it.
  await s.core.createNode({ body: { metadata: { name: 'node-flap-sentinel', labels: { [EXCLUDE]: 'true' } } } });
  await kube.saw(/not members: node-flap-sentinel \(labelled/);
  assert.equal(await poolRevision(), revision, 'the pool revision did not move');
  assert.deepEqual(writeRequests(s.stack.sim.stats()), {});
  assert.doesNotMatch(kube.output().slice(from), /node pool k8s-testcl: revision/);
  await s.core.deleteNode({ name: 'node-flap-sentinel' });
});

test("the node set of Kubernetes 1.30+: the exclusion label as Go's ParseBool reads it, the autoscaler's taint and a deletion each take a node out", async () => {
  const uid = (await readService('web'))?.metadata?.uid as string;
  const servers4 = () => objectsOf(uid).filter((l) => l.startsWith('server node-4.')).length;
  // Labelled "false": a member. The finalizer holds the Node after its delete, so its deletionTimestamp is seen.
  await s.core.createNode({ body: { metadata: { name: 'node-4', labels: { [EXCLUDE]: 'false' }, finalizers: ['example.com/hold'] } } });
  await putNode(s.core, 'node-4', [['InternalIP', '10.0.0.14']]);
  await until(() => servers4() === 2, 'the Servers of node-4 (labelled false)');
  await patchNode('node-4', { metadata: { labels: { [EXCLUDE]: 'yes' } } });
  await until(() => servers4() === 0, 'the Servers of node-4 to go (labelled yes: not a bool, so excluded)');
  await patchNode('node-4', { metadata: { labels: { [EXCLUDE]: null } }, spec: { taints: [{ key: 'ToBeDeletedByClusterAutoscaler', value: '1700000000', effect: 'NoSchedule' }] } });
  await kube.saw(/not members: node-4 \(tainted ToBeDeletedByClusterAutoscaler by the cluster autoscaler\)/);
  assert.equal(servers4(), 0);
  await patchNode('node-4', { spec: { taints: null } });
  await until(() => servers4() === 2, 'the Servers of node-4 once untainted');
  s.stack.sim.resetStats();
  await s.core.deleteNode({ name: 'node-4' });
  await until(() => servers4() === 0, 'the Servers of node-4 to go (being deleted)');
  assert.match(kube.output(), /not members: node-4 \(being deleted\)/);
  const writes = writeRequests(s.stack.sim.stats());
  assert.deepEqual(Object.entries(writes).map(([r, n]) => `${r.split(' ')[0]} ${n}`), ['DELETE 2'], JSON.stringify(writes));
  await patchNode('node-4', { metadata: { finalizers: null } });
  assert.deepEqual(objectsOf(uid), webLines);
});

test('ClusterIP and foreign-class Services are left alone; a UDP port is a Warning event and nothing is written', async () => {
  await s.core.createNamespacedService({ namespace: 'default', body: { metadata: { name: 'internal' }, spec: { type: 'ClusterIP', ports: [{ port: 80 }] } } });
  await s.core.createNamespacedService({ namespace: 'default', body: lbService('foreign', [{ name: 'http', port: 80 }], { loadBalancerClass: 'example.com/other' }) });
  s.stack.sim.resetStats();
  await s.core.createNamespacedService({ namespace: 'default', body: lbService('dns', [{ name: 'dns', port: 53, protocol: 'UDP' }]) });
  const warning = await until(async () => (await kubeEvents(s.core, 'dns')).find((e) => e.type === 'Warning'), 'a Warning on dns');
  assert.equal(warning.reason, 'SyncLoadBalancerFailed');
  assert.equal(warning.message, 'Error syncing load balancer: port "dns" (53): protocol UDP is not supported, only TCP');
  // The API server itself refuses two ports of one name, so that case never reaches lbaas kube.
  await assert.rejects(s.core.createNamespacedService({ namespace: 'default', body: lbService('dup', [{ name: 'a', port: 80 }, { name: 'a', port: 81 }]) }), /Duplicate value/);
  // A sentinel created after them converges: everything before it has been seen.
  await s.core.createNamespacedService({ namespace: 'default', body: lbService('sentinel', [{ name: 'http', port: 8080 }]) });
  await until(() => ingressOf('sentinel'), 'the ingress of sentinel');
  for (const name of ['internal', 'foreign', 'dns']) {
    const svc = (await readService(name)) as V1Service;
    assert.equal(svc.metadata?.finalizers, undefined, `${name} has no finalizer`);
    assert.equal(svc.status?.loadBalancer?.ingress, undefined, `${name} has no ingress`);
    assert.deepEqual(objectsOf(svc.metadata?.uid as string), [], `nothing on the Engine for ${name}`);
  }
  assert.deepEqual((await kubeEvents(s.core, 'internal')).length + (await kubeEvents(s.core, 'foreign')).length, 0);
  assert.deepEqual(
    (await kubeEvents(s.core, 'dns')).map((e) => e.line),
    ['Warning SyncLoadBalancerFailed'],
  );
});

test('per-Service options: the addresses a Service asks for; unenforced fields said once, and again when they change', async () => {
  const created = await s.core.createNamespacedService({
    namespace: 'default',
    body: {
      ...lbService('opts', [{ name: 'http', port: 8090 }], { loadBalancerSourceRanges: ['10.0.0.0/8'], externalTrafficPolicy: 'Local' }),
      metadata: { name: 'opts', namespace: 'default', annotations: { 'lbaas.anx.io/load-balancer-ips': EXTERNAL, 'lbaas.anx.io/external-ip-families': 'IPv4' } },
    },
  });
  const uid = created.metadata?.uid as string;
  const svc = await until(() => ingressOf('opts'), 'the ingress of opts');
  assert.deepEqual(svc.status?.loadBalancer?.ingress?.map((i) => i.ip), [EXTERNAL]);
  assert.deepEqual(objectsOf(uid).filter((l) => l.startsWith('bind ')), [`bind v4.http.opts.${sfx}`]);
  // Three syncs ran before Ensured (the apply, the update event of its finalizer, the report): the fields were said
  // in the first only.
  const lines = await eventsWith('opts', 'Normal EnsuredLoadBalancer');
  assert.deepEqual(lines, ['Warning LoadBalancerOptionNotEnforced', 'Normal EnsuringLoadBalancer', 'Normal EnsuredLoadBalancer']);
  const said = (await kubeEvents(s.core, 'opts')).find((e) => e.type === 'Warning');
  assert.match(said?.message ?? '', /^spec\.loadBalancerSourceRanges \(10\.0\.0\.0\/8\) is not enforced by lbaas: .*; spec\.externalTrafficPolicy Local is not enforced by lbaas: /);
  await s.core.patchNamespacedService({ name: 'opts', namespace: 'default', body: { spec: { loadBalancerSourceRanges: ['192.0.2.0/24'] } } }, mergePatch(await k8s()));
  const changed = await until(async () => {
    const warnings = (await kubeEvents(s.core, 'opts')).filter((e) => e.type === 'Warning');
    return warnings.length === 2 ? warnings : null;
  }, 'a second Warning on opts after its source ranges changed');
  assert.match(changed[1]?.message ?? '', /^spec\.loadBalancerSourceRanges \(192\.0\.2\.0\/24\) is not enforced/);
});

test('a bad option value is a Warning naming the field, and nothing is applied for that Service', async () => {
  s.stack.sim.resetStats();
  const bad: [string, Record<string, string>, Partial<V1Service['spec']>, string][] = [
    ['bad-families', { 'lbaas.anx.io/external-ip-families': 'ipv4' }, {}, 'lbaas.anx.io/external-ip-families: "ipv4" is not an IP family (IPv4 or IPv6, comma-separated)'],
    ['bad-family', { 'lbaas.anx.io/external-ip-families': 'IPv6' }, {}, `lbaas.anx.io/external-ip-families: no IPv6 address among the cluster's external addresses (${EXTERNAL})`],
    ['bad-ips', { 'lbaas.anx.io/load-balancer-ips': '192.0.2.77' }, {}, `lbaas.anx.io/load-balancer-ips: 192.0.2.77 is not one of the cluster's external addresses or prefixes (${EXTERNAL})`],
    ['bad-lbip', {}, { loadBalancerIP: '198.51.100.99' }, `spec.loadBalancerIP: 198.51.100.99 is not one of the cluster's external addresses or prefixes (${EXTERNAL})`],
  ];
  for (const [name, annotations, spec, message] of bad) {
    await s.core.createNamespacedService({ namespace: 'default', body: { ...lbService(name, [{ name: 'http', port: 8091 }], spec), metadata: { name, namespace: 'default', annotations } } });
    const warning = await until(async () => (await kubeEvents(s.core, name)).find((e) => e.type === 'Warning'), `a Warning on ${name}`);
    assert.equal(warning.reason, 'SyncLoadBalancerFailed');
    assert.equal(warning.message, `Error syncing load balancer: ${message}`);
    const svc = (await readService(name)) as V1Service;
    assert.equal(svc.metadata?.finalizers, undefined, `${name}: not even the finalizer`);
    assert.deepEqual(objectsOf(svc.metadata?.uid as string), []);
  }
  assert.deepEqual(writeRequests(s.stack.sim.stats()), {});
});

test('bad input stays local: a converged Service given a bad option keeps its objects while another converges and the node pool stays', async () => {
  const optsUid = (await readService('opts'))?.metadata?.uid as string;
  const optsObjects = objectsOf(optsUid);
  const optsIngress = (await readService('opts'))?.status?.loadBalancer?.ingress;
  const revision = await poolRevision();
  s.stack.sim.resetStats();
  await s.core.patchNamespacedService({ name: 'opts', namespace: 'default', body: { metadata: { annotations: { 'lbaas.anx.io/load-balancer-ips': '192.0.2.78' } } } }, mergePatch(await k8s()));
  const neighbour = await s.core.createNamespacedService({ namespace: 'default', body: lbService('neighbour', [{ name: 'http', port: 8092 }]) });
  const warning = await until(async () => (await kubeEvents(s.core, 'opts')).find((e) => e.reason === 'SyncLoadBalancerFailed'), 'the Warning on opts');
  assert.equal(warning.message, `Error syncing load balancer: lbaas.anx.io/load-balancer-ips: 192.0.2.78 is not one of the cluster's external addresses or prefixes (${EXTERNAL})`);
  await until(() => ingressOf('neighbour'), 'the ingress of neighbour');
  assert.equal(objectsOf(neighbour.metadata?.uid as string).length, 5);
  assert.deepEqual(objectsOf(optsUid), optsObjects, 'the objects of opts as they were');
  assert.deepEqual((await readService('opts'))?.status?.loadBalancer?.ingress, optsIngress);
  assert.equal(await poolRevision(), revision);
  const writes = writeRequests(s.stack.sim.stats());
  const count = (re: RegExp) => Object.entries(writes).filter(([r]) => re.test(r) && !/tag/i.test(r)).reduce((n, [, c]) => n + c, 0);
  assert.deepEqual([count(/^POST /), count(/^DELETE /), count(/^PUT /)], [5, 0, 0], `only the neighbour's 5 objects: ${JSON.stringify(writes)}`);
});

test('while lbaas kube is down a Service is created and one deleted: after its restart both converge, with no write for the others', async () => {
  const goneCreated = await s.core.createNamespacedService({ namespace: 'default', body: lbService('gone', [{ name: 'http', port: 8086 }]) });
  await until(() => ingressOf('gone'), 'the ingress of gone');
  const goneUid = goneCreated.metadata?.uid as string;
  assert.equal(objectsOf(goneUid).length, 5);
  const webBefore = (await readService('web')) as V1Service;
  await kube.stop();
  const created = await s.core.createNamespacedService({ namespace: 'default', body: lbService('late', [{ name: 'http', port: 8081 }]) });
  await s.core.deleteNamespacedService({ name: 'gone', namespace: 'default' });
  assert.ok((await readService('gone'))?.metadata?.deletionTimestamp, 'the finalizer holds gone while nobody tears it down');
  s.stack.sim.resetStats();
  kube = s.kube();
  await kube.saw('became the leader');
  await until(() => ingressOf('late'), 'the ingress of late');
  await until(async () => (await readService('gone')) === null, 'gone to be torn down and released');
  const uid = created.metadata?.uid as string;
  assert.deepEqual(objectsOf(uid), [
    `backend http.late.${sfx}`,
    `bind v4.http.late.${sfx}`,
    `frontend http.late.${sfx}`,
    `server node-1.http.late.${sfx} 10.0.0.11`,
    `server node-2.http.late.${sfx} 192.0.2.12`,
  ]);
  assert.deepEqual(objectsOf(goneUid), []);
  // The Engine writes: late's 5 objects created, gone's 5 destroyed, nothing else.
  const writes = writeRequests(s.stack.sim.stats());
  const count = (re: RegExp) => Object.entries(writes).filter(([r]) => re.test(r) && !/tag/i.test(r)).reduce((n, [, c]) => n + c, 0);
  assert.deepEqual([count(/^POST /), count(/^DELETE /), count(/^PUT /)], [5, 5, 0], JSON.stringify(writes));
  const webAfter = (await readService('web')) as V1Service;
  assert.equal(webAfter.metadata?.resourceVersion, webBefore.metadata?.resourceVersion, 'web was not written to');
  assert.deepEqual((await kubeEvents(s.core, 'web')).map((e) => e.line), ['Normal EnsuringLoadBalancer', 'Normal EnsuredLoadBalancer']);
});

test('two lbaas kube at once act as one: the standby waits, and takes over when the leader stops', async () => {
  const standby = s.kube();
  await standby.saw('waiting for the lease');
  const lease = await s.coordination.readNamespacedLease({ name: 'lbaas-kube', namespace: 'kube-system' });
  const leader = lease.spec?.holderIdentity as string;
  assert.match(kube.output(), new RegExp(`identity ${leader}`));
  await s.core.createNamespacedService({ namespace: 'default', body: lbService('both', [{ name: 'http', port: 8082 }]) });
  await until(() => ingressOf('both'), 'the ingress of both');
  assert.doesNotMatch(standby.output(), /became the leader|applied to service/);
  assert.deepEqual(new Set((await kubeEvents(s.core, 'both')).map((e) => e.reportingInstance)), new Set([leader]));

  await kube.stop();
  await standby.saw('became the leader', 30_000);
  kube = standby;
  const taken = await s.coordination.readNamespacedLease({ name: 'lbaas-kube', namespace: 'kube-system' });
  assert.notEqual(taken.spec?.holderIdentity, leader);
  assert.equal(taken.spec?.leaseTransitions, (lease.spec?.leaseTransitions ?? 0) + 1);
  await s.core.createNamespacedService({ namespace: 'default', body: lbService('after', [{ name: 'http', port: 8083 }]) });
  await until(() => ingressOf('after'), 'the ingress of after');
});

test('a leader renews its Lease with one write per renewal and no read; a Lease written by another since (409) is read again and the leader stops acting', async () => {
  const target = await loadTarget(s.api.kubeconfig, {});
  const calls: string[] = [];
  const coordination = new Proxy(target.coordination, {
    get(t, prop, receiver) {
      const v = Reflect.get(t, prop, receiver) as unknown;
      if (typeof v !== 'function' || typeof prop !== 'string') return v;
      return (...args: unknown[]) => {
        calls.push(prop);
        return (v as (...a: unknown[]) => unknown).apply(t, args);
      };
    },
  });
  const name = `renew-${randomBytes(3).toString('hex')}`;
  const lines: string[] = [];
  const elector = new LeaderElector({ ...target, coordination }, { namespace: 'kube-system', name, identity: 'renewing', durationMs: 3_000, renewDeadlineMs: 2_000, retryMs: 200, log: (l) => lines.push(l) });
  let started = 0;
  let stopped = 0;
  const done = elector.run(
    () => started++,
    async () => void stopped++,
  );
  await until(() => calls.filter((c) => c === 'replaceNamespacedLease').length >= 5, 'five renewals', 20_000);
  assert.equal(started, 1);
  // No Lease yet: one read and the create; then every renewal is a single write over the Lease it wrote last.
  assert.deepEqual(calls.slice(0, 2), ['readNamespacedLease', 'createNamespacedLease']);
  assert.deepEqual(new Set(calls.slice(2)), new Set(['replaceNamespacedLease']));
  const renewed = await s.coordination.readNamespacedLease({ name, namespace: 'kube-system' });
  assert.equal(renewed.spec?.holderIdentity, 'renewing');
  assert.equal(renewed.spec?.leaseTransitions, 0);

  // Another process takes the Lease (its write carries the resourceVersion it read; the leader may renew in between).
  const mod = await k8s();
  await until(async () => {
    const l = await s.coordination.readNamespacedLease({ name, namespace: 'kube-system' });
    await s.coordination.replaceNamespacedLease({ name, namespace: 'kube-system', body: { ...l, spec: { ...l.spec, holderIdentity: 'other', renewTime: new mod.V1MicroTime() } } });
    return true;
  }, 'the Lease written by another holder', 10_000);
  const readsBefore = calls.filter((c) => c === 'readNamespacedLease').length;
  await until(() => stopped === 1, 'the leader to stop acting', 10_000);
  assert.ok(calls.filter((c) => c === 'readNamespacedLease').length > readsBefore, 'the renewal refused with 409 made it read the Lease');
  assert.match(lines.join('\n'), /lost the lease kube-system\/renew-[0-9a-f]+: not renewed for \d+ s; stopping/);
  elector.stop();
  await done;
  await s.coordination.deleteNamespacedLease({ name, namespace: 'kube-system' });
});

test('the hostname annotation turns the ingress into a hostname, with no Engine write', async () => {
  const mod = await k8s();
  s.stack.sim.resetStats();
  await s.core.patchNamespacedService(
    { name: 'after', namespace: 'default', body: { metadata: { annotations: { 'lbaas.anx.io/load-balancer-proxy-pass-hostname': 'Shop.Example.com' } } } },
    mergePatch(mod),
  );
  const svc = await until(async () => {
    const x = await readService('after');
    return x?.status?.loadBalancer?.ingress?.[0]?.hostname ? x : null;
  }, 'a hostname ingress on after');
  assert.deepEqual(JSON.parse(JSON.stringify(svc.status?.loadBalancer?.ingress)), [{ hostname: 'shop.example.com', ports: [{ port: 8083, protocol: 'TCP' }] }]);
  assert.deepEqual(writeRequests(s.stack.sim.stats()), {});
});

test('a Service that stops being type LoadBalancer is torn down: no objects, no ingress, no finalizer', async () => {
  const uid = (await readService('sentinel'))?.metadata?.uid as string;
  assert.equal(objectsOf(uid).length, 5);
  await s.core.patchNamespacedService({ name: 'sentinel', namespace: 'default', body: { spec: { type: 'ClusterIP' } } }, mergePatch(await k8s()));
  const svc = await until(async () => {
    const x = await readService('sentinel');
    return x && !x.metadata?.finalizers?.length ? x : null;
  }, 'the finalizer of sentinel to go');
  assert.deepEqual(objectsOf(uid), []);
  assert.equal(svc.status?.loadBalancer?.ingress, undefined);
  assert.deepEqual(await eventsWith('sentinel', 'Normal DeletedLoadBalancer'), [
    'Normal EnsuringLoadBalancer',
    'Normal EnsuredLoadBalancer',
    'Normal DeletingLoadBalancer',
    'Normal DeletedLoadBalancer',
  ]);
});

test('a Ready node without an address is reported on every Service and nothing is applied until it is gone, as upstream', async () => {
  s.stack.sim.resetStats();
  await putNode(s.core, 'node-bare', [['Hostname', 'node-bare']]);
  const reason = 'Error syncing load balancer: node node-bare lacks a usable address (no ExternalIP or InternalIP)';
  const warning = await until(async () => (await kubeEvents(s.core, 'after')).find((e) => e.type === 'Warning'), 'a Warning on after');
  assert.equal(warning.message, reason);
  const created = await s.core.createNamespacedService({ namespace: 'default', body: lbService('blocked', [{ name: 'http', port: 8085 }]) });
  const uid = created.metadata?.uid as string;
  const held = await until(async () => (await kubeEvents(s.core, 'blocked')).find((e) => e.type === 'Warning'), 'a Warning on blocked');
  assert.equal(held.message, reason);
  assert.equal((await readService('blocked'))?.metadata?.finalizers, undefined, 'nothing applied: not even the finalizer');
  assert.deepEqual(objectsOf(uid), []);
  assert.deepEqual(writeRequests(s.stack.sim.stats()), {});

  await s.core.deleteNode({ name: 'node-bare' });
  await until(() => ingressOf('blocked'), 'the ingress of blocked once node-bare is gone');
  assert.deepEqual(objectsOf(uid), [
    `backend http.blocked.${sfx}`,
    `bind v4.http.blocked.${sfx}`,
    `frontend http.blocked.${sfx}`,
    `server node-1.http.blocked.${sfx} 10.0.0.11`,
    `server node-2.http.blocked.${sfx} 192.0.2.12`,
  ]);
  // Nothing was written for the others, which had converged before.
  const writes = writeRequests(s.stack.sim.stats());
  assert.equal(Object.keys(writes).filter((r) => /^(PUT|DELETE) /.test(r)).length, 0, JSON.stringify(writes));
});

test('the API server restarting: lbaas kube lists the Services again, watches again and converges a Service created after the outage', async () => {
  const before = kube.output().length;
  await s.api.restartApiserver();
  await s.core.createNamespacedService({ namespace: 'default', body: lbService('resumed', [{ name: 'http', port: 8084 }]) });
  const svc = await until(() => ingressOf('resumed'), 'the ingress of resumed', 90_000);
  assert.deepEqual(objectsOf(svc.metadata?.uid as string).length, 5);
  // The outage was seen (a watch or the Lease failed), not slept through, and the Services' informer started again:
  // it resumes its watch from its resourceVersion, or lists anew when that was compacted away (kube/controller.ts),
  // so either its restart or a new list is in the log, and 'resumed' above converged through it.
  const during = kube.output().slice(before);
  assert.match(during, /watching (services|nodes): |lease kube-system\/lbaas-kube: |lost the lease/);
  assert.match(during, /watching services: .*; listing again in \d+ s|listed \d+ services at resourceVersion \d+/, during);
});

test('lbaas kube with Temporal unreachable exits 4, before writing anything to the cluster', async () => {
  const child = spawn(process.execPath, [LBAAS_BIN, 'kube', '--kubeconfig', s.api.kubeconfig, '--cluster-name', CLUSTER, '--load-balancer', s.lb, '--lease-name', 'never'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TEMPORAL_ADDRESS: '127.0.0.1:1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const bad = { stderr: '', status: null as number | null };
  child.stderr.on('data', (c: Buffer) => (bad.stderr += c.toString('utf8')));
  bad.status = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.equal(bad.status, 4, bad.stderr);
  assert.match(bad.stderr, /^lbaas: cannot reach Temporal at 127\.0\.0\.1:1 /m);
  await assert.rejects(s.coordination.readNamespacedLease({ name: 'never', namespace: 'kube-system' }), (err: { code?: number }) => err.code === 404);
});

test('deleting a Service tears it down, and only then releases the finalizer', async () => {
  const uid = (await readService('web'))?.metadata?.uid as string;
  await s.core.deleteNamespacedService({ name: 'web', namespace: 'default' });
  await until(async () => (await readService('web')) === null, 'web to be gone');
  assert.deepEqual(objectsOf(uid), []);
  const lines = await eventsWith('web', 'Normal DeletedLoadBalancer');
  assert.deepEqual(lines.slice(-2), ['Normal DeletingLoadBalancer', 'Normal DeletedLoadBalancer']);
  // The controller answers the delete with the teardown's result, then ends.
  await until(async () => (await s.stack.client.workflow.getHandle(`lbaas/${uid}`).describe()).status.name === 'COMPLETED', 'the controller to end');
});

test('with no --load-balancer or --external-address, lbaas kube discovers both by the upstream tags; a prefix tagged later serves the Service whose families annotation names it', async () => {
  // Its own cluster name and class: no earlier Service is its, and these tags are not cluster testcl's. The RBAC rules
  // allow the one Lease lbaas-kube, so the suite's lbaas kube steps down first (this is the last test).
  const seed = async (body: Record<string, unknown>) => {
    const res = await fetch(`${s.stack.sim.url}/_sim/objects`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const text = await res.text();
    assert.equal(res.status, 201, text);
    return (JSON.parse(text) as { identifier: string }).identifier;
  };
  const lb = await seed({ kind: 'loadbalancer', name: 'lb-discovered', tags: ['anxkube-ccm-lb-disccl'] });
  await seed({ kind: 'prefix', name: '198.51.100.32/28', tags: ['kubernetes-lb-prefix-disccl'] });
  await kube.stop();
  const disc = s.kube(['--cluster-name', 'disccl', '--load-balancer-class', 'lbaas.anx.io/discovery', '--discovery-interval', '10s'], { flags: false });
  try {
    await disc.saw(`discovered load balancers ${lb} (tag anxkube-ccm-lb-disccl); external addresses 198.51.100.46 from prefix VIPs 198.51.100.46 (calculated in 198.51.100.32/28)`);
    const created = await s.core.createNamespacedService({ namespace: 'default', body: lbService('disc', [{ name: 'http', port: 8080 }], { loadBalancerClass: 'lbaas.anx.io/discovery' }) });
    const uid = created.metadata?.uid as string;
    const svc = await until(() => ingressOf('disc'), 'the ingress of disc');
    assert.deepEqual(svc.status?.loadBalancer?.ingress?.map((i) => i.ip), ['198.51.100.46']);
    const onLb = s.stack.sim.objects().filter((o) => o.tags.includes(tag(uid)) && o.kind === 'backend');
    assert.deepEqual(onLb.map((o) => [o.name, o.fields.load_balancer]), [['http.disc.default.disccl', lb]]);

    // An IPv6 prefix tagged now: the next discovery adds its VIP. The Service is single-stack IPv4 (spec.ipFamilies),
    // so, as upstream, it gets the IPv6 VIP once upstream's annotation names both families.
    await seed({ kind: 'prefix', name: '2001:db8:7::/64', tags: ['kubernetes-lb-prefix-disccl'] });
    await disc.saw('external addresses 198.51.100.46, 2001:db8:7:0:ffff:ffff:ffff:fffe', 30_000);
    assert.deepEqual((await readService('disc'))?.spec?.ipFamilies, ['IPv4']);
    await s.core.patchNamespacedService({ name: 'disc', namespace: 'default', body: { metadata: { annotations: { 'lbaas.anx.io/external-ip-families': 'IPv4,IPv6' } } } }, mergePatch(await k8s()));
    await until(async () => {
      const ips = (await readService('disc'))?.status?.loadBalancer?.ingress?.map((i) => i.ip);
      return ips?.length === 2 ? ips : null;
    }, 'the ingress of disc to name both VIPs');
    assert.deepEqual((await readService('disc'))?.status?.loadBalancer?.ingress?.map((i) => i.ip), ['198.51.100.46', '2001:db8:7:0:ffff:ffff:ffff:fffe']);

    await s.core.deleteNamespacedService({ name: 'disc', namespace: 'default' });
    await until(async () => (await readService('disc')) === null, 'disc to be gone');
    assert.deepEqual(objectsOf(uid), []);
  } finally {
    await disc.stop();
  }
});

// A VIP of its own per Service (docs/kubernetes.md#a-vip-of-its-own): its own cluster name and class, and its own
// lbaas kube (the RBAC rules allow the one Lease, so the suite's steps aside as in the discovery test above).
const VIP_CLASS = 'lbaas.anx.io/vip';
const VIP_PREFIX = '198.51.100.64/28';
const vipTag = (uid: string) => `lbaas-kube-vip=${uid}`;
let vipKube: KubeProcess | null = null;
let vipLb = '';
let vipPrefixId = '';
let foreignAddress = '';
const vipUids: Record<string, string> = {};

async function simSeed(body: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${s.stack.sim.url}/_sim/objects`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  assert.equal(res.status, 201, text);
  return (JSON.parse(text) as { identifier: string }).identifier;
}

/** The simulator's IPAM addresses of the VIP prefix, as "name description [tags]" lines. */
function prefixAddresses(): string[] {
  return s.stack.sim
    .objects()
    .filter((o) => o.kind === 'address' && o.fields.prefix === vipPrefixId)
    .map((o) => `${o.name} ${String(o.fields.description_customer)} [${o.tags.join(',')}]`)
    .sort();
}

const startVipKube = () => s.kube(['--cluster-name', 'vipcl', '--load-balancer-class', VIP_CLASS, '--discovery-interval', '10s'], { flags: false });

const vipService = (name: string, port: number, annotations: Record<string, string>, extra: Partial<V1Service['spec']> = {}): V1Service => {
  const svc = lbService(name, [{ name: 'http', port }], { loadBalancerClass: VIP_CLASS, ...extra });
  return { ...svc, metadata: { ...svc.metadata, annotations } };
};

test('lbaas.anx.io/vip: allocate gives each Service an address of its own, reserved from the tagged prefix through IPAM and tagged with its uid; taken and shared addresses are skipped', async () => {
  vipLb = await simSeed({ kind: 'loadbalancer', name: 'lb-vip', tags: ['anxkube-ccm-lb-vipcl'] });
  vipPrefixId = await simSeed({ kind: 'prefix', name: VIP_PREFIX, tags: ['kubernetes-lb-prefix-vipcl'] });
  // Someone else's address in the prefix: never handed out, never released.
  foreignAddress = await simSeed({ kind: 'address', name: '198.51.100.66', fields: { prefix: vipPrefixId, description_customer: 'a customer VM' } });
  await kube.stop();
  s.stack.sim.resetStats();
  vipKube = startVipKube();
  await vipKube.saw(`discovered load balancers ${vipLb} (tag anxkube-ccm-lb-vipcl); external addresses 198.51.100.78 from prefix VIPs 198.51.100.78 (calculated in ${VIP_PREFIX})`);
  for (const [name, port] of [
    ['vip-a', 8090],
    ['vip-b', 8091],
  ] as const) {
    const created = await s.core.createNamespacedService({ namespace: 'default', body: vipService(name, port, { 'lbaas.anx.io/vip': 'allocate' }) });
    vipUids[name] = created.metadata?.uid as string;
    await until(() => ingressOf(name), `the ingress of ${name}`);
  }
  const [a, b] = [vipUids['vip-a'] as string, vipUids['vip-b'] as string];
  // .64 is the network, .65 the gateway, .66 taken, .78 the cluster's shared VIP, .79 the broadcast address.
  for (const [name, ip] of [
    ['vip-a', '198.51.100.67'],
    ['vip-b', '198.51.100.68'],
  ] as const) {
    const svc = (await readService(name)) as V1Service;
    assert.deepEqual(svc.status?.loadBalancer?.ingress?.map((i) => i.ip), [ip], name);
    assert.equal(svc.metadata?.annotations?.['lbaas.anx.io/vip-addresses'], ip, name);
    const uid = vipUids[name] as string;
    const binds = s.stack.sim.objects().filter((o) => o.kind === 'bind' && o.tags.includes(tag(uid)));
    assert.deepEqual(binds.map((o) => [o.name, o.fields.address]), [[`v4.http.${name}.default.vipcl`, ip]]);
  }
  assert.deepEqual(prefixAddresses(), [
    '198.51.100.66 a customer VM []',
    `198.51.100.67 ${vipTag(a)} [${vipTag(a)}]`,
    `198.51.100.68 ${vipTag(b)} [${vipTag(b)}]`,
  ]);
  assert.equal(s.stack.sim.stats().requests['POST /api/ipam/v1/address.json'], 2);
  assert.match(vipKube.output(), new RegExp(`default/vip-a: VIP 198\\.51\\.100\\.67 \\(address [0-9a-f]{32} of prefix 198\\.51\\.100\\.64/28\\) reserved for service ${a}`));
});

test('after lbaas kube restarts, each VIP is adopted by its tag: the same address, no second reservation, no Engine or Service write', async () => {
  assert.ok(vipKube, 'the test before started lbaas kube for cluster vipcl');
  const before = await Promise.all(['vip-a', 'vip-b'].map(async (n) => (await readService(n))?.metadata?.resourceVersion));
  await vipKube.stop();
  s.stack.sim.resetStats();
  vipKube = startVipKube();
  for (const [name, ip] of [
    ['vip-a', '198.51.100.67'],
    ['vip-b', '198.51.100.68'],
  ] as const) {
    await vipKube.saw(new RegExp(`default/${name}: VIP ${ip.replace(/\./g, '\\.')} \\(address [0-9a-f]{32} of prefix 198\\.51\\.100\\.64/28\\) adopted for service ${vipUids[name]}`));
  }
  // Adopted and found converged (its SpecConverged condition matches): nothing more to do for either.
  await new Promise((r) => setTimeout(r, 2_000));
  assert.deepEqual(writeRequests(s.stack.sim.stats()), {});
  const after = await Promise.all(['vip-a', 'vip-b'].map(async (n) => (await readService(n))?.metadata?.resourceVersion));
  assert.deepEqual(after, before, 'neither Service was written to');
  assert.equal(prefixAddresses().length, 3);
});

test('a bad lbaas.anx.io/vip value, or allocate together with an address asked for, is a Warning naming it, and nothing is written', async () => {
  assert.ok(vipKube);
  s.stack.sim.resetStats();
  const cases = [
    ['vip-bad', { 'lbaas.anx.io/vip': 'yes' }, {}, 'Error syncing load balancer: lbaas.anx.io/vip: "yes" is not a valid value (the one value is "allocate"; leave the annotation out for the cluster\'s addresses)'],
    [
      'vip-both',
      { 'lbaas.anx.io/vip': 'allocate' },
      { loadBalancerIP: '198.51.100.70' },
      'Error syncing load balancer: lbaas.anx.io/vip: allocate cannot be combined with spec.loadBalancerIP (198.51.100.70): the Service gets the address allocated for it',
    ],
  ] as const;
  for (const [name, annotations, extra, message] of cases) {
    await s.core.createNamespacedService({ namespace: 'default', body: vipService(name, 8092, annotations, extra) });
    const warning = await until(async () => (await kubeEvents(s.core, name)).find((e) => e.line === 'Warning SyncLoadBalancerFailed'), `the Warning of ${name}`, 30_000);
    assert.equal(warning.message, message);
    const svc = (await readService(name)) as V1Service;
    assert.equal(svc.metadata?.finalizers, undefined, `${name} got no finalizer`);
    assert.equal(svc.metadata?.annotations?.['lbaas.anx.io/vip-addresses'], undefined);
    await s.core.deleteNamespacedService({ name, namespace: 'default' });
  }
  assert.deepEqual(writeRequests(s.stack.sim.stats()), {});
  assert.equal(prefixAddresses().length, 3);
});

test("a VIP is released once the Service's teardown converged: after it turns ClusterIP and after it is deleted; the prefix's other address stays", async () => {
  assert.ok(vipKube);
  const [a, b] = [vipUids['vip-a'] as string, vipUids['vip-b'] as string];
  try {
    await s.core.patchNamespacedService({ name: 'vip-b', namespace: 'default', body: { spec: { type: 'ClusterIP', loadBalancerClass: null } } }, mergePatch(await k8s()));
    const turned = await until(async () => {
      const x = await readService('vip-b');
      return x && !x.metadata?.finalizers?.length ? x : null;
    }, 'the finalizer of vip-b to go');
    assert.deepEqual(objectsOf(b), []);
    assert.equal(turned.metadata?.annotations?.['lbaas.anx.io/vip-addresses'], undefined);
    assert.deepEqual(prefixAddresses(), ['198.51.100.66 a customer VM []', `198.51.100.67 ${vipTag(a)} [${vipTag(a)}]`]);

    await s.core.deleteNamespacedService({ name: 'vip-a', namespace: 'default' });
    await until(async () => (await readService('vip-a')) === null, 'vip-a to be gone');
    assert.deepEqual(objectsOf(a), []);
    assert.deepEqual(prefixAddresses(), ['198.51.100.66 a customer VM []']);
    assert.ok(s.stack.sim.objects().some((o) => o.identifier === foreignAddress), 'the foreign address is still there');
    // Released after the teardown converged, and before the finalizer went (DeletedLoadBalancer is recorded last).
    const out = (vipKube as KubeProcess).output();
    for (const [name, uid, ip] of [
      ['vip-b', b, '198.51.100.68'],
      ['vip-a', a, '198.51.100.67'],
    ] as const) {
      const tore = out.indexOf(`default/${name}: tore down service ${uid}`);
      const released = out.search(new RegExp(`default/${name}: released the VIPs of service ${uid}: ${ip.replace(/\./g, '\\.')} \\(address [0-9a-f]{32}\\)`));
      assert.ok(tore >= 0 && released > tore, `${name}: torn down, then released:\n${out}`);
    }
    assert.deepEqual((await eventsWith('vip-b', 'Normal DeletedLoadBalancer')).slice(-2), ['Normal DeletingLoadBalancer', 'Normal DeletedLoadBalancer']);
  } finally {
    await vipKube?.stop();
    vipKube = null;
  }
});

test('a Service whose controller no worker picks up gets a Warning Event naming the fix within 30 s; /readyz says 503 why and /metrics counts it; a worker started on the task queue clears both and the Service converges', async () => {
  const taskQueue = `${s.stack.taskQueue}-nowork`;
  const port = await drawPort(new Set());
  const get = async (p: string) => {
    const r = await fetch(`http://127.0.0.1:${port}${p}`);
    return { status: r.status, body: await r.text() };
  };
  const gauge = (text: string, reason: string) => Number((new RegExp(`^lbaas_kube_workflows_not_picked_up\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(text) ?? [])[1]);
  // The RBAC rules allow the one Lease: the suite's own lbaas kube (stopped by the test before, when all run) makes way.
  await kube.stop();
  const k2 = s.kube(['--load-balancer-class', 'lbaas.test/nowork', '--auto-discover-load-balancer', 'false', '--health-address', `127.0.0.1:${port}`], {
    env: { LBAAS_TASK_QUEUE: taskQueue },
  });
  let worker: RunningWorker | null = null;
  try {
    await k2.saw('became the leader');
    await until(async () => (await get('/readyz')).status === 200, 'lbaas kube to be ready', 30_000);
    assert.match((await get('/metrics')).body, /^lbaas_kube_informers_synced 1$/m);
    assert.match((await get('/metrics')).body, /^lbaas_kube_leader 1$/m);

    const created = await s.core.createNamespacedService({ namespace: 'default', body: lbService('nowork', [{ name: 'http', port: 9099 }], { loadBalancerClass: 'lbaas.test/nowork' }) });
    const uid = created.metadata?.uid as string;
    const at = Date.now();
    const warning = await until(async () => (await kubeEvents(s.core, 'nowork')).find((e) => e.line === 'Warning WorkflowNotPickedUp'), 'the WorkflowNotPickedUp event', 45_000);
    const after = Date.now() - at;
    console.log(`Warning Event ${after} ms after the Service was created`);
    assert.ok(after <= 30_000, `after ${after} ms`);
    const fix = `no worker polls task queue ${taskQueue}; fix: start lbaas worker (LBAAS_TASK_QUEUE=${taskQueue})`;
    assert.match(warning.message ?? '', new RegExp(`^workflow task of lbaas/${uid} not picked up for \\d+ s: ${fix.replace(/[()]/g, '\\$&')}$`));
    assert.match(k2.output(), new RegExp(`lbaas kube: default/nowork: applying to service ${uid}: workflow task of lbaas/${uid} not picked up for \\d+ s: `));
    const ready = await get('/readyz');
    assert.equal(ready.status, 503);
    assert.match(ready.body, new RegExp(`^workflows not picked up \\(1 waiting\\): default/nowork: workflow task of lbaas/${uid} not picked up for \\d+ s: .*\n$`));
    const metrics = (await get('/metrics')).body;
    assert.equal(gauge(metrics, 'no-worker'), 1);
    assert.match(metrics, /^lbaas_kube_workflows_waiting 1$/m);

    worker = await startWorker({
      temporal: { connection: { address: s.temporalAddress }, namespace: s.stack.namespace, taskQueue },
      connections: { native: s.stack.nativeConnection, client: s.stack.client },
      engine: s.stack.engine,
      workflowBundle: await workflowBundle(),
      shutdownGraceTime: '1s',
    });
    await until(() => ingressOf('nowork'), 'the ingress of nowork', 60_000);
    await until(async () => (await get('/readyz')).status === 200, 'lbaas kube to be ready again', 30_000);
    const cleared = (await get('/metrics')).body;
    assert.equal(gauge(cleared, 'no-worker'), 0);
    assert.match(cleared, /^lbaas_kube_workflows_waiting 0$/m);

    await s.core.deleteNamespacedService({ name: 'nowork', namespace: 'default' });
    await until(async () => (await readService('nowork')) === null, 'nowork to be gone');
    assert.deepEqual(objectsOf(uid), []);
  } finally {
    await k2.stop();
    await worker?.stop();
  }
});
