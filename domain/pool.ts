/**
 * Server pools: a named set of servers `{name, address}` that many services share (`serverPool: <name>` in a spec
 * instead of `servers`). Pure: validation of a pool file, the member changes (set, add, remove) that the pool
 * workflow applies, and the resolution of a pool spec into the inline spec a pass reconciles.
 */
import { isPoolName, POOL_NAME_PATTERN, POOL_NAME_RULE } from './names';
import { IssueList, isRecord, type SpecIssue } from './spec-issues';
import { checkPattern, checkServers } from './spec-servers';
import { formatIssues, SPEC_LIMITS, validateSpec } from './spec';
import type { ServerSpec, ServiceSpec, ValidatedSpec } from './types';

/** A pool file (`lbaas pool set -f pool.yaml`): `{name, servers: [{name, address}, ...]}`. */
export interface PoolFile {
  name: string;
  servers: ServerSpec[];
}

export type PoolFileResult = { ok: true; pool: PoolFile } | { ok: false; issues: SpecIssue[] };

const POOL_KEYS = ['name', 'servers'] as const;

/**
 * Validates a parsed pool file; never throws, reports every violation with its field path. The servers are checked
 * exactly as a spec's `servers` are (domain/spec-servers.ts), and come back canonical and sorted by name.
 */
export function validatePoolFile(input: unknown): PoolFileResult {
  const issues = new IssueList();
  if (!isRecord(input)) {
    issues.add('', `the pool file must be a mapping with the keys ${POOL_KEYS.join(', ')}`);
    return { ok: false, issues: issues.issues };
  }
  issues.unknownKeys(input, POOL_KEYS, '');
  const name = checkPattern(input.name, 'name', POOL_NAME_PATTERN, POOL_NAME_RULE, issues);
  const servers = checkServers(input.servers, issues);
  if (issues.issues.length > 0 || name === null || servers === null) return { ok: false, issues: issues.issues };
  return { ok: true, pool: { name, servers: sortMembers(servers) } };
}

/** Validates members given to a pool workflow (by any Temporal client): the same rules, reported at `base`. */
export function validateMembers(value: unknown, base = 'servers'): { ok: true; servers: ServerSpec[] } | { ok: false; issues: SpecIssue[] } {
  const issues = new IssueList();
  const servers = checkServers(value, issues, base);
  // An unknown key is an issue that leaves the member itself readable (checkServers returns it): refused all the same.
  return servers === null || issues.issues.length > 0 ? { ok: false, issues: issues.issues } : { ok: true, servers: sortMembers(servers) };
}

export { isPoolName, POOL_NAME_RULE };

