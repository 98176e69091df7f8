/**
 * `lbaas kube`: the LoadBalancer controller of one Kubernetes cluster (docs/kubernetes.md), running until SIGINT or
 * SIGTERM. A Temporal client and a Kubernetes client, never an Engine client. Bad configuration exits 2 naming the
 * flag; an API server or Temporal that cannot be reached exits 4, before anything is written.
 */
import { invalid } from '../../common/errors';
import { canonicalIp } from '../../domain';
import { checkReachable, loadTarget } from '../../kube/client';
import { CLUSTER_NAME_PATTERN, CLUSTER_NAME_RULE, type KubeSettings } from '../../kube/mapping';
import { startKube } from '../../kube/run';
import { DEFAULT_DISCOVERY_INTERVAL_MS, DEFAULT_TAG_PREFIX } from '../../kube/discovery';
import { connect } from '../connect';
import { parseListenAddress, startHealthServer, type HealthServer } from '../../common/health';
import { KubeHealth } from '../../kube/health';
import type { CliIo } from '../io';

export interface KubeOptions {
  kubeconfig?: string;
  clusterName?: string;
  loadBalancer: string[];
  externalAddress: string[];
  loadBalancerClass?: string;
  namespace: string;
  leaseName?: string;
  leaseDuration: string;
  autoDiscoverLoadBalancer?: string;
  autoDiscoveryTagPrefix?: string;
  discoveryInterval?: string;
  healthAddress?: string;
}

