/**
 * The invariants a chaos run checks over the Engine's final state (GET /_sim/objects), over Temporal's histories and
 * over the logs. Pure functions over plain data, so each can be shown to fail on a crafted input.
 */
import type { AdminObject } from '../../simulator';
import { desiredObjects, SERVICE_TAG_PREFIX, serviceTag } from '../../domain';
import type { DesiredObject, ServiceSpec } from '../../domain/types';

export interface Invariant {
  name: string;
  held: boolean;
  /** Why it broke (first few reasons), or what it covered when it held. */
  detail: string[];
}

const MAX_DETAIL = 12;

function invariant(name: string, problems: string[], covered: string): Invariant {
  const detail = problems.length === 0 ? [covered] : [...problems.slice(0, MAX_DETAIL), ...(problems.length > MAX_DETAIL ? [`… ${problems.length - MAX_DETAIL} more`] : [])];
  return { name, held: problems.length === 0, detail };
}

const LINK: Record<string, string | undefined> = { frontend: 'default_backend', bind: 'frontend', server: 'backend' };
const OK_STATES = new Set(['Deployed', 'Updated']);

/** The load balancer an object's parent chain leads to, or null (a dangling link). */
export function loadBalancerOf(o: AdminObject, byId: ReadonlyMap<string, AdminObject>): string | null {
  switch (o.kind) {
    case 'backend':
    case 'frontend':
      return String(o.fields.load_balancer);
    case 'bind':
      return (byId.get(String(o.fields.frontend))?.fields.load_balancer as string | undefined) ?? null;
    case 'server':
      return (byId.get(String(o.fields.backend))?.fields.load_balancer as string | undefined) ?? null;
    default:
      return null;
  }
}

/** Compared fields of a desired object, its link written as the parent's `kind name`. */
function desiredLine(d: DesiredObject, byKey: ReadonlyMap<string, DesiredObject>): string {
  const fields: Record<string, unknown> = { ...d.fields };
  const link = LINK[d.kind];
  if (link) {
    const parent = d.parent ? byKey.get(d.parent) : undefined;
    fields[link] = parent ? `${parent.kind} ${parent.name}` : '?';
  }
  return `${d.kind} ${JSON.stringify(sorted(fields))}`;
}

/**
 * The same line for an existing object, over the same keys. A link is written as the target's `kind name` only when
 * the target belongs to the same service on the same load balancer; otherwise as `FOREIGN <id>`, so an object hung
 * under a look-alike parent never passes for a desired one.
 */
function actualLine(o: AdminObject, keys: readonly string[], mine: ReadonlyMap<string, AdminObject>): string {
  const fields: Record<string, unknown> = {};
  for (const k of keys) fields[k] = o.fields[k];
  const link = LINK[o.kind];
  if (link) {
    const target = mine.get(String(o.fields[link]));
    fields[link] = target ? `${target.kind} ${target.name}` : `FOREIGN ${String(o.fields[link])}`;
  }
  return `${o.kind} ${JSON.stringify(sorted(fields))}`;
}

