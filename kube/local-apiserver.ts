/**
 * A real, single-process Kubernetes control plane for `npm run test:kube` and `lbaas dev --kube`: etcd (Debian's
 * etcd-server) and kube-apiserver (kube/install.ts) on free loopback ports, with token authentication (one admin token
 * in system:masters), RBAC, a service-account key pair made with openssl, and a kubeconfig for kubectl and lbaas kube.
 * There is no controller manager, scheduler or kubelet: Nodes are objects the caller creates. Everything lives in
 * `dir`; stop() ends both processes.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import https from 'node:https';
import path from 'node:path';
import { promisify } from 'node:util';
import { drawPorts } from '../common/ports';
import type { CoreV1Api, V1Node } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { ensureKubeApiserver } from './install';

const execFileAsync = promisify(execFile);

export interface LocalApiserver {
  /** https://127.0.0.1:<port> */
  url: string;
  /** The admin bearer token (system:masters). */
  token: string;
  kubeconfig: string;
  dir: string;
  /** The process ids, for a benchmark's CPU accounting. */
  pids(): { etcd: number; apiserver: number };
  /** Stops kube-apiserver and starts it again on the same port and etcd (what its clients see as an outage). */
  restartApiserver(): Promise<void>;
  stop(): Promise<void>;
}

export interface LocalApiserverOptions {
  dir: string;
  env?: NodeJS.ProcessEnv;
  progress?: (line: string) => void;
  /** More token users: token -> user name (no groups), for tests of RBAC rules. */
  extraTokens?: Record<string, string>;
  /** How long to wait for /readyz. */
  readyTimeoutMs?: number;
  /** An audit log (JSON lines, level Metadata) of these users' requests only: what a benchmark counts per client. */
  audit?: { logPath: string; users: string[] };
}

function startLogged(cmd: string, args: string[], logFile: string, env: NodeJS.ProcessEnv): ChildProcess {
  const log = createWriteStream(logFile, { flags: 'a' });
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  return child;
}

function stopChild(child: ChildProcess, ms = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** GET url with the token; the status code, or null when nothing answered. */
function probe(url: string, token: string): Promise<number | null> {
  return new Promise((resolve) => {
    const req = https.get(url, { headers: { authorization: `Bearer ${token}` }, rejectUnauthorized: false, timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? null);
    });
    req.on('error', () => resolve(null));
    req.on('timeout', () => req.destroy());
  });
}

async function lastLines(file: string, n = 5): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.trim().split('\n').slice(-n).map((l) => `    ${l.slice(0, 300)}`).join('\n');
}