const LOAD_BALANCER = /^[^\s/\p{Cc}]{1,128}$/u;
const NAMESPACE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const fromList = (value: string | undefined) => (value ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');

/** The settings from flags, with the environment filling in what no flag gave. Throws exit-2 errors naming the flag. */
export function kubeSettings(
  opts: KubeOptions,
  env: NodeJS.ProcessEnv,
): KubeSettings & { namespace: string; leaseName: string; leaseDurationMs: number; healthAddress: { host: string; port: number } | null } {
  const clusterName = opts.clusterName ?? env.LBAAS_CLUSTER_NAME;
  if (clusterName === undefined || clusterName === '') throw invalid('--cluster-name: required (or LBAAS_CLUSTER_NAME)');
  if (!CLUSTER_NAME_PATTERN.test(clusterName)) throw invalid(`--cluster-name: ${CLUSTER_NAME_RULE}, got "${clusterName}"`);
  const discovery = discoverySettings(opts, env);
  const loadBalancers = opts.loadBalancer.length > 0 ? opts.loadBalancer : fromList(env.LBAAS_LOAD_BALANCERS);
  if (loadBalancers.length === 0 && discovery === null) {
    throw invalid('--load-balancer: at least one is required when --auto-discover-load-balancer is false (or LBAAS_LOAD_BALANCERS, comma-separated)');
  }
  for (const lb of loadBalancers) if (!LOAD_BALANCER.test(lb)) throw invalid(`--load-balancer: "${lb}" is not a load balancer identifier (1-128 characters, no whitespace or /)`);
  if (new Set(loadBalancers).size !== loadBalancers.length) throw invalid('--load-balancer: given twice');
  const rawAddresses = opts.externalAddress.length > 0 ? opts.externalAddress : fromList(env.LBAAS_EXTERNAL_ADDRESSES);
  const externalAddresses: string[] = [];
  for (const a of rawAddresses) {
    const ip = canonicalIp(a);
    if (ip === null) throw invalid(`--external-address: "${a}" is not an IPv4 or IPv6 address`);
    if (externalAddresses.includes(ip.text)) throw invalid(`--external-address: ${ip.text} given twice`);
    externalAddresses.push(ip.text);
  }
  if (opts.loadBalancerClass === '') throw invalid('--load-balancer-class: must not be empty (leave it out for Services without a class)');
  if (!NAMESPACE.test(opts.namespace)) throw invalid(`--namespace: "${opts.namespace}" is not a namespace name`);
  const leaseName = opts.leaseName ?? 'lbaas-kube';
  if (!/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(leaseName)) throw invalid(`--lease-name: "${leaseName}" is not a Lease name (lower-case DNS subdomain)`);
  const m = /^(\d+)s$/.exec(opts.leaseDuration);
  const seconds = m ? Number(m[1]) : NaN;
  if (!(seconds >= 2 && seconds <= 600)) throw invalid(`--lease-duration: must be whole seconds from 2s to 600s, got "${opts.leaseDuration}"`);
  return {
    clusterName,
    loadBalancers,
    externalAddresses,
    loadBalancerClass: opts.loadBalancerClass ?? null,
    discovery,
    namespace: opts.namespace,
    leaseName,
    leaseDurationMs: seconds * 1000,
    healthAddress: healthAddress(opts, env),
  };
}

/** --health-address or LBAAS_HEALTH_ADDRESS; null (off) when neither is given. */
function healthAddress(opts: KubeOptions, env: NodeJS.ProcessEnv): { host: string; port: number } | null {
  const raw = opts.healthAddress ?? (env.LBAAS_HEALTH_ADDRESS || undefined);
  return raw === undefined ? null : parseListenAddress(raw, '--health-address');
}

/** Upstream's auto-discovery settings (docs/kubernetes.md#discovery); null when turned off. */
function discoverySettings(opts: KubeOptions, env: NodeJS.ProcessEnv): { tagPrefix: string; intervalMs: number } | null {
  const on = opts.autoDiscoverLoadBalancer ?? env.LBAAS_AUTO_DISCOVER_LOAD_BALANCER ?? 'true';
  if (on !== 'true' && on !== 'false') throw invalid(`--auto-discover-load-balancer: must be true or false, got "${on}"`);
  const tagPrefix = opts.autoDiscoveryTagPrefix ?? env.LBAAS_AUTO_DISCOVERY_TAG_PREFIX ?? DEFAULT_TAG_PREFIX;
  if (!/^[^\s/]{1,100}$/.test(tagPrefix)) throw invalid(`--auto-discovery-tag-prefix: must be 1-100 characters without whitespace or /, got "${tagPrefix}"`);
  const raw = opts.discoveryInterval ?? `${DEFAULT_DISCOVERY_INTERVAL_MS / 1000}s`;
  const m = /^(\d+)s$/.exec(raw);
  const seconds = m ? Number(m[1]) : NaN;
  if (!(seconds >= 10 && seconds <= 3600)) throw invalid(`--discovery-interval: must be whole seconds from 10s to 3600s, got "${raw}"`);
  return on === 'true' ? { tagPrefix, intervalMs: seconds * 1000 } : null;
}

export async function kube(opts: KubeOptions, io: CliIo): Promise<void> {
  const settings = kubeSettings(opts, io.env);
  const log = (line: string) => io.stderr(`lbaas kube: ${line}\n`);
  const target = await loadTarget(opts.kubeconfig, io.env);
  await checkReachable(target);
  const temporal = await connect(io.env);
  const health = new KubeHealth();
  let healthServer: HealthServer | null = null;
  try {
    if (settings.healthAddress) {
      const { host, port } = settings.healthAddress;
      healthServer = await startHealthServer(settings.healthAddress, health).catch((err: unknown) => {
        throw invalid(`--health-address: cannot listen on ${host}:${port}: ${(err as Error).message}`);
      });
    }
    log(
      `cluster ${settings.clusterName}, API server ${target.server} (${target.source}), Temporal ${temporal.settings.connection.address} ` +
        `(namespace ${temporal.settings.namespace}, task queue ${temporal.settings.taskQueue}), load balancers ${settings.loadBalancers.join(', ') || 'none given'}, ` +
        `discovery ${settings.discovery ? `by tag ${settings.discovery.tagPrefix}-${settings.clusterName} every ${settings.discovery.intervalMs / 1000} s` : 'off'}, ` +
        `class ${settings.loadBalancerClass ?? '(none)'}` +
        `${healthServer ? `, health on http://${healthServer.address}/healthz, /readyz and /metrics` : ''}`,
    );
    const running = await startKube({
      target,
      lbaas: temporal.lbaas,
      settings,
      lease: { namespace: settings.namespace, name: settings.leaseName, durationMs: settings.leaseDurationMs },
      log,
      env: io.env,
      health,
    });
    const onSignal = () => {
      log('stopping');
      running.stop();
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      await running.done;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  } finally {
    await healthServer?.close();
    await temporal.connection.close().catch(() => undefined);
  }
}