/** Members in name order (code units): the canonical order, so equal sets compare equal. */
export function sortMembers(servers: readonly ServerSpec[]): ServerSpec[] {
  return [...servers].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export function sameMembers(a: readonly ServerSpec[], b: readonly ServerSpec[]): boolean {
  if (a.length !== b.length) return false;
  const x = sortMembers(a);
  const y = sortMembers(b);
  return x.every((s, i) => s.name === y[i]?.name && s.address === y[i]?.address);
}

/** What a member change did: names added, removed, and whose address changed. */
export interface MemberChange {
  servers: ServerSpec[];
  added: string[];
  removed: string[];
  changed: string[];
}

export function diffMembers(before: readonly ServerSpec[], after: readonly ServerSpec[]): MemberChange {
  const old = new Map(before.map((s) => [s.name, s.address]));
  const now = new Map(after.map((s) => [s.name, s.address]));
  return {
    servers: sortMembers(after),
    added: [...now.keys()].filter((n) => !old.has(n)).sort(),
    removed: [...old.keys()].filter((n) => !now.has(n)).sort(),
    changed: [...now.keys()].filter((n) => old.has(n) && old.get(n) !== now.get(n)).sort(),
  };
}

export const isNoChange = (c: MemberChange) => c.added.length === 0 && c.removed.length === 0 && c.changed.length === 0;

/** Adds members, or changes the address of members already there under that name. */
export function addMembers(current: readonly ServerSpec[], add: readonly ServerSpec[]): MemberChange {
  const next = new Map(current.map((s) => [s.name, s.address]));
  for (const s of add) next.set(s.name, s.address);
  return diffMembers(current, [...next].map(([name, address]) => ({ name, address })));
}

/** Removes members by name; names that are not members are ignored (removing is idempotent). */
export function removeMembers(current: readonly ServerSpec[], names: readonly string[]): MemberChange {
  const drop = new Set(names);
  return diffMembers(current, current.filter((s) => !drop.has(s.name)));
}

/**
 * The members after a pool's changes since a base revision (added or readdressed members `upsert`, names `remove`),
 * from the members of that base revision (sorted by name, as the pool keeps them).
 */
export function applyPoolDelta(base: readonly ServerSpec[], delta: { upsert: readonly ServerSpec[]; remove: readonly string[] }): ServerSpec[] {
  return removeMembers(addMembers(base, delta.upsert).servers, delta.remove).servers;
}

/**
 * The inline spec a pass reconciles: the pool spec with the pool's members as its servers. The Server objects are
 * named from the servers exactly as for inline servers, so a service moved to an equal pool means the same objects.
 * An empty pool means no Server objects: Backends, Frontends and Binds stay, and the load balancer has nothing to
 * send traffic to. The spec was validated where it entered; the members are checked here, because they arrive by a
 * signal that any Temporal client can send (contract/schema.ts reads only its envelope). Fails, naming the pool, on
 * a bad member or when the members would exceed the objects-per-load-balancer limit.
 */
export function resolvePool(spec: ValidatedSpec, servers: unknown): { ok: true; spec: ValidatedSpec } | { ok: false; message: string } {
  const pool = spec.serverPool ?? '';
  const members = validateMembers(servers);
  if (!members.ok) return { ok: false, message: `serverPool ${pool}: its members are invalid:\n${formatIssues(members.issues)}` };
  const rest: ServiceSpec = { ...spec, servers: members.servers };
  delete rest.serverPool;
  const ports = Object.keys(spec.ports).length;
  const objects = ports * (2 + spec.externalAddresses.length + members.servers.length);
  if (objects > SPEC_LIMITS.objectsPerLoadBalancer) {
    return {
      ok: false,
      message: `serverPool ${pool}: its ${members.servers.length} servers make ${objects} Engine objects per load balancer (ports x (2 + externalAddresses + servers)); at most ${SPEC_LIMITS.objectsPerLoadBalancer} are supported`,
    };
  }
  // A validated spec with validated members, within the limit validateSpec would have checked: still validated.
  return { ok: true, spec: rest as ValidatedSpec };
}

/**
 * A resolved spec with only the servers named (a pool-delta pass's joining members): a subset of servers that were
 * within every limit still is, so it stays validated without being parsed again.
 */
export function withOnlyServers(spec: ValidatedSpec, names: ReadonlySet<string>): ValidatedSpec {
  return { ...spec, servers: spec.servers.filter((s) => names.has(s.name)) } as ValidatedSpec;
}

/**
 * resolvePool for the spec document as written (what controllers hold and passes validate again): the document
 * with `serverPool` replaced by the pool's `servers`, validated as an inline spec, so every limit is checked with
 * the real server count. Errors name the pool.
 */
export function resolveSpecDocument(raw: Record<string, unknown>, servers: readonly ServerSpec[]): { ok: true; raw: Record<string, unknown> } | { ok: false; message: string } {
  const pool = String(raw.serverPool);
  const doc: Record<string, unknown> = { ...raw, servers: sortMembers(servers) };
  delete doc.serverPool;
  const r = validateSpec(doc);
  if (!r.ok) return { ok: false, message: `serverPool ${pool}: with the pool's ${servers.length} servers the spec is invalid:\n${formatIssues(r.issues)}` };
  return { ok: true, raw: doc };
}
