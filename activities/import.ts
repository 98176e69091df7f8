/**
 * The read-only activity of `lbaas import` (workflows/import.ts): everything of the four kinds on one load balancer,
 * with each object's service tags. It only lists and GETs; it never writes to the Engine.
 */
import { KIND_OF_RESOURCE_TYPE, KINDS, LISTED_UNDER, LISTING_LEVELS, SERVICE_TAG_PREFIX, type Kind } from '../domain';
import type { InventoryObject, LoadBalancerInventory } from '../domain/import-types';
import { EngineNotFoundError, stateName, type EngineClient, type EngineRef } from './engine';
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE_TYPES } from '../contract';
import { translated } from './failures';
import { withHeartbeat, type Heartbeat } from './heartbeat';
import { fieldsOf } from './kinds';
import { mapLimit, readEach, RETRIEVE_CONCURRENCY } from './state';

/**
 * The most objects one load balancer may hold for import to read it: the inventory is one activity result, and
 * Temporal refuses payloads over 2 MiB; at about 300 bytes per object 5000 leave room (and match the spec limit
 * of objects per load balancer in domain/spec.ts).
 */
export const MAX_IMPORT_OBJECTS = 5000;

export function createImportActivities(engine: EngineClient) {
  return {
    /** Every Backend, Frontend, Bind and Server on one load balancer, tagged or not, with their service tags. */
    async readLoadBalancer(input: { loadBalancer: string }): Promise<LoadBalancerInventory> {
      return translated(() => withHeartbeat<ReadProgress, LoadBalancerInventory>((hb) => readLoadBalancer(engine, input.loadBalancer, hb)));
    },
  };
}

export type ImportActivities = ReturnType<typeof createImportActivities>;

/**
 * Objects read so far, carried to the next attempt in heartbeat details: under a rate limit or a storm of 5xx an
 * attempt fails part-way, and the next one reads only what is still missing instead of needing all 2N GETs to
 * succeed in one go (observeService in state.ts does the same). The lists are repeated: they are few.
 */
interface ReadProgress {
  loadBalancer: string;
  read: Record<string, InventoryObject | null>;
}

/** Progress is recorded at most this often: serializing it is linear in the objects read. */
const PROGRESS_EVERY_MS = 500;

/**
 * Lists the load balancer's Backends and Frontends, the Servers under each Backend and the Binds under each Frontend
 * (the kinds' listing links, LISTED_UNDER), then reads every object and its Core resource (for the tags). About 2 + B + F list requests and two GETs per
 * object. An object deleted while being read is left out, as it would be a moment later.
 */
export async function readLoadBalancer(engine: EngineClient, loadBalancer: string, hb?: Heartbeat<ReadProgress>): Promise<LoadBalancerInventory> {
  const done = new Map<string, InventoryObject | null>(Object.entries(hb?.previous?.loadBalancer === loadBalancer ? hb.previous.read : {}));
  let recordedAt = 0;
  const progress = (force = false) => {
    if (!hb || (!force && Date.now() - recordedAt < PROGRESS_EVERY_MS)) return;
    recordedAt = Date.now();
    hb.record({ loadBalancer, read: Object.fromEntries(done) });
  };
  try {
    await engine.get('loadbalancer', loadBalancer);
  } catch (err) {
    if (err instanceof EngineNotFoundError) return { loadBalancer, found: false, objects: [] };
    throw err;
  }
  // Level by level (LISTING_LEVELS): the kinds listed under the load balancer, then those listed under each of them.
  const listed = new Map<string, EngineRef[]>([['loadbalancer', [{ identifier: loadBalancer } as EngineRef]]]);
  for (const level of LISTING_LEVELS) {
    const lists = await Promise.all(
      level.map(async (kind) => {
        const { field, target } = LISTED_UNDER[kind];
        const under = listed.get(target) ?? [];
        return (await mapLimit(under, RETRIEVE_CONCURRENCY, (p) => engine.list(kind, { filters: { [field]: p.identifier } }))).flat();
      }),
    );
    level.forEach((kind, i) => listed.set(kind, lists[i] ?? []));
  }
  const refs: { kind: Kind; ref: EngineRef }[] = KINDS.flatMap((kind) => (listed.get(kind) ?? []).map((ref) => ({ kind, ref })));
  if (refs.length > MAX_IMPORT_OBJECTS) {
    throw ApplicationFailure.create({
      type: FAILURE_TYPES.engineRejected,
      nonRetryable: true,
      message: `load balancer ${loadBalancer} holds ${refs.length} Backends, Frontends, Binds and Servers; import reads at most ${MAX_IMPORT_OBJECTS} per load balancer`,
    });
  }
  const seen = new Set<string>();
  const unique = refs.filter(({ ref }) => !seen.has(ref.identifier) && seen.add(ref.identifier));
  const read = await readEach<(typeof unique)[number], InventoryObject | null>(unique, {
    earlier: ({ kind, ref }) => {
      const known = done.get(ref.identifier);
      return known !== undefined && (known === null || known.kind === kind) ? known : undefined;
    },
    read: ({ kind, ref }) => readOne(engine, kind, ref.identifier),
    kept: ({ ref }, o) => done.set(ref.identifier, o),
    progress,
  });
  return { loadBalancer, found: true, objects: read.filter((o): o is InventoryObject => o !== null) };
}

async function readOne(engine: EngineClient, kind: Kind, identifier: string): Promise<InventoryObject | null> {
  try {
    const [object, resource] = await Promise.all([engine.get(kind, identifier), engine.getResource(identifier)]);
    // A Core resource of another type under this identifier is not one of the four kinds (never seen; cheap to check).
    if (KIND_OF_RESOURCE_TYPE[resource.type.identifier] !== kind) return null;
    return {
      kind,
      identifier,
      name: object.name,
      state: stateName(object.state),
      serviceUids: (resource.tags ?? []).filter((t) => t.startsWith(SERVICE_TAG_PREFIX)).map((t) => t.slice(SERVICE_TAG_PREFIX.length)).sort(),
      fields: fieldsOf(kind, object as never) as unknown as InventoryObject['fields'],
    };
  } catch (err) {
    if (err instanceof EngineNotFoundError) return null;
    throw err;
  }
}
