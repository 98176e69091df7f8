/**
 * Objects laid out exactly as the upstream controller (k8s-anexia-ccm) lays them out for a Kubernetes service, seeded
 * through the simulator's admin API over HTTP (`POST /_sim/objects`), as an operator preparing a test Engine would.
 * Written from the upstream naming scheme directly, not from domain/kinds, so that the import tests check lbaas's
 * reading against an independent statement of it: per port a Backend and a Frontend `<port>.<suffix>` (mode tcp, the
 * TCP health check), a Bind `<v4|v6>.<port>.<suffix>` per address (ssl off), a Server `<node>.<port>.<suffix>` per
 * node (check enabled), each tagged `anxccm-svc-uid=<uid>`.
 */
import type { RunningSimulator } from '../../simulator';

export interface UpstreamService {
  uid: string;
  suffix: string;
  /** Port name -> [external (service port), internal (node port)]. */
  ports: Record<string, [number, number]>;
  addresses: string[];
  /** [node name, node address]. */
  nodes: [string, string][];
}

/** POST /_sim/objects; resolves to the new object's identifier. */
export async function seedOverHttp(sim: RunningSimulator, body: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${sim.url}/_sim/objects`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (res.status !== 201) throw new Error(`POST /_sim/objects: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { identifier: string }).identifier;
}

/** Seeds the service on one load balancer as upstream leaves it after a finished reconciliation; returns ids by `kind name`. */
export async function seedUpstream(sim: RunningSimulator, lb: string, s: UpstreamService, tags = [`anxccm-svc-uid=${s.uid}`]): Promise<Record<string, string>> {
  const n = (...parts: string[]) => [...parts, s.suffix].filter((p) => p !== '').join('.');
  const ids: Record<string, string> = {};
  const seed = async (kind: string, fields: Record<string, unknown>) => {
    const id = await seedOverHttp(sim, { kind, fields, state: 'Deployed', tags });
    ids[`${kind} ${String(fields.name)}`] = id;
    return id;
  };
  for (const [port, [external, internal]] of Object.entries(s.ports)) {
    const be = await seed('backend', { name: n(port), mode: 'tcp', health_check: '"adv_check": "tcp-check"', load_balancer: lb });
    const fe = await seed('frontend', { name: n(port), mode: 'tcp', load_balancer: lb, default_backend: be });
    for (const a of s.addresses) await seed('bind', { name: n(a.includes(':') ? 'v6' : 'v4', port), address: a, port: external, ssl: false, frontend: fe });
    for (const [node, ip] of s.nodes) await seed('server', { name: n(node, port), ip, port: internal, check: 'enabled', backend: be });
  }
  return ids;
}

/** The spec lbaas must rebuild for an upstream service on `loadBalancers` (addresses IPv4 first, servers by name). */
export function expectedSpec(s: UpstreamService, loadBalancers: string[]): Record<string, unknown> {
  return {
    serviceUid: s.uid,
    nameSuffix: s.suffix,
    loadBalancers,
    externalAddresses: [...s.addresses].sort((a, b) => Number(a.includes(':')) - Number(b.includes(':')) || (a < b ? -1 : 1)),
    ports: Object.fromEntries(Object.entries(s.ports).map(([p, [external, internal]]) => [p, { external, internal }])),
    servers: [...s.nodes].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, address]) => ({ name, address })),
  };
}
