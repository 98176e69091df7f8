/**
 * What a converged pass leaves for a pool-delta pass (docs/architecture.md, "Pool-delta passes"): the identifiers of
 * the service's Backends and Servers on each load balancer, keyed by their desired key (`backend:<port>`,
 * `server:<port>:<member>`), with the members and addresses they were created for. From it, a new pool revision
 * whose only change is the member set is planned without reading the Engine: create the joining members' Servers
 * under the known Backends, delete the leaving members' Servers by identifier. Pure and deterministic: the
 * controller (a workflow) plans with it and keeps it in its continue-as-new snapshot.
 */
import { backendKey, desiredServer } from './desired';
import type { DesiredOf, Plan, ServerSpec, ServiceSpec } from './types';

/** One load balancer's Backends and Servers: desired key -> Engine identifier. */
export type LoadBalancerIndex = Record<string, string>;

/** The identifiers a converged pass reconciled, and for which spec revision, pool revision and members. */
export interface PoolIndex {
  /** The controller's spec revision the pass reconciled. */
  revision: number;
  pool: string;
  /** The pool revision whose members the identifiers are for. */
  poolRevision: number;
  /** Each member's address at that revision (a member whose address changes is not a join or a leave). */
  members: Record<string, string>;
  loadBalancers: Record<string, LoadBalancerIndex>;
}

/**
 * The index's size at most, in bytes of JSON (indexBytes): it travels in a load balancer's result, the pass's result
 * and the controller's continue-as-new snapshot, whose payloads Temporal limits to 2 MiB. 640 KiB hold some 10,000
 * Backends and Servers of names like `node-01234` (about 60 bytes each, keys and identifiers), and the members with
 * their addresses beside them; the snapshot keeps the pool's members too, as large as those. A service beyond it (more
 * Servers, or the validator's longest names) keeps no index, and every pool change runs the full pass.
 */
export const MAX_INDEX_BYTES = 640 * 1024;

/**
 * Servers one pool-delta pass writes at most: a group activity's members (workflows/reconcile-lb.ts,
 * MAX_GROUP_MEMBERS). Beyond it (a pool that changed a lot at once), the full pass runs: it reads every object
 * anyway at that point in request terms, and sees drift as well.
 */
export const MAX_DELTA_SERVERS = 1_000;

const isServerKey = (key: string) => key.startsWith('server:');
const isIndexedKey = (key: string) => key.startsWith('backend:') || isServerKey(key);

/** The index of a load balancer whose plan is empty (every object kept); null while anything is still to do. */
export function indexOfPlan(plan: Plan): LoadBalancerIndex | null {
  if (plan.destroy.length > 0) return null;
  const index: LoadBalancerIndex = {};
  for (const p of plan.objects) {
    if (p.action.type !== 'keep') return null;
    if (p.desired.kind === 'backend' || p.desired.kind === 'server') index[p.desired.key] = p.action.identifier;
  }
  return index;
}

/** The size of a flat string map as JSON, in bytes for ASCII (keys, identifiers, names and addresses are ASCII). */
function mapBytes(map: Record<string, string>): number {
  let n = 2;
  for (const [k, v] of Object.entries(map)) n += k.length + v.length + 6;
  return n;
}

/** The size of one load balancer's index as JSON. */
export function indexBytes(index: LoadBalancerIndex): number {
  return mapBytes(index);
}

/** The size of a pool index as JSON (within a few bytes): what it adds to a snapshot. */
export function poolIndexBytes(index: Pick<PoolIndex, 'members' | 'loadBalancers'>): number {
  return 200 + mapBytes(index.members) + Object.entries(index.loadBalancers).reduce((n, [lb, ids]) => n + lb.length + 4 + mapBytes(ids), 0);
}

/** One Server the delta creates: under the Backend `backend` of `port` on `loadBalancer`. */
export interface DeltaCreate {
  loadBalancer: string;
  backend: string;
  desired: DesiredOf<'server'>;
}

/** One Server the delta deletes, by the identifier the index holds. */
export interface DeltaDestroy {
  loadBalancer: string;
  key: string;
  identifier: string;
  name: string;
}

export interface DeltaPlan {
  joins: ServerSpec[];
  leaves: string[];
  creates: DeltaCreate[];
  destroys: DeltaDestroy[];
}

/**
 * The pool-delta plan that takes the service from the index's members to `members`, or why the full pass must run
 * instead (`full`). `spec` is the service's validated spec; the index must be of its revision (the caller checks).
 */