function sorted(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Multiset difference a - b. */
function minus(a: readonly string[], b: readonly string[]): string[] {
  const left = new Map<string, number>();
  for (const x of b) left.set(x, (left.get(x) ?? 0) + 1);
  const out: string[] = [];
  for (const x of a) {
    const n = left.get(x) ?? 0;
    if (n > 0) left.set(x, n - 1);
    else out.push(x);
  }
  return out;
}

export interface ObjectCheckInput {
  objects: readonly AdminObject[];
  /** Every object that existed before the run (load balancers and foreign objects), by identifier. */
  before: Readonly<Record<string, AdminObject>>;
  /** The final validated spec of each service in the run. */
  services: readonly ServiceSpec[];
}

/** Exactly the desired objects, per service and load balancer, all ready; nothing of the service anywhere else. */
export function exactlyDesired(input: ObjectCheckInput): Invariant {
  const byId = new Map(input.objects.map((o) => [o.identifier, o]));
  const problems: string[] = [];
  let objects = 0;
  for (const spec of input.services) {
    const tag = serviceTag(spec.serviceUid);
    const tagged = input.objects.filter((o) => o.kind !== 'loadbalancer' && o.tags.includes(tag));
    const byLb = new Map<string, AdminObject[]>();
    for (const o of tagged) {
      const lb = loadBalancerOf(o, byId) ?? '(dangling)';
      byLb.set(lb, [...(byLb.get(lb) ?? []), o]);
    }
    for (const lb of spec.loadBalancers) {
      const desired = desiredObjects(spec, lb);
      const byKey = new Map(desired.map((d) => [d.key, d]));
      const keysOf = new Map(desired.map((d) => [d.kind, Object.keys(d.fields)]));
      const mine = byLb.get(lb) ?? [];
      const mineById = new Map(mine.map((o) => [o.identifier, o]));
      const want = desired.map((d) => desiredLine(d, byKey));
      const have = mine.map((o) => actualLine(o, keysOf.get(o.kind as DesiredObject['kind']) ?? ['name'], mineById));
      for (const m of minus(want, have)) problems.push(`${spec.serviceUid} on ${lb}: missing ${m}`);
      for (const x of minus(have, want)) problems.push(`${spec.serviceUid} on ${lb}: unexpected ${x}`);
      for (const o of mine) if (!OK_STATES.has(o.state)) problems.push(`${spec.serviceUid} on ${lb}: ${o.kind} ${o.name} (${o.identifier}) is ${o.state}`);
      objects += desired.length;
      byLb.delete(lb);
    }
    for (const [lb, rest] of byLb) problems.push(`${spec.serviceUid}: ${rest.length} objects left on ${lb}, which is not in its spec (${rest.map((o) => `${o.kind} ${o.name}`).slice(0, 3).join(', ')})`);
  }
  return invariant('every service has exactly its desired objects, all ready', problems, `${input.services.length} services, ${objects} desired objects matched by kind, name and fields`);
}

/** No two objects of one service on one load balancer with the same kind, name and compared fields. */
export function noDuplicates(input: ObjectCheckInput): Invariant {
  const byId = new Map(input.objects.map((o) => [o.identifier, o]));
  const counts = new Map<string, string[]>();
  for (const o of input.objects) {
    if (o.kind === 'loadbalancer') continue;
    for (const tag of o.tags.filter((t) => t.startsWith(SERVICE_TAG_PREFIX))) {
      const f = o.fields;
      const key = JSON.stringify([tag, loadBalancerOf(o, byId), o.kind, sorted(pick(f, ['name', 'mode', 'health_check', 'load_balancer', 'default_backend', 'address', 'port', 'ssl', 'frontend', 'ip', 'check', 'backend']))]);
      counts.set(key, [...(counts.get(key) ?? []), o.identifier]);
    }
  }
  const problems = [...counts].filter(([, ids]) => ids.length > 1).map(([key, ids]) => `${ids.length} copies: ${key} (${ids.join(', ')})`);
  return invariant('zero duplicates', problems, `${counts.size} distinct tagged objects`);
}

function pick(o: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));
}

/** Every object the run created carries exactly one tag, the tag of one of the run's services. */
export function everyCreatedObjectTagged(input: ObjectCheckInput): Invariant {
  const ours = new Set(input.services.map((s) => serviceTag(s.serviceUid)));
  const problems: string[] = [];
  let created = 0;
  for (const o of input.objects) {
    if (o.kind === 'loadbalancer' || o.identifier in input.before) continue;
    created++;
    if (o.tags.length !== 1 || !ours.has(o.tags[0] as string)) problems.push(`${o.kind} ${o.name} (${o.identifier}) has tags [${o.tags.join(', ')}]`);
  }
  return invariant('zero untagged (or wrongly tagged) objects created by us', problems, `${created} objects created by the run, each with exactly one service tag`);
}

/** What existed before the run (load balancers, foreign objects) is byte for byte as it was. */
export function foreignUntouched(input: ObjectCheckInput): Invariant {
  const byId = new Map(input.objects.map((o) => [o.identifier, o]));
  const problems: string[] = [];
  for (const [id, was] of Object.entries(input.before)) {
    const now = byId.get(id);
    if (!now) problems.push(`${was.kind} ${was.name} (${id}) was destroyed`);
    else if (JSON.stringify(now) !== JSON.stringify(was)) problems.push(`${was.kind} ${was.name} (${id}) changed: ${changedKeys(was, now).join('; ')}`);
  }
  return invariant('zero foreign objects changed or destroyed', problems, `${Object.keys(input.before).length} pre-existing objects byte-identical`);
}

function changedKeys(a: AdminObject, b: AdminObject): string[] {
  const out: string[] = [];
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)]) as Set<keyof AdminObject>) {
    const x = JSON.stringify(a[k]);
    const y = JSON.stringify(b[k]);
    if (x !== y) out.push(`${k} ${x} -> ${y}`);
  }
  return out;
}

/**
 * Whether `needle` occurs anywhere in a value: strings, and raw bytes (Temporal payloads are bytes; a JSON-encoded
 * token would appear in them verbatim).
 */
export function containsText(value: unknown, needle: string): boolean {
  const bytes = Buffer.from(needle, 'utf8');
  const seen = new Set<object>();
  const walk = (v: unknown): boolean => {
    if (typeof v === 'string') return v.includes(needle);
    if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).includes(bytes);
    if (typeof v !== 'object' || v === null || seen.has(v)) return false;
    seen.add(v);
    if (Array.isArray(v)) return v.some(walk);
    return Object.values(v as Record<string, unknown>).some(walk);
  };
  return walk(value);
}
