/** Specs and Engine fixtures shared by the workflow tests. */
import type { RunningSimulator } from '../../simulator';

export function seedLoadBalancer(sim: RunningSimulator, name: string): string {
  return sim.seedObject({ kind: 'loadbalancer', fields: { name, ip_address: '198.51.100.9' }, state: 'Deployed' } as never);
}

/** The docs/spec.md#format example: 2 ports x 2 addresses x 2 servers = 2 Backends, 2 Frontends, 4 Binds, 4 Servers per LB. */
export function exampleSpec(loadBalancers: string[], overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    serviceUid: '9a5f0c1e-3b7d-4c7a-9d8e-0f1a2b3c4d5e',
    nameSuffix: 'web.default.prod',
    loadBalancers,
    externalAddresses: ['203.0.113.10', '2001:db8::10'],
    ports: { http: { external: 80, internal: 30080 }, https: { external: 443, internal: 30443 } },
    servers: [
      { name: 'node-1', address: '10.0.0.11' },
      { name: 'node-2', address: '10.0.0.12' },
    ],
    readiness: { initialInterval: '100ms', backoffCoefficient: 1.5, maximumInterval: '1s', maximumAttempts: 20 },
    ...overrides,
  };
}

/** Objects of the simulator that carry `tag`, as sorted "kind name" lines. */
export function taggedLines(sim: RunningSimulator, tag: string): string[] {
  return sim
    .objects()
    .filter((o) => o.tags.includes(tag))
    .map((o) => `${o.kind} ${o.name}`)
    .sort();
}