export function planPoolDelta(index: PoolIndex, spec: ServiceSpec, members: readonly ServerSpec[]): DeltaPlan | { full: string } {
  const lbs = [...spec.loadBalancers].sort();
  const indexed = Object.keys(index.loadBalancers).sort();
  if (lbs.join('\n') !== indexed.join('\n')) return { full: 'the index is not of the spec\'s load balancers' };
  const now = new Map(members.map((m) => [m.name, m.address]));
  const joins = members.filter((m) => index.members[m.name] === undefined);
  const leaves = Object.keys(index.members).filter((name) => !now.has(name)).sort();
  const moved = members.filter((m) => index.members[m.name] !== undefined && index.members[m.name] !== m.address);
  if (moved.length > 0) return { full: `member ${moved[0]?.name} changed its address` };
  const ports = Object.keys(spec.ports).sort();
  const creates: DeltaCreate[] = [];
  const destroys: DeltaDestroy[] = [];
  for (const lb of lbs) {
    const ids = index.loadBalancers[lb] as LoadBalancerIndex;
    for (const port of ports) {
      const backend = ids[backendKey(port)];
      if (backend === undefined) return { full: `no Backend of port ${port || '(unnamed)'} on ${lb} in the index` };
      const ps = spec.ports[port];
      if (ps === undefined) continue;
      for (const m of joins) creates.push({ loadBalancer: lb, backend, desired: desiredServer(port, ps, m, spec.nameSuffix) });
      for (const name of leaves) {
        const key = `server:${port}:${name}`;
        const identifier = ids[key];
        if (identifier === undefined) return { full: `no Server ${key} on ${lb} in the index` };
        destroys.push({ loadBalancer: lb, key, identifier, name: desiredServer(port, ps, { name, address: index.members[name] as string }, spec.nameSuffix).name });
      }
    }
  }
  if (creates.length + destroys.length > MAX_DELTA_SERVERS) return { full: `${creates.length + destroys.length} Servers to write, more than a delta pass writes (${MAX_DELTA_SERVERS})` };
  return { joins, leaves, creates, destroys };
}

/** The index after a delta pass created `created` (desired key -> identifier per load balancer) and removed `leaves`. */
export function advancePoolIndex(index: PoolIndex, o: { poolRevision: number; members: readonly ServerSpec[]; created: { loadBalancer: string; key: string; identifier: string }[]; destroyed: { loadBalancer: string; key: string }[] }): PoolIndex {
  const loadBalancers: Record<string, LoadBalancerIndex> = {};
  for (const [lb, ids] of Object.entries(index.loadBalancers)) loadBalancers[lb] = { ...ids };
  for (const d of o.destroyed) delete loadBalancers[d.loadBalancer]?.[d.key];
  for (const c of o.created) {
    const lb = loadBalancers[c.loadBalancer];
    if (lb) lb[c.key] = c.identifier;
  }
  return { ...index, poolRevision: o.poolRevision, members: Object.fromEntries(o.members.map((m) => [m.name, m.address])), loadBalancers };
}

/**
 * An index as a snapshot holds it, checked (a snapshot of another build, or one that was cut): null when anything is
 * off, and the next pool change then runs the full pass.
 */
export function readPoolIndex(raw: unknown): PoolIndex | null {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return null;
  const r = raw as Record<string, unknown>;
  const int = (x: unknown) => typeof x === 'number' && Number.isInteger(x) && x >= 0;
  const strings = (x: unknown): x is Record<string, string> => typeof x === 'object' && x !== null && !Array.isArray(x) && Object.values(x).every((v) => typeof v === 'string');
  if (!int(r.revision) || !int(r.poolRevision) || typeof r.pool !== 'string' || !strings(r.members)) return null;
  const lbs = r.loadBalancers;
  if (typeof lbs !== 'object' || lbs === null || Array.isArray(lbs)) return null;
  for (const ids of Object.values(lbs)) if (!strings(ids) || !Object.keys(ids).every(isIndexedKey)) return null;
  return { revision: r.revision as number, pool: r.pool, poolRevision: r.poolRevision as number, members: r.members, loadBalancers: lbs as Record<string, LoadBalancerIndex> };
}

/** Members as an index records them: name -> address. */
export function membersOf(servers: readonly ServerSpec[]): Record<string, string> {
  return Object.fromEntries(servers.map((m) => [m.name, m.address]));
}
