/**
 * `lbaas import`'s reconstruction: the spec of every service the upstream controller (k8s-anexia-ccm) left on some
 * load balancers, rebuilt from the objects and the naming scheme, and checked with the planner itself. A spec is
 * exact when planning it against what the load balancers hold creates and destroys nothing: then `lbaas apply`
 * adopts every object with zero Engine writes. Whatever stands in the way is a problem, named down to the object.
 * Pure and deterministic: it runs inside the importServices workflow.
 */
import { canonicalIp } from './ip';
import { bindName, readSuffix, serverNameOf } from './import-names';
import type { ImportedService, ImportProblem, InventoryObject, LoadBalancerInventory, SpecDocument } from './import-types';
import { KIND_TITLE, linkFieldOf } from './kinds';
import { BIND_SSL, MODE_TCP, SERVER_CHECK_ENABLED, TCP_HEALTH_CHECK } from './names';
import { desiredObjects } from './desired';
import { planLoadBalancer } from './plan';
import { formatIssues, validateSpec } from './spec';
import { classifyState } from './state';
import type { Kind, ObservedObject, PortSpec, ServiceSpec } from './types';

export type { ImportedService, ImportProblem, InventoryObject, LoadBalancerInventory, SpecDocument } from './import-types';

/** The fields the upstream controller sets to fixed values, with those values (domain/names.ts). */
const CONTROLLER_DEFAULTS: Partial<Record<Kind, Record<string, string | boolean>>> = {
  backend: { mode: MODE_TCP, health_check: TCP_HEALTH_CHECK },
  frontend: { mode: MODE_TCP },
  bind: { ssl: BIND_SSL },
  server: { check: SERVER_CHECK_ENABLED },
};

/** The uids of every service with tagged objects in the inventories, sorted. */
export function servicesIn(inventories: readonly LoadBalancerInventory[]): string[] {
  return [...new Set(inventories.flatMap((i) => i.objects.flatMap((o) => o.serviceUids)))].sort();
}

