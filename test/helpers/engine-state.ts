/**
 * Reading the simulator's state the way the workflow tests assert it: which objects live on one load balancer, each
 * as one line with its links written as the linked object's name (identifiers differ per run, names do not), and an
 * oracle of what a spec means that is written here, independently of the planner it checks.
 */
import type { AdminObject, RunningSimulator, StatsSnapshot } from '../../simulator';

export const TAG_PREFIX = 'anxccm-svc-uid=';
export const tagOf = (serviceUid: string) => `${TAG_PREFIX}${serviceUid}`;

const TITLE: Record<string, string> = { backend: 'Backend', frontend: 'Frontend', bind: 'Bind', server: 'Server', loadbalancer: 'LoadBalancer' };

/** The load balancer an object's parent chain leads to, or null. */
export function loadBalancerOf(o: AdminObject, byId: ReadonlyMap<string, AdminObject>): string | null {
  switch (o.kind) {
    case 'backend':
    case 'frontend':
      return String(o.fields.load_balancer);
    case 'bind': {
      const fe = byId.get(String(o.fields.frontend));
      return fe ? String(fe.fields.load_balancer) : null;
    }
    case 'server': {
      const be = byId.get(String(o.fields.backend));
      return be ? String(be.fields.load_balancer) : null;
    }
    default:
      return null;
  }
}

/** Every Backend, Frontend, Bind and Server on `loadBalancer`, tagged or not. */
export function objectsOn(sim: RunningSimulator, loadBalancer: string): AdminObject[] {
  const all = sim.objects();
  const byId = new Map(all.map((o) => [o.identifier, o]));
  return all.filter((o) => o.kind !== 'loadbalancer' && loadBalancerOf(o, byId) === loadBalancer);
}

/** Objects on `loadBalancer` that carry the service's tag. */
export function taggedOn(sim: RunningSimulator, loadBalancer: string, serviceUid: string): AdminObject[] {
  return objectsOn(sim, loadBalancer).filter((o) => o.tags.includes(tagOf(serviceUid)));
}

/**
 * One line per object with the fields docs/spec.md#compared-fields lists, links by name:
 * `Server node-1.http.x ip=10.0.0.11 port=30080 check=enabled backend=http.x`. Sorted.
 */
export function describeObjects(objects: readonly AdminObject[], sim: RunningSimulator): string[] {
  const names = new Map(sim.objects().map((o) => [o.identifier, o.kind === 'loadbalancer' ? 'LB' : o.name]));
  const ref = (id: unknown) => names.get(String(id)) ?? `missing:${String(id)}`;
  return objects
    .map((o) => {
      const f = o.fields;
      const head = `${TITLE[o.kind]} ${o.name}`;
      switch (o.kind) {
        case 'backend':
          return `${head} mode=${f.mode} health_check=${f.health_check} load_balancer=${ref(f.load_balancer)}`;
        case 'frontend':
          return `${head} mode=${f.mode} load_balancer=${ref(f.load_balancer)} default_backend=${ref(f.default_backend)}`;
        case 'bind':
          return `${head} address=${f.address} port=${f.port} ssl=${f.ssl} frontend=${ref(f.frontend)}`;
        case 'server':
          return `${head} ip=${f.ip} port=${f.port} check=${f.check} backend=${ref(f.backend)}`;
        default:
          return head;
      }
    })
    .sort();
}

export interface OracleSpec {
  nameSuffix: string;
  externalAddresses: string[];
  ports: Record<string, { external: number; internal: number }>;
  servers: { name: string; address: string }[];
}

/**
 * The lines `describeObjects` must print for a spec on one load balancer (docs/spec.md#engine-objects), for specs
 * whose addresses are already canonical.
 */
export function expectedLines(spec: OracleSpec): string[] {
  const n = (...parts: string[]) => [...parts, spec.nameSuffix].filter((p) => p !== '').join('.');
  const lines: string[] = [];
  for (const [port, { external, internal }] of Object.entries(spec.ports)) {
    const be = n(port);
    lines.push(`Backend ${be} mode=tcp health_check="adv_check": "tcp-check" load_balancer=LB`);
    lines.push(`Frontend ${be} mode=tcp load_balancer=LB default_backend=${be}`);
    for (const address of spec.externalAddresses) {
      lines.push(`Bind ${n(address.includes(':') ? 'v6' : 'v4', port)} address=${address} port=${external} ssl=false frontend=${be}`);
    }
    for (const server of spec.servers) {
      lines.push(`Server ${n(server.name, port)} ip=${server.address} port=${internal} check=enabled backend=${be}`);
    }
  }
  return lines.sort();
}

