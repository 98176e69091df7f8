/**
 * The Kubernetes side of `lbaas kube`: loading the official client (an ES module, so it is imported on demand from this
 * CommonJS build), finding the API server (--kubeconfig / KUBECONFIG, else the in-cluster service account, else
 * ~/.kube/config), and the few calls lbaas kube makes beyond its informers: Service metadata and status patches,
 * Events, Leases.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import type * as K8s from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { invalid, unreachable } from '../common/errors';

export type K8sModule = typeof K8s;

let loaded: Promise<K8sModule> | null = null;
/** The client module, imported once. */
export function k8s(): Promise<K8sModule> {
  loaded ??= import('@kubernetes/client-node');
  return loaded;
}

export interface KubeTarget {
  mod: K8sModule;
  config: K8s.KubeConfig;
  /** Where the configuration came from, for messages. */
  source: string;
  server: string;
  core: K8s.CoreV1Api;
  coordination: K8s.CoordinationV1Api;
}

/**
 * Reads the configuration the way kubectl users expect: an explicit file (flag, then KUBECONFIG), else the service
 * account of the pod lbaas kube runs in, else ~/.kube/config. A file that cannot be read is exit 2 naming the flag.
 */
export async function loadTarget(kubeconfig: string | undefined, env: NodeJS.ProcessEnv): Promise<KubeTarget> {
  const mod = await k8s();
  const config = new mod.KubeConfig();
  let source: string;
  const file = kubeconfig ?? (env.KUBECONFIG || undefined);
  const flag = kubeconfig !== undefined ? '--kubeconfig' : 'KUBECONFIG';
  try {
    if (file !== undefined) {
      // KUBECONFIG may list several files; the first that exists is the one kubectl would start from.
      const first = file.split(path.delimiter).find((f) => existsSync(f));
      if (!first) throw new Error(`${file}: no such file`);
      config.loadFromFile(first);
      source = `${flag} ${first}`;
    } else if (env.KUBERNETES_SERVICE_HOST && existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token')) {
      config.loadFromCluster();
      source = 'the in-cluster service account';
    } else {
      const home = path.join(env.HOME || os.homedir(), '.kube', 'config');
      if (!existsSync(home)) throw new Error(`no --kubeconfig, no KUBECONFIG, not in a cluster, and no ${home}`);
      config.loadFromFile(home);
      source = home;
    }
  } catch (err) {
    throw invalid(`--kubeconfig: ${(err as Error).message}`);
  }
  const cluster = config.getCurrentCluster();
  if (!cluster) throw invalid(`--kubeconfig: ${source} names no current cluster`);
  return {
    mod,
    config,
    source,
    server: cluster.server,
    ...apiClients(mod, config),
  };
}

/**
 * The API clients lbaas kube calls, sharing one keep-alive connection pool. The client library's own `makeApiClient`
 * gives every request a new Agent (KubeConfig.applySecurityAuthentication creates one per call), so every request
 * opened a new TLS connection: a handshake and the CA parsed again each time, the largest part of lbaas kube's CPU at
 * a thousand Services and work for the API server too (`npm run bench -- --kube`, docs/kubernetes.md "Informers").
 */
export function apiClients(mod: K8sModule, config: K8s.KubeConfig): { core: K8s.CoreV1Api; coordination: K8s.CoordinationV1Api } {
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig names no current cluster');
  const settings = mod.createConfiguration({ baseServer: new mod.ServerConfiguration(cluster.server, {}), authMethods: { default: pooledAuthentication(config) } });
  return { core: new mod.CoreV1Api(settings), coordination: new mod.CoordinationV1Api(settings) };
}

/** How many connection pools one process keeps: one per TLS configuration (a rotated client certificate is a new one). */
const MAX_POOLS = 4;

/**
 * The kubeconfig's authentication (headers, token files and exec plugins read as the library reads them, per request),
 * with the request's fresh Agent swapped for a keep-alive one of the same TLS options, made once per distinct options.
 * Proxy agents (a kubeconfig's proxy-url) are left as the library made them.
 */
export function pooledAuthentication(config: K8s.KubeConfig): K8s.SecurityAuthentication & { pools(): number } {
  const pools = new Map<string, http.Agent>();
  return {
    getName: () => 'kubeconfig, pooled connections',
    pools: () => pools.size,
    async applySecurityAuthentication(context) {
      await config.applySecurityAuthentication(context);
      const fresh = context.getAgent() as http.Agent | undefined;
      const tls = fresh?.constructor === https.Agent;
      if (!fresh || (!tls && fresh.constructor !== http.Agent)) return;
      const options = (fresh as unknown as { options: https.AgentOptions }).options;
      const key = optionsKey(tls, options);
      let agent = pools.get(key);
      if (!agent) {
        agent = tls ? new https.Agent({ ...options, keepAlive: true }) : new http.Agent({ ...options, keepAlive: true });
        pools.set(key, agent);
        // The oldest pool is dropped, not destroyed: a request still on it finishes, and its idle connections are
        // unreferenced (they do not keep the process alive) until the server closes them.
        for (const k of pools.keys()) {
          if (pools.size <= MAX_POOLS) break;
          pools.delete(k);
        }
      }
      context.setAgent(agent);
    },
  };
}

