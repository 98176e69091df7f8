/**
 * The parts of the core/v1 Service and Node that lbaas kube reads. The official client's V1Service and V1Node fit
 * these shapes; keeping our own narrow types lets the mapping (kube/mapping.ts) stay pure and load without the client,
 * which is an ES module loaded on demand (kube/client.ts).
 */
export interface KubeMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  finalizers?: string[];
  deletionTimestamp?: Date | string;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
}

export interface KubeServicePort {
  name?: string;
  protocol?: string;
  port: number;
  nodePort?: number;
}

export interface KubeService {
  metadata: KubeMeta & { namespace: string; uid: string };
  spec?: {
    type?: string;
    loadBalancerClass?: string;
    ports?: KubeServicePort[];
    loadBalancerIP?: string;
    loadBalancerSourceRanges?: string[];
    externalTrafficPolicy?: string;
    ipFamilies?: string[];
  };
  status?: {
    loadBalancer?: { ingress?: { ip?: string; hostname?: string; ports?: { port: number; protocol?: string }[] }[] };
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}

export interface KubeNode {
  metadata: KubeMeta;
  spec?: { taints?: { key: string; value?: string; effect?: string }[] };
  status?: { conditions?: { type: string; status: string }[]; addresses?: { type: string; address: string }[] };
}