/** `kind name` -> how many objects of that kind and name exist among `objects`. */
export function countByName(objects: readonly AdminObject[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const o of objects) counts[`${o.kind} ${o.name}`] = (counts[`${o.kind} ${o.name}`] ?? 0) + 1;
  return counts;
}

/** The requests of a stats snapshot that may change something: POST, PUT and DELETE, with their counts. */
export function writeRequests(stats: StatsSnapshot): Record<string, number> {
  return Object.fromEntries(Object.entries(stats.requests).filter(([route]) => /^(POST|PUT|DELETE|PATCH) /.test(route)));
}

/** Identifier of the one object of `kind` named `name` among `objects`; throws unless there is exactly one. */
export function idOf(objects: readonly AdminObject[], kind: string, name: string): string {
  const found = objects.filter((o) => o.kind === kind && o.name === name);
  if (found.length !== 1) throw new Error(`expected exactly one ${kind} ${name}, found ${found.length}`);
  return (found[0] as AdminObject).identifier;
}

/** A deep copy of objects by identifier, for before/after comparisons. */
export function snapshotById(objects: readonly AdminObject[]): Record<string, AdminObject> {
  return Object.fromEntries(objects.map((o) => [o.identifier, structuredClone(o)]));
}

/** The admin API over HTTP (docs/engine-api.md#admin-api), as an operator or another tool would drive it. */
export const admin = {
  async delete(sim: RunningSimulator, id: string): Promise<void> {
    const res = await fetch(`${sim.url}/_sim/objects/${id}`, { method: 'DELETE' });
    if (res.status !== 204) throw new Error(`DELETE /_sim/objects/${id}: ${res.status} ${await res.text()}`);
  },
  async patch(sim: RunningSimulator, id: string, body: Record<string, unknown>): Promise<AdminObject> {
    const res = await fetch(`${sim.url}/_sim/objects/${id}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (res.status !== 200) throw new Error(`PATCH /_sim/objects/${id}: ${res.status} ${await res.text()}`);
    return (await res.json()) as AdminObject;
  },
  async stats(sim: RunningSimulator): Promise<StatsSnapshot> {
    const res = await fetch(`${sim.url}/_sim/stats`);
    return (await res.json()) as StatsSnapshot;
  },
  async putFaults(sim: RunningSimulator, faults: Record<string, unknown>): Promise<void> {
    const res = await fetch(`${sim.url}/_sim/faults`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(faults) });
    if (res.status !== 200) throw new Error(`PUT /_sim/faults: ${res.status} ${await res.text()}`);
  },
};

/**
 * Seeds what the upstream controller (or a converged pass) leaves on a load balancer for a spec: every object of
 * docs/spec.md#engine-objects, in state `state`, carrying `tags`. Returns identifiers by `kind name`.
 */
export function seedConverged(
  sim: RunningSimulator,
  loadBalancer: string,
  spec: OracleSpec,
  opts: { tags: string[]; state?: 'Deployed' | 'Updated' },
): Record<string, string> {
  const n = (...parts: string[]) => [...parts, spec.nameSuffix].filter((p) => p !== '').join('.');
  const ids: Record<string, string> = {};
  const seed = (kind: string, fields: Record<string, unknown>) => {
    const id = sim.seedObject({ kind, fields, state: opts.state ?? 'Deployed', tags: opts.tags } as never);
    ids[`${kind} ${String(fields.name)}`] = id;
    return id;
  };
  for (const [port, { external, internal }] of Object.entries(spec.ports)) {
    const be = seed('backend', { name: n(port), mode: 'tcp', health_check: '"adv_check": "tcp-check"', load_balancer: loadBalancer });
    const fe = seed('frontend', { name: n(port), mode: 'tcp', load_balancer: loadBalancer, default_backend: be });
    for (const address of spec.externalAddresses) {
      seed('bind', { name: n(address.includes(':') ? 'v6' : 'v4', port), address, port: external, ssl: false, frontend: fe });
    }
    for (const server of spec.servers) seed('server', { name: n(server.name, port), ip: server.address, port: internal, check: 'enabled', backend: be });
  }
  return ids;
}

/**
 * The objects a converged pass leaves for a service of `ports` with name suffix `suffix` and the servers `nodes`, as
 * `<kind> <name>` sorted, twice: the tests that use it put the service on two load balancers.
 */
export function expectedOnTwo(suffix: string, ports: readonly string[], nodes: readonly string[]): string[] {
  const perLb = [
    ...ports.map((p) => `backend ${p}.${suffix}`),
    ...ports.map((p) => `frontend ${p}.${suffix}`),
    ...ports.map((p) => `bind v4.${p}.${suffix}`),
    ...ports.flatMap((p) => nodes.map((n) => `server ${n}.${p}.${suffix}`)),
  ];
  return [...perLb, ...perLb].sort();
}
