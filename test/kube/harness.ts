/**
 * The parts of the Kubernetes suite: a real API server (kube/local-apiserver.ts), the stack every workflow test runs on
 * (Temporal dev server, Engine simulator, worker), a Kubernetes client for the test's own writes, and `lbaas kube`
 * started as the real CLI process with its output captured.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { CoreV1Api, CoreV1Event, CoordinationV1Api, V1Service } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { k8s } from '../../kube/client';
import { parseAllDocuments } from 'yaml';
import { kubeconfigText, putNode, startLocalApiserver, type LocalApiserver } from '../../kube/local-apiserver';
import { seedLoadBalancer } from '../helpers/fixtures';
import { startStack, stopTemporalServer, temporalServer, type Stack } from '../helpers/stack';

export const LBAAS_BIN = path.resolve(__dirname, '..', '..', '..', 'bin', 'lbaas.js');
export const CLUSTER = 'testcl';
export const EXTERNAL = '203.0.113.10';
/** lbaas kube runs as this service account, with exactly the rules of examples/k8s-rbac.yaml. */
const SERVICE_ACCOUNT_USER = 'system:serviceaccount:kube-system:lbaas-kube';
const RBAC_FILE = path.resolve(__dirname, '..', '..', '..', 'examples', 'k8s-rbac.yaml');

export interface KubeProcess {
  proc: ChildProcess;
  output(): string;
  /** Resolves when the output contains `text`. */
  saw(text: string | RegExp, timeoutMs?: number): Promise<void>;
  /** SIGTERM, SIGKILL after 15 s; resolves with the exit code. */
  stop(): Promise<number | null>;
}

export interface Suite {
  api: LocalApiserver;
  stack: Stack;
  lb: string;
  core: CoreV1Api;
  coordination: CoordinationV1Api;
  temporalAddress: string;
  /** `lbaas kube` with the suite's cluster, load balancer and external address flags, unless `flags` is false; `env` adds variables. */
  kube(extra?: string[], o?: { flags?: boolean; env?: Record<string, string> }): KubeProcess;
  close(): Promise<void>;
}

export async function until<T>(fn: () => Promise<T | null | undefined | false> | T | null | undefined | false, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = null;
  for (;;) {
    try {
      const v = await fn();
      if (v !== null && v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function startSuite(): Promise<Suite> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-kube-test-'));
  const saToken = randomBytes(16).toString('hex');
  const api = await startLocalApiserver({ dir, extraTokens: { [saToken]: SERVICE_ACCOUNT_USER }, progress: (l) => process.stderr.write(`[kube] ${l}\n`) });
  const stack = await startStack();
  const srv = await temporalServer();
  const lb = seedLoadBalancer(stack.sim, 'lb-kube');
  const mod = await k8s();
  const kc = new mod.KubeConfig();
  kc.loadFromFile(api.kubeconfig);
  const core = kc.makeApiClient(mod.CoreV1Api);
  const coordination = kc.makeApiClient(mod.CoordinationV1Api);
  // The RBAC manifest users apply, applied as they would, and a kubeconfig for its service account.
  const objects = mod.KubernetesObjectApi.makeApiClient(kc);
  for (const doc of parseAllDocuments(await readFile(RBAC_FILE, 'utf8'))) await objects.create(doc.toJS());
  const saKubeconfig = path.join(dir, 'kubeconfig-lbaas-kube');
  await writeFile(saKubeconfig, kubeconfigText(api.url, path.join(dir, 'certs', 'apiserver.crt'), 'lbaas-kube', saToken));
  const running = new Set<KubeProcess>();
  const kube = (extra: string[] = [], o: { flags?: boolean; env?: Record<string, string> } = {}): KubeProcess => {
    const flags = o.flags === false ? [] : ['--cluster-name', CLUSTER, '--load-balancer', lb, '--external-address', EXTERNAL];
    const proc = spawn(
      process.execPath,
      [LBAAS_BIN, 'kube', '--kubeconfig', saKubeconfig, ...flags, '--lease-duration', '3s', ...extra],
      {
        env: { PATH: process.env.PATH, HOME: process.env.HOME, TEMPORAL_ADDRESS: srv.address, TEMPORAL_NAMESPACE: srv.namespace, LBAAS_TASK_QUEUE: stack.taskQueue, ...o.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    proc.stdout?.on('data', (c: Buffer) => (out += c.toString('utf8')));
    proc.stderr?.on('data', (c: Buffer) => (out += c.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    const p: KubeProcess = {
      proc,
      output: () => out,
      saw: (text, timeoutMs = 60_000) =>
        until(() => (typeof text === 'string' ? out.includes(text) : text.test(out)), `lbaas kube to print ${String(text)}; it printed:\n${out}`, timeoutMs).then(() => undefined),
      async stop() {
        running.delete(p);
        if (proc.exitCode === null && proc.signalCode === null) {
          proc.kill('SIGTERM');
          const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
          const code = await exited;
          clearTimeout(timer);
          return code;
        }
        return exited;
      },
    };
    running.add(p);
    return p;
  };
  return {
    api,
    stack,
    lb,
    core,
    coordination,
    temporalAddress: srv.address,
    kube,
    async close() {
      for (const p of [...running]) await p.stop();
      await stack.stop();
      await api.stop();
      await stopTemporalServer();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export { putNode };

export function lbService(name: string, ports: { name?: string; port: number; protocol?: string }[], extra: Partial<V1Service['spec']> = {}): V1Service {
  return { metadata: { name, namespace: 'default' }, spec: { type: 'LoadBalancer', ports: ports.map((p) => ({ protocol: 'TCP', ...p })), ...extra } };
}

/** The Service's Events recorded by lbaas kube, in the order written (etcd revisions), as "Type Reason" with the reporting instance. */
export async function kubeEvents(core: CoreV1Api, svc: string): Promise<(CoreV1Event & { line: string })[]> {
  const list = await core.listNamespacedEvent({ namespace: 'default', fieldSelector: `involvedObject.name=${svc}` });
  return list.items
    .filter((e) => e.source?.component === 'lbaas-kube')
    .sort((a, b) => Number(a.metadata?.resourceVersion ?? 0) - Number(b.metadata?.resourceVersion ?? 0))
    .map((e) => Object.assign(e, { line: `${e.type} ${e.reason}` }));
}
