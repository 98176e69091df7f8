/**
 * The Helm chart (deploy/helm/lbaas) on a real API server: `helm lint`, `helm template` with examples/helm-values.yaml,
 * every rendered object accepted by kube-apiserver (server-side dry run), the kube part's RBAC identical to
 * examples/k8s-rbac.yaml, and `lbaas kube` run with the chart's own arguments and environment as the chart's service
 * account (a token from the TokenRequest API) until a Service gets its ingress. Helm is built once into the user cache
 * (test/kube/helm.ts).
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import type { KubernetesObject, V1Container, V1Deployment } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { parse, parseAllDocuments } from 'yaml';
import { drawPort } from '../../common/ports';
import { k8s } from '../../kube/client';
import { kubeconfigText } from '../../kube/local-apiserver';
import { ensureHelm } from './helm';
import { CLUSTER, EXTERNAL, lbService, putNode, startSuite, until, type Suite } from './harness';

const execFileAsync = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..', '..');
const CHART = path.join(ROOT, 'deploy', 'helm', 'lbaas');
const VALUES = path.join(ROOT, 'examples', 'helm-values.yaml');
const RELEASE = 'lbaas';
const NAMESPACE = 'lbaas-system';
const LBAAS_BIN = path.join(ROOT, 'bin', 'lbaas.js');

let helm: string;
let s: Suite | undefined;
let kubeProc: ChildProcess | undefined;

type Obj = KubernetesObject & Record<string, unknown>;

async function helmRun(args: string[]): Promise<string> {
  // No user configuration or repositories: the chart has no dependencies.
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, HELM_CONFIG_HOME: '/nonexistent', HELM_CACHE_HOME: '/nonexistent', HELM_DATA_HOME: '/nonexistent' };
  const { stdout } = await execFileAsync(helm, args, { env, timeout: 60_000, maxBuffer: 16 << 20 });
  return stdout;
}

/** `helm template` of the chart with the example values and these `--set` values, as objects. */
async function render(set: string[] = [], o: { values?: string | null; release?: string } = {}): Promise<Obj[]> {
  const args = ['template', o.release ?? RELEASE, CHART, '--namespace', NAMESPACE];
  if (o.values !== null) args.push('--values', o.values ?? VALUES);
  for (const kv of set) args.push('--set', kv);
  const out = await helmRun(args);
  return parseAllDocuments(out)
    .map((d) => d.toJS() as Obj | null)
    .filter((d): d is Obj => d !== null);
}

/** helm's failure message for a render that must fail. */
async function renderError(set: string[], values: string | null = VALUES): Promise<string> {
  try {
    await render(set, { values });
  } catch (err) {
    return (err as { stderr?: string }).stderr ?? String(err);
  }
  assert.fail(`helm template with ${set.join(' ')} succeeded`);
}

const find = (objs: Obj[], kind: string, name: string) => {
  const o = objs.find((x) => x.kind === kind && x.metadata?.name === name);
  assert.ok(o, `rendered ${kind} ${name} (rendered: ${objs.map((x) => `${x.kind} ${x.metadata?.name}`).join(', ')})`);
  return o;
};
const container = (objs: Obj[], name: string): V1Container => (find(objs, 'Deployment', name) as V1Deployment).spec!.template.spec!.containers[0]!;
const envOf = (c: V1Container) => Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));

before(async () => {
  helm = await ensureHelm({ progress: (l) => process.stderr.write(`[helm] ${l}\n`) });
});

after(async () => {
  if (kubeProc && kubeProc.exitCode === null) {
    kubeProc.kill('SIGTERM');
    await new Promise((r) => kubeProc!.once('exit', r));
  }
  await s?.close();
});

test('helm lint passes with the example values', async () => {
  const out = await helmRun(['lint', CHART, '--strict', '--values', VALUES]);
  assert.match(out, /1 chart\(s\) linted, 0 chart\(s\) failed/);
});

test("the chart's appVersion, and so the default image tag, is package.json's version", async () => {
  const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const chart = parse(await readFile(path.join(CHART, 'Chart.yaml'), 'utf8')) as { appVersion: string };
  assert.equal(chart.appVersion, pkg.version);
  const objs = await render();
  assert.equal(container(objs, 'lbaas-worker').image, `registry.example.com/lbaas-orchestrator:${pkg.version}`);
  assert.equal(container(objs, 'lbaas-kube').image, `registry.example.com/lbaas-orchestrator:${pkg.version}`);
  assert.equal(container(await render(['image.tag=0.2.0']), 'lbaas-worker').image, 'registry.example.com/lbaas-orchestrator:0.2.0');
});

