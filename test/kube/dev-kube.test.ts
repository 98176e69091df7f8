/**
 * `lbaas dev --kube` as a user runs it: the whole local stack plus a real API server with lbaas kube acting on it;
 * `examples/k8s-service.yaml` applied with the kubeconfig it prints converges and gets its external address; Ctrl-C
 * (SIGINT) stops everything, the API server included.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { k8s } from '../../kube/client';
import { devArgs, startLongRun } from '../helpers/cli';
import { kubeEvents, until } from './harness';

const ROOT = path.resolve(__dirname, '..', '..', '..');

/** Whether anything answers TLS on the URL. */
function answers(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = https.get(`${url}/readyz`, { rejectUnauthorized: false, timeout: 1_000 }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
  });
}

test('lbaas dev --kube: examples/k8s-service.yaml created with the kubeconfig it prints converges with its external address; Ctrl-C stops it all', async (t) => {
  const cwd = await mkdtemp(path.join(os.tmpdir(), 'lbaas-dev-kube-'));
  t.after(() => rm(cwd, { recursive: true, force: true }));
  const dev = startLongRun(t, await devArgs('--kube'), { cwd });
  const out = dev.out;

  const kubeconfig = await until(() => /^Kubernetes\s+KUBECONFIG=(\S+)/m.exec(out())?.[1], `the KUBECONFIG line; it printed:\n${out()}`, 180_000);
  const mod = await k8s();
  const kc = new mod.KubeConfig();
  kc.loadFromFile(kubeconfig);
  const core = kc.makeApiClient(mod.CoreV1Api);
  const server = kc.getCurrentCluster()?.server as string;
  await core.createNamespacedService({ namespace: 'default', body: parse(await readFile(path.join(ROOT, 'examples', 'k8s-service.yaml'), 'utf8')) });
  const svc = await until(async () => {
    const s = await core.readNamespacedService({ name: 'web', namespace: 'default' });
    return (s.status?.loadBalancer?.ingress?.length ?? 0) > 0 ? s : null;
  }, `the ingress of web; lbaas dev printed:\n${out()}`);
  assert.deepEqual(
    svc.status?.loadBalancer?.ingress?.map((i) => [i.ip, i.ports?.map((p) => p.port)]),
    [['203.0.113.20', [80, 443]]],
  );
  // The Ensured event is recorded after the ingress is written: wait for it rather than read once.
  const events = await until(async () => {
    const lines = (await kubeEvents(core, 'web')).map((e) => e.line);
    return lines.includes('Normal EnsuredLoadBalancer') ? lines : null;
  }, 'the EnsuredLoadBalancer event of web', 15_000);
  assert.deepEqual(events, ['Normal EnsuringLoadBalancer', 'Normal EnsuredLoadBalancer']);

  dev.proc.kill('SIGINT');
  assert.equal(await dev.exited, 0, out());
  assert.equal(await answers(server), false, 'the API server stopped with lbaas dev');
});
