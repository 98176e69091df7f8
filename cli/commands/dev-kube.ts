/**
 * `lbaas dev --kube`: beside the local stack, a real Kubernetes control plane (etcd and kube-apiserver,
 * kube/local-apiserver.ts; state in .lbaas/kube) with two Ready demo Nodes, and `lbaas kube` acting on it for the demo
 * load balancers, so that `kubectl apply -f examples/k8s-service.yaml` shows the whole path.
 */
import path from 'node:path';
import type { LbaasClient } from '../../client/service-client';
import { k8s, loadTarget } from '../../kube/client';
import { putNode, startLocalApiserver } from '../../kube/local-apiserver';
import { startKube } from '../../kube/run';

/** The demo Nodes: the servers of examples/service.yaml. */
const DEMO_NODES: [string, string][] = [
  ['node-1', '10.0.0.11'],
  ['node-2', '10.0.0.12'],
];
export const DEV_CLUSTER = 'dev';
const DEV_EXTERNAL_ADDRESS = '203.0.113.20';

export async function startDevKube(o: {
  stateDir: string;
  env: NodeJS.ProcessEnv;
  lbaas: LbaasClient;
  loadBalancers: string[];
  say: (line: string) => void;
}): Promise<{ kubeconfig: string; stop: () => Promise<void> }> {
  const api = await startLocalApiserver({ dir: path.join(o.stateDir, 'kube'), env: o.env, progress: o.say });
  try {
    const mod = await k8s();
    const kc = new mod.KubeConfig();
    kc.loadFromFile(api.kubeconfig);
    const core = kc.makeApiClient(mod.CoreV1Api);
    for (const [name, ip] of DEMO_NODES) await putNode(core, name, [['InternalIP', ip]]);
    const target = await loadTarget(api.kubeconfig, o.env);
    const running = await startKube({
      target,
      lbaas: o.lbaas,
      settings: { clusterName: DEV_CLUSTER, loadBalancers: o.loadBalancers, externalAddresses: [DEV_EXTERNAL_ADDRESS], loadBalancerClass: null },
      lease: { namespace: 'kube-system', name: 'lbaas-kube', durationMs: 15_000 },
      log: (line) => o.say(`lbaas kube: ${line}`),
      env: o.env,
    });
    return {
      kubeconfig: api.kubeconfig,
      stop: async () => {
        running.stop();
        await running.done;
        await api.stop();
      },
    };
  } catch (err) {
    await api.stop();
    throw err;
  }
}