test("the kube part's RBAC has exactly the rules of examples/k8s-rbac.yaml, bound to the chart's service account in the release namespace", async () => {
  const example = parseAllDocuments(await readFile(path.join(ROOT, 'examples', 'k8s-rbac.yaml'), 'utf8')).map((d) => d.toJS() as Obj);
  const objs = await render();
  const name = 'lbaas-kube';
  for (const kind of ['ClusterRole', 'Role']) {
    const want = example.find((o) => o.kind === kind)!;
    assert.deepEqual(find(objs, kind, name).rules, want.rules, `${kind} rules`);
  }
  assert.equal(find(objs, 'ServiceAccount', name).metadata?.namespace, NAMESPACE);
  assert.equal(find(objs, 'Role', name).metadata?.namespace, NAMESPACE);
  for (const [kind, roleKind] of [
    ['ClusterRoleBinding', 'ClusterRole'],
    ['RoleBinding', 'Role'],
  ] as const) {
    const b = find(objs, kind, name);
    assert.deepEqual(b.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name });
    assert.deepEqual(b.subjects, [{ kind: 'ServiceAccount', name, namespace: NAMESPACE }]);
  }
  const kube = find(objs, 'Deployment', name) as V1Deployment;
  assert.equal(kube.spec?.template.spec?.serviceAccountName, name);
  // The Lease the Role allows is the one lbaas kube is told to hold, in the namespace the Role is in.
  assert.deepEqual(kube.spec?.template.spec?.containers[0]?.args?.slice(0, 3), ['kube', `--namespace=${NAMESPACE}`, '--lease-name=lbaas-kube']);
  // Nothing else in the chart grants anything.
  assert.deepEqual(objs.filter((o) => /Role/.test(o.kind ?? '')).map((o) => `${o.kind} ${o.metadata?.name}`).sort(), ['ClusterRole lbaas-kube', 'ClusterRoleBinding lbaas-kube', 'Role lbaas-kube', 'RoleBinding lbaas-kube']);
});

test('the worker: token from the Secret, no service account token, grace = drain + 60 s, the build made current unless told otherwise, health probes', async () => {
  const objs = await render();
  const worker = find(objs, 'Deployment', 'lbaas-worker') as V1Deployment;
  const pod = worker.spec!.template.spec!;
  assert.equal(pod.automountServiceAccountToken, false);
  assert.equal(pod.terminationGracePeriodSeconds, 360);
  const c = container(objs, 'lbaas-worker');
  assert.deepEqual(c.args, ['worker']);
  const env = envOf(c);
  assert.deepEqual(env.ANEXIA_TOKEN, { secretKeyRef: { name: 'lbaas-engine', key: 'token' } });
  assert.equal(env.LBAAS_DRAIN_TIMEOUT_SECONDS, '300');
  assert.equal(env.LBAAS_SET_CURRENT_VERSION, 'true');
  assert.equal(env.LBAAS_METRICS_ADDRESS, '0.0.0.0:9464');
  assert.equal(env.LBAAS_HEALTH_ADDRESS, '0.0.0.0:8081');
  assert.equal(env.TEMPORAL_ADDRESS, 'temporal-frontend.temporal:7233');
  assert.equal(env.TEMPORAL_NAMESPACE, 'lbaas');
  assert.equal('LBAAS_BUILD_ID' in env, false, 'the image names its build unless told otherwise');
  for (const [probe, p] of [
    ['livenessProbe', '/healthz'],
    ['readinessProbe', '/readyz'],
  ] as const) {
    assert.deepEqual(c[probe]?.httpGet, { path: p, port: 'health' }, probe);
  }
  assert.deepEqual(c.ports, [
    { name: 'health', containerPort: 8081 },
    { name: 'metrics', containerPort: 9464 },
  ]);
  const pdbs = objs.filter((o) => o.kind === 'PodDisruptionBudget').map((o) => o.metadata?.name).sort();
  assert.deepEqual(pdbs, ['lbaas-kube', 'lbaas-worker']);

  const other = await render(['worker.drainTimeoutSeconds=120', 'worker.setCurrentVersion=false', 'worker.buildId=0.1.0+hotfix', 'engine.token.existingSecret=', 'engine.token.value=s3cret']);
  const w2 = find(other, 'Deployment', 'lbaas-worker') as V1Deployment;
  assert.equal(w2.spec!.template.spec!.terminationGracePeriodSeconds, 180);
  const env2 = envOf(container(other, 'lbaas-worker'));
  assert.equal(env2.LBAAS_DRAIN_TIMEOUT_SECONDS, '120');
  assert.equal(env2.LBAAS_SET_CURRENT_VERSION, 'false');
  assert.equal(env2.LBAAS_BUILD_ID, '0.1.0+hotfix');
  // A token given as a value becomes a Secret of the chart's, which the worker reads; it is in no env value.
  assert.deepEqual(env2.ANEXIA_TOKEN, { secretKeyRef: { name: 'lbaas-engine', key: 'token' } });
  const secret = find(other, 'Secret', 'lbaas-engine') as Obj & { data: Record<string, string> };
  assert.equal(Buffer.from(secret.data.token!, 'base64').toString(), 's3cret');
  assert.equal(JSON.stringify(other.filter((o) => o.kind !== 'Secret')).includes('s3cret'), false);
});