/** What makes two agents' connections interchangeable: the TLS material and checks (hashed, not kept as text). */
function optionsKey(tls: boolean, o: https.AgentOptions): string {
  const h = createHash('sha256').update(tls ? 'https' : 'http');
  for (const v of [o.ca, o.cert, o.key, o.pfx, o.passphrase, o.servername, o.rejectUnauthorized]) {
    h.update('\0');
    for (const part of [v].flat()) {
      if (part === undefined || part === null) h.update('-');
      else if (typeof part === 'string' || Buffer.isBuffer(part)) h.update(part);
      else h.update(JSON.stringify(part));
    }
  }
  return h.digest('hex');
}

/** Exit 4 unless the API server answers (and lets us list Services): before anything else starts. */
export async function checkReachable(t: KubeTarget): Promise<void> {
  try {
    await t.core.listServiceForAllNamespaces({ limit: 1 });
  } catch (err) {
    const code = (err as { code?: number }).code;
    const why = typeof code === 'number' && code >= 400 ? `HTTP ${code}: ${statusMessage(err)}` : errorText(err);
    throw unreachable(`cannot reach the Kubernetes API server at ${t.server} (from ${t.source}): ${why}`);
  }
}

/** The HTTP status of a client error, or null for a transport error. */
export function httpStatus(err: unknown): number | null {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'number' && code >= 100 ? code : null;
}

/** The message of a Kubernetes Status body, else the error's own text. */
export function statusMessage(err: unknown): string {
  const body = (err as { body?: unknown }).body;
  try {
    const parsed = typeof body === 'string' ? (JSON.parse(body) as { message?: string }) : (body as { message?: string } | undefined);
    if (parsed?.message) return parsed.message;
  } catch {
    // Not JSON: fall through.
  }
  return errorText(err);
}

function errorText(err: unknown): string {
  const e = err as { message?: string; cause?: { message?: string; code?: string } };
  const cause = e.cause?.code ?? e.cause?.message;
  return `${(e.message ?? String(err)).split('\n')[0]}${cause ? ` (${cause})` : ''}`;
}

/** Options that make a patch call send `application/merge-patch+json`. */
export function mergePatch(mod: K8sModule) {
  return mod.setHeaderOptions('Content-Type', mod.PatchStrategy.MergePatch);
}

/** Options that make a patch call send `application/strategic-merge-patch+json` (lists merged by their keys). */
export function strategicMergePatch(mod: K8sModule) {
  return mod.setHeaderOptions('Content-Type', mod.PatchStrategy.StrategicMergePatch);
}

type CallOptions = ReturnType<K8sModule['setHeaderOptions']>;

/** What of a written object's answer metadataOnly keeps. */
export type WrittenObject = { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string } };

/**
 * Options for a write whose answer is read for the resourceVersion it left at most (a Service patch, its status
 * patch, an Event): a successful answer is cut down to the object's identity and resourceVersion before the client
 * turns it into its model classes. That conversion of every written Service and Event (spec, status, dates) was a good
 * part of lbaas kube's own CPU per Service besides the requests themselves. An error answer is left whole: its Status
 * message is what the logs and Warnings say.
 */
export function metadataOnly(mod: K8sModule, opt?: CallOptions): CallOptions {
  const trim: K8s.ObservableMiddleware = {
    pre: (request) => new mod.Observable(Promise.resolve(request)),
    post: (response) => new mod.Observable(response.httpStatusCode >= 200 && response.httpStatusCode <= 299 ? trimmed(mod, response) : Promise.resolve(response)),
  };
  return { ...opt, middleware: [...(opt?.middleware ?? []), trim], middlewareMergeStrategy: 'append' };
}

async function trimmed(mod: K8sModule, response: K8s.ResponseContext): Promise<K8s.ResponseContext> {
  const whole = JSON.parse(await response.body.text()) as WrittenObject;
  const m = whole.metadata ?? {};
  const text = JSON.stringify({ apiVersion: whole.apiVersion, kind: whole.kind, metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion } });
  return new mod.ResponseContext(response.httpStatusCode, response.headers, { text: () => Promise.resolve(text), binary: () => Promise.resolve(Buffer.from(text)) });
}
