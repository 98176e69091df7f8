/**
 * The Kubernetes side of `lbaas kube`: loading the official client (an ES module, so it is imported on demand from this
 * CommonJS build), finding the API server (--kubeconfig / KUBECONFIG, else the in-cluster service account, else
 * ~/.kube/config), and the few calls lbaas kube makes beyond its informers: Service metadata and status patches,
 * Events, Leases.
 */
import { existsSync } from 'node:fs';
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
    core: config.makeApiClient(mod.CoreV1Api),
    coordination: config.makeApiClient(mod.CoordinationV1Api),
  };
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