/** Rebuilds the spec of one service from what the given load balancers hold. */
export function reconstructService(serviceUid: string, inventories: readonly LoadBalancerInventory[]): ImportedService {
  const problems: ImportProblem[] = [];
  const notes: string[] = [];
  const at = (lb: string, o: InventoryObject, message: string): ImportProblem => ({ loadBalancer: lb, kind: o.kind, name: o.name, identifier: o.identifier, message });
  const held = inventories
    .map((inv) => ({ lb: inv.loadBalancer, all: inv.objects, mine: inv.objects.filter((o) => o.serviceUids.includes(serviceUid)) }))
    .filter((h) => h.mine.length > 0);
  const loadBalancers = held.map((h) => h.lb);
  const objects = held.reduce((n, h) => n + h.mine.length, 0);
  const result = (spec: SpecDocument | null): ImportedService => ({ serviceUid, loadBalancers, objects, spec, problems, notes });

  for (const { lb, all, mine } of held) {
    const byId = new Map(all.map((o) => [o.identifier, o]));
    for (const o of mine) {
      const others = o.serviceUids.filter((u) => u !== serviceUid);
      if (others.length > 0) problems.push(at(lb, o, `is also tagged for ${others.join(', ')}: one object cannot belong to two specs`));
      for (const [field, want] of Object.entries(CONTROLLER_DEFAULTS[o.kind] ?? {})) {
        if (o.fields[field] !== want) {
          problems.push(at(lb, o, `${field} is ${JSON.stringify(o.fields[field])}, not the controller's ${JSON.stringify(want)}: lbaas would replace it`));
        }
      }
      const link = linkOf(o);
      if (link !== null) {
        const parent = byId.get(link.id);
        if (!parent || !parent.serviceUids.includes(serviceUid)) {
          problems.push(at(lb, o, `links (${link.field}) to ${parent ? `${KIND_TITLE[parent.kind]} ${parent.name}` : link.id}, which is not tagged for this service`));
        }
      }
      const state = classifyState(o.state);
      if (state !== 'ok') notes.push(`${KIND_TITLE[o.kind]} ${o.name} on ${lb} is ${o.state}: apply ${state === 'failed' ? 'recovers it in place (state "0")' : 'waits for it'}`);
    }
  }

  const backends = held.flatMap(({ lb, mine }) => mine.filter((o) => o.kind === 'backend').map((o) => ({ lb, o })));
  if (backends.length === 0) {
    problems.push({ message: 'no Backend is tagged for this service on the given load balancers: there is no port to rebuild a spec from' });
    return result(null);
  }
  const reading = readSuffix(backends.map((b) => b.o.name));
  if (reading.note) notes.push(reading.note);
  for (const b of backends) {
    if (reading.ports.has(b.o.name)) continue;
    problems.push(at(b.lb, b.o, `does not fit <port>.<suffix> with the suffix "${reading.nameSuffix}" the other Backends share`));
  }
  const { nameSuffix } = reading;
  const portNames = [...new Set(reading.ports.values())].sort();

  // Per port: the external port from its Binds, the internal one from its Servers, over every load balancer.
  const externals = new Map<string, Map<number, string[]>>();
  const internals = new Map<string, Map<number, string[]>>();
  const addresses = new Map<string, string>();
  const servers = new Map<string, Map<string, string[]>>();
  const record = <K,>(outer: Map<string, Map<K, string[]>>, key: string, value: K, where: string) => {
    const inner = outer.get(key) ?? new Map<K, string[]>();
    outer.set(key, inner.set(value, [...(inner.get(value) ?? []), where]));
  };
  for (const { lb, mine } of held) {
    const byId = new Map(mine.map((o) => [o.identifier, o]));
    const portOf = (backendId: unknown) => {
      const be = byId.get(String(backendId));
      return be && be.kind === 'backend' ? reading.ports.get(be.name) : undefined;
    };
    for (const o of mine) {
      const where = `${o.name} on ${lb}`;
      if (o.kind === 'frontend') {
        const port = portOf(o.fields.default_backend);
        if (port !== undefined && o.name !== byId.get(String(o.fields.default_backend))?.name) {
          problems.push(at(lb, o, `forwards to Backend ${byId.get(String(o.fields.default_backend))?.name}, whose name it should carry`));
        }
      } else if (o.kind === 'bind') {
        const fe = byId.get(String(o.fields.frontend));
        const port = fe && fe.kind === 'frontend' ? portOf(fe.fields.default_backend) : undefined;
        if (port === undefined) continue;
        const ip = canonicalIp(String(o.fields.address));
        if (!ip || ip.text !== o.fields.address) {
          problems.push(at(lb, o, `address ${JSON.stringify(o.fields.address)} is not an address as the controller writes it`));
          continue;
        }
        if (o.name !== bindName(ip.family, port, nameSuffix)) {
          problems.push(at(lb, o, `does not fit the naming scheme: a Bind of ${ip.text} on port "${port}" is named ${bindName(ip.family, port, nameSuffix)}`));
        }
        addresses.set(ip.text, ip.family);
        record(externals, port, Number(o.fields.port), where);
      } else if (o.kind === 'server') {
        const port = portOf(o.fields.backend);
        if (port === undefined) continue;
        const server = serverNameOf(o.name, port, nameSuffix);
        if (server === null) {
          problems.push(at(lb, o, `does not fit <server>.<port>.<suffix> for port "${port}" and suffix "${nameSuffix}"`));
          continue;
        }
        record(servers, server, String(o.fields.ip), where);
        record(internals, port, Number(o.fields.port), where);
      }
    }
  }

  const ports: Record<string, PortSpec> = {};
  let complete = true;
  for (const port of portNames) {
    const external = single(externals.get(port), `port "${port}": its Binds disagree on the external port`, problems);
    const internal = single(internals.get(port), `port "${port}": its Servers disagree on the internal port`, problems);
    if (!externals.has(port)) problems.push({ message: `port "${port}": no Bind, so its external port cannot be read` });
    if (!internals.has(port)) problems.push({ message: `port "${port}": no Server, so its internal (node) port cannot be read` });
    if (external === undefined || internal === undefined) complete = false;
    else ports[port] = { external, internal };
  }
  const serverList = [...servers.keys()].sort().map((name) => {
    const address = single(servers.get(name), `server "${name}": its Servers disagree on the address`, problems);
    return { name, address: address ?? '' };
  });
  if (!complete || serverList.some((s) => s.address === '')) return result(null);

  const spec: SpecDocument = {
    serviceUid,
    nameSuffix,
    loadBalancers,
    externalAddresses: [...addresses].sort(([a, fa], [b, fb]) => (fa === fb ? (a < b ? -1 : 1) : fa === 'v4' ? -1 : 1)).map(([a]) => a),
    ports,
    servers: serverList,
  };
  const valid = validateSpec(spec);
  if (!valid.ok) {
    problems.push({ message: `the rebuilt spec is not valid:\n${formatIssues(valid.issues)}` });
    return result(null);
  }
  verify(valid.spec, held, problems);
  return result(spec);
}