test('the Temporal API key and TLS settings reach every container as @temporalio/envconfig reads them', async () => {
  const objs = await render(['temporal.apiKey.existingSecret=tcloud', 'temporal.tls.enabled=true', 'temporal.tls.existingSecret=tls', 'temporal.tls.caKey=ca.crt', 'temporal.tls.serverName=t.example']);
  const job = find(objs, 'Job', 'lbaas-full-resync') as Obj & { spec: { template: { spec: { containers: V1Container[] } } } };
  for (const c of [container(objs, 'lbaas-worker'), container(objs, 'lbaas-kube'), job.spec.template.spec.containers[0]!]) {
    const env = envOf(c);
    assert.deepEqual(env.TEMPORAL_API_KEY, { secretKeyRef: { name: 'tcloud', key: 'api-key' } }, c.name);
    assert.equal(env.TEMPORAL_TLS, 'true');
    assert.equal(env.TEMPORAL_TLS_SERVER_NAME, 't.example');
    assert.equal(env.TEMPORAL_TLS_CLIENT_CERT_PATH, '/etc/lbaas/temporal-tls/tls.crt');
    assert.equal(env.TEMPORAL_TLS_CLIENT_KEY_PATH, '/etc/lbaas/temporal-tls/tls.key');
    assert.equal(env.TEMPORAL_TLS_SERVER_CA_CERT_PATH, '/etc/lbaas/temporal-tls/ca.crt');
    assert.ok(c.volumeMounts?.some((m) => m.name === 'temporal-tls' && m.mountPath === '/etc/lbaas/temporal-tls'), `${c.name} mounts the TLS Secret`);
  }
});

test('the full resync is set by a post-install/post-upgrade hook Job running `lbaas schedule set --every`', async () => {
  const objs = await render(['fullResync.every=15m', 'fullResync.destroyOrphans=true']);
  const job = find(objs, 'Job', 'lbaas-full-resync') as Obj & { metadata: { annotations: Record<string, string> }; spec: { template: { spec: { containers: V1Container[] } } } };
  assert.equal(job.metadata.annotations['helm.sh/hook'], 'post-install,post-upgrade');
  assert.deepEqual(job.spec.template.spec.containers[0]!.args, ['schedule', 'set', '--every=15m', '--destroy-orphans']);
  assert.equal((await render(['fullResync.enabled=false'])).some((o) => o.kind === 'Job'), false);
});

