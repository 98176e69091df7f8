/** The service specs the benchmark applies. */

/** The core benchmark's service: 2 ports x 2 addresses x 3 servers = 14 objects per load balancer. */
export const CORE_SHAPE = { ports: 2, addresses: 2, servers: 3, objectsPerLoadBalancer: 2 + 2 + 2 * 2 + 2 * 3 } as const;

const PORTS = { http: { external: 80, internal: 30080 }, https: { external: 443, internal: 30443 } };
/** The nodes of the core workload's servers (and of the fleet's server pool). */
export const SERVERS = [
  { name: 'node-1', address: '10.0.0.11' },
  { name: 'node-2', address: '10.0.0.12' },
  { name: 'node-3', address: '10.0.0.13' },
];

export function coreSpec(serviceUid: string, loadBalancers: string[], readiness?: Record<string, unknown>): Record<string, unknown> {
  return {
    serviceUid,
    nameSuffix: `${serviceUid}.bench`,
    loadBalancers,
    externalAddresses: ['203.0.113.10', '2001:db8::10'],
    ports: PORTS,
    servers: SERVERS,
    ...(readiness ? { readiness } : {}),
  };
}

/** Service `i` of the throughput fleet: the core shape with addresses of its own, on the fleet's load balancers. */
export function fleetSpec(i: number, loadBalancers: string[]): Record<string, unknown> {
  return {
    serviceUid: `bench-fleet-${i}`,
    nameSuffix: `svc-${i}.fleet.bench`,
    loadBalancers,
    externalAddresses: [`198.18.${(i >> 8) & 255}.${i & 255}`, `2001:db8:1::${(i + 1).toString(16)}`],
    ports: PORTS,
    servers: SERVERS,
  };
}
