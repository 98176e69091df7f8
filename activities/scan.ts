/**
 * Engine-wide scan for the orphan report of fullResync: which service uids have objects tagged for them, and on
 * which load balancers.
 */
import { LISTED_UNDER, LISTING_LEVELS, SERVICE_TAG_PREFIX, serviceTag } from '../domain';
import { EngineNotFoundError, type EngineClient } from './engine';
import { mapLimit, RETRIEVE_CONCURRENCY } from './state';

export interface TaggedService {
  loadBalancers: string[];
  /** Backends and Frontends carrying the service's tag. */
  objects: number;
}

/** The kinds listed under the load balancer itself (Backends and Frontends): every other kind hangs off one of them. */
const ON_LOAD_BALANCER = LISTING_LEVELS[0] ?? [];

/**
 * Lists every load balancer's Backends and Frontends and reads their tags. Binds and Servers are not read: they
 * cannot outlive the Frontend or Backend they hang off (the Engine refuses to delete a referenced object), so a
 * service with objects on a load balancer always has a Backend or Frontend there. One request per load balancer and
 * kind (per page of 100), plus one per Backend or Frontend.
 *
 * `skip`: services the caller does not need reported (fullResync: those with a controller). Their objects are found
 * with one list by tag per service instead of one read per Backend and Frontend (4 against 1 for a service with two
 * ports on one load balancer, 8 against 1 on two); what that list misses (the tag index lags behind tagging) is read
 * as before, so a skipped service can still appear in the result, never an orphan go missing.
 */
export async function scanTaggedServices(engine: EngineClient, skip: readonly string[] = []): Promise<Record<string, TaggedService>> {
  const covered = new Set((await mapLimit(skip, RETRIEVE_CONCURRENCY, async (uid) => (await engine.listResourcesByTag(serviceTag(uid))).map((r) => r.identifier))).flat());
  const lbs = await engine.list('loadbalancer');
  const found = new Map<string, { lbs: Set<string>; objects: number }>();
  for (const lb of lbs) {
    const top = await Promise.all(ON_LOAD_BALANCER.map((kind) => engine.list(kind, { filters: { [LISTED_UNDER[kind].field]: lb.identifier } })));
    const tags = await mapLimit(top.flat().filter((ref) => !covered.has(ref.identifier)), RETRIEVE_CONCURRENCY, async (ref) => {
      try {
        return (await engine.getResource(ref.identifier)).tags;
      } catch (err) {
        if (err instanceof EngineNotFoundError) return [];
        throw err;
      }
    });
    for (const t of tags.flat()) {
      if (!t.startsWith(SERVICE_TAG_PREFIX)) continue;
      const uid = t.slice(SERVICE_TAG_PREFIX.length);
      const entry = found.get(uid) ?? { lbs: new Set<string>(), objects: 0 };
      entry.lbs.add(lb.identifier);
      entry.objects++;
      found.set(uid, entry);
    }
  }
  return Object.fromEntries([...found].sort(([a], [b]) => a.localeCompare(b)).map(([uid, e]) => [uid, { loadBalancers: [...e.lbs].sort(), objects: e.objects }]));
}