export async function startLocalApiserver(o: LocalApiserverOptions): Promise<LocalApiserver> {
  const env = o.env ?? process.env;
  const progress = o.progress ?? (() => {});
  const apiserver = await ensureKubeApiserver({ env, progress });
  const dir = path.resolve(o.dir);
  await mkdir(path.join(dir, 'certs'), { recursive: true });
  const token = randomBytes(16).toString('hex');
  const tokens = [`${token},lbaas-admin,lbaas-admin,"system:masters"`, ...Object.entries(o.extraTokens ?? {}).map(([t, user]) => `${t},${user},${user}`)];
  await writeFile(path.join(dir, 'tokens.csv'), `${tokens.join('\n')}\n`, { mode: 0o600 });
  const saKey = path.join(dir, 'sa.key');
  const saPub = path.join(dir, 'sa.pub');
  await execFileAsync('openssl', ['genrsa', '-out', saKey, '2048']);
  await execFileAsync('openssl', ['rsa', '-in', saKey, '-pubout', '-out', saPub]);

  const auditArgs: string[] = [];
  if (o.audit) {
    const policy = path.join(dir, 'audit-policy.yaml');
    const users = o.audit.users.map((u) => JSON.stringify(u)).join(', ');
    await writeFile(policy, `apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n  - level: Metadata\n    users: [${users}]\n  - level: None\n`);
    auditArgs.push(`--audit-policy-file=${policy}`, `--audit-log-path=${o.audit.logPath}`, '--audit-log-format=json', '--audit-log-maxsize=0');
  }
  const [etcdPort, peerPort, apiPort] = (await drawPorts(3)) as [number, number, number];
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const etcd = startLogged(
    'etcd',
    [
      '--name=local',
      `--data-dir=${path.join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=local=http://127.0.0.1:${peerPort}`,
      '--log-level=warn',
      '--logger=zap',
    ],
    path.join(dir, 'etcd.log'),
    env,
  );
  const startApi = () =>
    startLogged(
      apiserver,
      [
        `--etcd-servers=${etcdUrl}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${apiPort}`,
        `--cert-dir=${path.join(dir, 'certs')}`,
        `--token-auth-file=${path.join(dir, 'tokens.csv')}`,
        '--authorization-mode=RBAC',
        `--service-account-key-file=${saPub}`,
        `--service-account-signing-key-file=${saKey}`,
        '--service-account-issuer=https://kubernetes.default.svc',
        '--service-cluster-ip-range=10.96.0.0/16',
        // The kubernetes Service's endpoint may not be loopback; nothing here needs it.
        '--endpoint-reconciler-type=none',
        '--enable-priority-and-fairness=false',
        '--profiling=false',
        '--v=0',
        ...auditArgs,
      ],
      path.join(dir, 'apiserver.log'),
      env,
    );
  let api = startApi();
  const stop = async () => {
    await stopChild(api);
    await stopChild(etcd);
  };
  const url = `https://127.0.0.1:${apiPort}`;
  progress(`starting etcd on ${etcdUrl} and kube-apiserver on ${url} …`);
  const waitReady = async () => {
    const deadline = Date.now() + (o.readyTimeoutMs ?? 120_000);
    for (;;) {
      for (const [name, child, log] of [
        ['etcd', etcd, 'etcd.log'],
        ['kube-apiserver', api, 'apiserver.log'],
      ] as const) {
        if (child.exitCode !== null || child.signalCode !== null) {
          await stop();
          throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}) while starting; the end of ${path.join(dir, log)}:\n${await lastLines(path.join(dir, log))}`);
        }
      }
      if ((await probe(`${url}/readyz`, token)) === 200) break;
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`kube-apiserver at ${url} was not ready within ${Math.round((o.readyTimeoutMs ?? 120_000) / 1000)} s; the end of its log:\n${await lastLines(path.join(dir, 'apiserver.log'))}`);
      }
      await new Promise((r) => setTimeout(r, 300));
    }
  };
  await waitReady();
  const restartApiserver = async () => {
    await stopChild(api);
    api = startApi();
    await waitReady();
  };
  const kubeconfig = path.join(dir, 'kubeconfig');
  await writeFile(kubeconfig, kubeconfigText(url, path.join(dir, 'certs', 'apiserver.crt'), 'lbaas-admin', token), { mode: 0o600 });
  return { url, token, kubeconfig, dir, stop, restartApiserver, pids: () => ({ etcd: etcd.pid ?? -1, apiserver: api.pid ?? -1 }) };
}

/** A kubeconfig for one user of the local API server (its self-signed certificate is the CA). */
export function kubeconfigText(url: string, caFile: string, user: string, token: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: local`,
    '  cluster:',
    `    server: ${url}`,
    `    certificate-authority: ${caFile}`,
    'users:',
    `- name: ${user}`,
    '  user:',
    `    token: ${token}`,
    'contexts:',
    `- name: ${user}@local`,
    '  context: {cluster: local, user: ' + user + '}',
    `current-context: ${user}@local`,
    '',
  ].join('\n');
}

/**
 * Creates a Node (or updates it) and reports its status as a kubelet would: Ready or not, with these addresses. The
 * local control plane has no kubelets, so its Nodes are made this way.
 */
export async function putNode(core: CoreV1Api, name: string, addresses: [string, string][], ready = true): Promise<void> {
  try {
    await core.createNode({ body: { metadata: { name } } });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
  }
  const node = (await core.readNode({ name })) as V1Node;
  node.status = {
    conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', reason: 'Reported', lastHeartbeatTime: new Date(), lastTransitionTime: new Date() }],
    addresses: addresses.map(([type, address]) => ({ type, address })),
  };
  await core.replaceNodeStatus({ name, body: node });
}
