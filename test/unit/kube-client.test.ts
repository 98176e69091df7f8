/**
 * kube/client.ts apiClients: the API clients of lbaas kube reuse their TLS connections. Against a real HTTPS server
 * (a certificate made with openssl, trusted through the kubeconfig's certificate-authority, as kube-apiserver's is),
 * counting the TCP connections it accepts.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { apiClients, httpStatus, k8s, mergePatch, metadataOnly, pooledAuthentication, statusMessage, type K8sModule } from '../../kube/client';
import { kubeconfigText } from '../../kube/local-apiserver';

let dir: string;
let server: https.Server;
let url: string;
let mod: K8sModule;
let connections = 0;
const seen: { path: string; authorization: string | undefined; contentType?: string | undefined }[] = [];
/** What the server answers a Service patch: the whole object, as kube-apiserver does. */
const PATCHED_SERVICE = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', namespace: 'default', uid: 'uid-web', resourceVersion: '42', finalizers: ['service.kubernetes.io/load-balancer-cleanup'], creationTimestamp: '2026-01-01T00:00:00.000Z' },
  spec: { type: 'LoadBalancer', ports: [{ port: 80, protocol: 'TCP', nodePort: 30080 }] },
  status: { loadBalancer: { ingress: [{ ip: '203.0.113.10' }] } },
};
const CONFLICT = { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Conflict', code: 409, message: 'Operation cannot be fulfilled on services "gone": the object has been modified' };

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'lbaas-kube-client-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-days', '1', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')], { stdio: 'ignore' });
  server = https.createServer({ key: readFileSync(path.join(dir, 'key.pem')), cert: readFileSync(path.join(dir, 'cert.pem')) }, (req, res) => {
    seen.push({ path: req.url ?? '', authorization: req.headers.authorization, contentType: req.headers['content-type'] });
    res.setHeader('content-type', 'application/json');
    if (req.method === 'PATCH' && req.url?.startsWith('/api/v1/namespaces/default/services/web')) return void res.end(JSON.stringify(PATCHED_SERVICE));
    if (req.method === 'PATCH' && req.url?.startsWith('/api/v1/namespaces/default/services/gone')) {
      res.statusCode = 409;
      return void res.end(JSON.stringify(CONFLICT));
    }
    res.end(JSON.stringify({ kind: 'NodeList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: [] }));
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  mod = await k8s();
});

after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

function kubeConfig(token: string) {
  const file = path.join(dir, `kubeconfig-${token}`);
  writeFileSync(file, kubeconfigText(url, path.join(dir, 'cert.pem'), 'u', token));
  const kc = new mod.KubeConfig();
  kc.loadFromFile(file);
  return kc;
}

test('apiClients: ten requests one after another, of both clients, go over one TLS connection with the token on each', async () => {
  const { core, coordination } = apiClients(mod, kubeConfig('tok-a'));
  connections = 0;
  seen.length = 0;
  for (let i = 0; i < 5; i++) {
    await core.listNode();
    await coordination.listNamespacedLease({ namespace: 'kube-system' }).catch(() => {}); // a NodeList body: only the request counts
  }
  assert.equal(seen.length, 10);
  assert.deepEqual(new Set(seen.map((s) => s.authorization)), new Set(['Bearer tok-a']));
  assert.equal(connections, 1);
});

test('the client library alone opens a connection per request (what apiClients avoids)', async () => {
  const core = kubeConfig('tok-b').makeApiClient(mod.CoreV1Api);
  connections = 0;
  for (let i = 0; i < 3; i++) await core.listNode();
  assert.equal(connections, 3);
});

test('pooledAuthentication: one pool per TLS configuration, however many requests', async () => {
  const auth = pooledAuthentication(kubeConfig('tok-c'));
  const settings = mod.createConfiguration({ baseServer: new mod.ServerConfiguration(url, {}), authMethods: { default: auth } });
  const core = new mod.CoreV1Api(settings);
  await Promise.all(Array.from({ length: 8 }, () => core.listNode()));
  await core.listNode();
  assert.equal(auth.pools(), 1);
});

test('metadataOnly: a write answer reaches the caller as its identity and resourceVersion only, the request as sent; an error answer keeps its Status message', async () => {
  const { core } = apiClients(mod, kubeConfig('tok-d'));
  const patch = { name: 'web', namespace: 'default', body: { metadata: { finalizers: ['service.kubernetes.io/load-balancer-cleanup'] } } };
  seen.length = 0;
  const cut = await core.patchNamespacedService(patch, metadataOnly(mod, mergePatch(mod)));
  assert.deepEqual(JSON.parse(JSON.stringify(cut)), { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default', uid: 'uid-web', resourceVersion: '42' } });
  assert.deepEqual(seen, [{ path: '/api/v1/namespaces/default/services/web', authorization: 'Bearer tok-d', contentType: 'application/merge-patch+json' }]);
  // The same call without it: the whole Service, as the client library gives it.
  const whole = await core.patchNamespacedService(patch, mergePatch(mod));
  assert.deepEqual(JSON.parse(JSON.stringify(whole)), PATCHED_SERVICE);
  await assert.rejects(core.patchNamespacedService({ ...patch, name: 'gone' }, metadataOnly(mod, mergePatch(mod))), (err: unknown) => httpStatus(err) === 409 && statusMessage(err) === CONFLICT.message);
});