/**
 * The planner's verdict on every load balancer: anything it would create or destroy is a difference the checks above
 * did not already name. States are taken as ready here: a failed or settling object is a note, not a difference.
 */
function verify(spec: ServiceSpec, held: { lb: string; all: InventoryObject[]; mine: InventoryObject[] }[], problems: ImportProblem[]): void {
  const named = new Set(problems.flatMap((p) => (p.identifier === undefined ? [] : [p.identifier])));
  const namedAt = new Set(problems.map((p) => `${p.loadBalancer} ${p.kind} ${p.name}`));
  for (const { lb, all, mine } of held) {
    const snapshot = { loadBalancer: lb, objects: mine.map((o) => ({ ...o, state: 'Deployed', tagged: true }) as unknown as ObservedObject) };
    const desired = desiredObjects(spec, lb);
    const plan = planLoadBalancer(desired, snapshot, spec.failedResources);
    // Only causes are reported: what goes because its parent goes, or comes because its parent comes, follows from them.
    for (const d of plan.destroy) {
      if (named.has(d.identifier) || d.reason === 'parent replaced') continue;
      problems.push({ loadBalancer: lb, kind: d.kind, name: d.name, identifier: d.identifier, message: `apply would destroy it (${d.reason}): it does not fit the spec rebuilt from all given load balancers` });
    }
    const created = new Set(plan.objects.filter((p) => p.action.type === 'create').map((p) => p.desired.key));
    for (const p of plan.objects) {
      if (p.action.type !== 'create' || (p.desired.parent !== null && created.has(p.desired.parent)) || namedAt.has(`${lb} ${p.desired.kind} ${p.desired.name}`)) continue;
      problems.push({ loadBalancer: lb, kind: p.desired.kind, name: p.desired.name, message: 'missing here: the spec rebuilt from all given load balancers has it, so apply would create it' });
    }
    // Untagged objects with one of the service's names: lbaas never touches them and would create tagged twins.
    const names = new Set(desired.map((d) => `${d.kind} ${d.name}`));
    for (const o of all) {
      if (o.serviceUids.length === 0 && names.has(`${o.kind} ${o.name}`)) {
        problems.push({ loadBalancer: lb, kind: o.kind, name: o.name, identifier: o.identifier, message: `is not tagged anxccm-svc-uid=${spec.serviceUid} but has one of the service's names: whose it is cannot be told` });
      }
    }
  }
}

/** The one value all observations agree on; a problem listing the values and where each was seen otherwise. */
function single<T>(seen: Map<T, string[]> | undefined, message: string, problems: ImportProblem[]): T | undefined {
  if (!seen || seen.size === 0) return undefined;
  if (seen.size === 1) return [...seen.keys()][0];
  problems.push({ message: `${message}: ${[...seen].map(([v, where]) => `${String(v)} (${where.join(', ')})`).join('; ')}` });
  return undefined;
}

function linkOf(o: InventoryObject): { field: string; id: string } | null {
  const field = linkFieldOf(o.kind);
  return field === null ? null : { field, id: String(o.fields[field]) };
}
