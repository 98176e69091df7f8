/**
 * `lbaas import --pool NAME`: services imported with the same set of servers share one server pool (domain/pool.ts),
 * so that the next node change is one pool command instead of one apply per service. Pure.
 */
import type { SpecDocument } from './import-types';
import { sameMembers, sortMembers, type PoolFile } from './pool';

export interface PoolGrouping {
  /** The pool file to write, or null when no service was given. */
  pool: PoolFile | null;
  /** Services whose spec names the pool instead of listing servers. */
  members: string[];
  /** Services that keep inline servers because theirs differ from the pool's, with the reason. */
  others: { serviceUid: string; reason: string }[];
}

/**
 * The pool takes the server set most services share (ties: the set of the service first in uid order, so the choice
 * never depends on the order services were found in). One name means one pool: services with another set keep their
 * servers inline and are named, so nobody is moved to servers they do not have.
 */
export function groupIntoPool(name: string, specs: readonly SpecDocument[]): PoolGrouping {
  const sorted = [...specs].sort((a, b) => (a.serviceUid < b.serviceUid ? -1 : 1));
  const sets: { servers: SpecDocument['servers']; uids: string[] }[] = [];
  for (const s of sorted) {
    const set = sets.find((x) => sameMembers(x.servers, s.servers));
    if (set) set.uids.push(s.serviceUid);
    else sets.push({ servers: s.servers, uids: [s.serviceUid] });
  }
  const chosen = sets.reduce<(typeof sets)[number] | null>((best, x) => (best === null || x.uids.length > best.uids.length ? x : best), null);
  if (chosen === null) return { pool: null, members: [], others: [] };
  return {
    pool: { name, servers: sortMembers(chosen.servers) },
    members: chosen.uids,
    others: sets
      .filter((x) => x !== chosen)
      .flatMap((x) => x.uids.map((serviceUid) => ({ serviceUid, reason: `its servers (${x.servers.map((s) => s.name).join(', ') || 'none'}) differ from pool ${name}'s, so it keeps them inline` }))),
  };
}

/** The spec with `serverPool: name` where `servers` was (the key order of a spec file kept). */
export function withPool(spec: SpecDocument, name: string): Record<string, unknown> {
  return Object.fromEntries(Object.entries(spec).map(([k, v]) => (k === 'servers' ? ['serverPool', name] : [k, v])));
}