test('missing required values fail the render, naming the value', async () => {
  assert.match(await renderError(['kube.clusterName=c', 'engine.token.value=x'], null), /temporal\.address: the Temporal frontend's host:port/);
  assert.match(await renderError(['temporal.address=t:7233', 'kube.clusterName=c'], null), /engine\.token: set engine\.token\.existingSecret/);
  assert.match(await renderError(['kube.clusterName=']), /kube\.clusterName: the cluster's name/);
});

test("the PrometheusRule and the Grafana dashboard are the repository's files (test/unit/helm-chart-files.test.ts checks the copies), rendered only when asked for", async () => {
  const off = await render();
  assert.deepEqual(off.filter((o) => ['PrometheusRule', 'PodMonitor', 'ConfigMap'].includes(o.kind ?? '')), []);
  const on = await render(['monitoring.prometheusRule.enabled=true', 'monitoring.grafanaDashboard.enabled=true', 'monitoring.podMonitor.enabled=true']);
  assert.deepEqual(find(on, 'PrometheusRule', 'lbaas').spec, parse(await readFile(path.join(ROOT, 'deploy', 'prometheus', 'lbaas-rules.yaml'), 'utf8')));
  const cm = find(on, 'ConfigMap', 'lbaas-dashboard') as Obj & { data: Record<string, string>; metadata: { labels: Record<string, string> } };
  assert.equal(cm.data['lbaas.json'], await readFile(path.join(ROOT, 'deploy', 'grafana', 'lbaas.json'), 'utf8'));
  assert.equal(cm.metadata.labels.grafana_dashboard, '1');
  assert.equal(find(on, 'PodMonitor', 'lbaas-worker').kind, 'PodMonitor');
});

test("every object the chart renders is accepted by kube-apiserver; lbaas kube, run with the chart's arguments and environment as its service account, gives a Service its ingress", { timeout: 300_000 }, async () => {
  s = await startSuite();
  const suite = s;
  const mod = await k8s();
  const kc = new mod.KubeConfig();
  kc.loadFromFile(suite.api.kubeconfig);
  const objects = mod.KubernetesObjectApi.makeApiClient(kc);
  await suite.core.createNamespace({ body: { metadata: { name: NAMESPACE } } });

  const srv = { address: suite.temporalAddress, namespace: suite.stack.namespace };
  // Another release name than the other tests': the suite has applied examples/k8s-rbac.yaml, whose cluster-wide
  // names are the release lbaas's.
  const release = 'edge';
  const kubeName = 'edge-lbaas-kube';
  const objs = await render([
    `temporal.address=${srv.address}`,
    `temporal.namespace=${srv.namespace}`,
    `temporal.taskQueue=${suite.stack.taskQueue}`,
    `kube.clusterName=${CLUSTER}`,
    `kube.loadBalancers[0]=${suite.lb}`,
    `kube.externalAddresses[0]=${EXTERNAL}`,
    'engine.token.existingSecret=',
    'engine.token.value=not-a-real-token',
  ], { release });
  assert.deepEqual(objs.map((o) => o.kind).sort(), [
    'ClusterRole',
    'ClusterRoleBinding',
    'Deployment',
    'Deployment',
    'Job',
    'PodDisruptionBudget',
    'PodDisruptionBudget',
    'Role',
    'RoleBinding',
    'Secret',
    'ServiceAccount',
  ]);
  for (const o of objs) {
    try {
      await objects.create(o, undefined, 'All');
    } catch (err) {
      assert.fail(`kube-apiserver rejected ${o.kind} ${o.metadata?.name} (dry run): ${(err as Error).message}`);
    }
  }

  // The service account and its rules for real; a token for it as the kubelet would mount one.
  for (const o of objs.filter((x) => ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(x.kind ?? ''))) await objects.create(o);
  const tr = await suite.core.createNamespacedServiceAccountToken({ name: kubeName, namespace: NAMESPACE, body: { spec: { audiences: [], expirationSeconds: 3600 } } });
  const token = tr.status?.token;
  assert.ok(token, 'the TokenRequest API issued a token');
  const kubeconfig = path.join(suite.api.dir, 'kubeconfig-chart-sa');
  await writeFile(kubeconfig, kubeconfigText(suite.api.url, path.join(suite.api.dir, 'certs', 'apiserver.crt'), kubeName, token));

  // The container as the chart renders it; only what a pod gets from its node differs: the pod name (downward API),
  // the in-cluster configuration (a kubeconfig with the same token), and the health port (one free here).
  const c = container(objs, kubeName);
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, KUBECONFIG: kubeconfig };
  for (const e of c.env ?? []) {
    if (e.value !== undefined) env[e.name] = e.value;
    else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') env[e.name] = 'lbaas-kube-7d9f8-abcde';
    else assert.fail(`lbaas kube's env ${e.name} comes from ${JSON.stringify(e.valueFrom)}, which this test does not provide`);
  }
  env.LBAAS_HEALTH_ADDRESS = `127.0.0.1:${await drawPort(new Set())}`;
  let out = '';
  kubeProc = spawn(process.execPath, [LBAAS_BIN, ...(c.args ?? [])], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  kubeProc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  kubeProc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  await until(() => out.includes('became the leader') || kubeProc!.exitCode !== null, 'lbaas kube to lead', 60_000);
  assert.match(out, /became the leader/, out);

  await putNode(suite.core, 'node-1', [['InternalIP', '10.0.0.11']]);
  await suite.core.createNamespacedService({ namespace: 'default', body: lbService('chart-web', [{ name: 'http', port: 80 }]) });
  const svc = await until(
    async () => {
      const v = await suite.core.readNamespacedService({ name: 'chart-web', namespace: 'default' });
      return (v.status?.loadBalancer?.ingress?.length ?? 0) > 0 ? v : null;
    },
    `the Service's ingress; lbaas kube printed:\n${out}`,
    120_000,
  );
  assert.deepEqual(svc.status?.loadBalancer?.ingress?.map((i) => i.ip), [EXTERNAL]);
  const lease = await suite.coordination.readNamespacedLease({ name: 'lbaas-kube', namespace: NAMESPACE });
  assert.match(lease.spec?.holderIdentity ?? '', /^lbaas-kube-7d9f8-abcde_/);
  assert.equal(/forbidden/i.test(out), false, `lbaas kube was refused something:\n${out}`);
});
