/**
 * retrieveState: what one service owns on one load balancer, read from the Engine.
 */
import { isReadMark, type ReadMark } from '../contract';
import { KIND_OF_RESOURCE_TYPE, LISTED_UNDER, serviceTag, type Kind, type ObservedObject, type Snapshot } from '../domain';
import { EngineNotFoundError, stateName, type EngineClient, type EngineObjectMap, type EngineRef } from './engine';
import { currentContext, type Heartbeat, withHeartbeat } from './heartbeat';
import { observed } from './kinds';
import type { IdentifierCache } from './memory';

export { IdentifierCache } from './memory';

export interface ServiceOnLoadBalancer {
  serviceUid: string;
  loadBalancer: string;
  /**
   * Identifiers the caller knows are the service's (created or seen by earlier passes). Read even when the tag index
   * does not list them yet: it lags behind tagging on the real Engine, and a pass that missed its own objects would
   * create them a second time.
   */
  known?: string[];
  /**
   * The round's start when this observation closes a round, as the mark an earlier observation returned
   * (`readMark`): an object this worker read Deployed (or Updated) since then, and has written nothing to since, is
   * taken from that read instead of being read again (activities/engine/recent-reads.ts). A mark of another worker,
   * or a number (what builds before marks sent), is ignored: every object is read. Only for objects the tag index
   * lists: the others are read to confirm the tag.
   */
  readsSince?: ReadMark | number;
}

/** One load balancer's snapshot, with the mark of this worker's clock taken before its first read. */
export interface ObservedSnapshot extends Snapshot {
  readMark: ReadMark;
}

/** Parallel GETs per retrieval: enough to hide latency, few enough not to flood the Engine. */
export const RETRIEVE_CONCURRENCY = 8;

/** Runs `fn` over `items` with at most `limit` calls in flight; results keep the input order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const run = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
  return results;
}

/**
 * Reads every item even when some reads fail, so that the next attempt of the activity only repeats the failed ones:
 * `earlier` answers an item without a request (what an earlier attempt read, from the heartbeat details, or an item
 * to leave out), `read` reads one, `kept` records an answer and `progress(force)` saves what was read so far. The first
 * failure is thrown once every item was tried, after a forced `progress`.
 *
 * Reads have no effect on the Engine, so they stop when `stop` is aborted (by default the running activity's
 * cancellation, which reaches the worker with its next heartbeat): no further read is sent, the ones in flight are
 * let finish, and the abort's reason (the activity's CancelledFailure) is thrown, so a superseded pass does not wait
 * for a large observation to end on its own.
 */
export async function readEach<T, R>(
  items: readonly T[],
  o: { earlier(item: T): R | undefined; read(item: T): Promise<R>; kept(item: T, answer: R): void; progress(force?: boolean): void; stop?: AbortSignal },
): Promise<R[]> {
  const stop = o.stop ?? currentContext()?.cancellationSignal;
  const failures: unknown[] = [];
  const answers = await mapLimit(items, RETRIEVE_CONCURRENCY, async (item): Promise<R | null> => {
    const before = o.earlier(item);
    if (before !== undefined) return before;
    if (stop?.aborted) return null;
    try {
      const answer = await o.read(item);
      o.kept(item, answer);
      o.progress();
      return answer;
    } catch (err) {
      failures.push(err);
      return null;
    }
  });
  if (stop?.aborted) {
    o.progress(true);
    throw stop.reason;
  }
  if (failures.length > 0) {
    o.progress(true);
    throw failures[0];
  }
  return answers as R[];
}

async function orNull<T>(p: Promise<T>): Promise<T | null> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof EngineNotFoundError) return null;
    throw err;
  }
}

type Found = { [K in Kind]: { kind: K; object: EngineObjectMap[K] } }[Kind];

/**
 * Every object tagged `anxccm-svc-uid=<uid>`, grouped by the load balancer its parent chain leads to: Backends and
 * Frontends by their load_balancer, Binds through their Frontend, Servers through their Backend (read when the
 * parent is not itself tagged). Objects that vanish while being read are left out; untagged objects are never
 * included, nor are objects this worker is deleting (the Engine keeps listing them, unchanged, until they are gone).
 * Besides what the tag index lists, the objects this worker created for the service and those in `known` are read
 * (each confirmed to carry the tag), because the index lags behind tagging.
 */
export async function observeService(
  engine: EngineClient,
  kinds: IdentifierCache,
  serviceUid: string,
  only?: string,
  known: readonly string[] = [],
  readsSince?: ReadMark,
): Promise<Map<string, ObservedObject[]>> {
  return withHeartbeat<ObserveProgress, Map<string, ObservedObject[]>>((hb) => observe(engine, kinds, serviceUid, hb, only, known, readsSince));
}

/**
 * Objects read so far, carried to the next attempt in heartbeat details: when Engine reads fail at random (a storm
 * of 5xx), each attempt reads what is still missing instead of needing every one of 1 + 2N requests to succeed in
 * one go. A snapshot is read over time anyway; the attempts of one observation are seconds apart.
 */
interface ObserveProgress {
  serviceUid: string;
  found: Record<string, Found | null>;
}

/** Progress is recorded at most this often: serializing it is linear in the objects read. */
const PROGRESS_EVERY_MS = 500;

/**
 * Objects read that are carried to the next attempt, at most: heartbeat details are a payload too (2 MiB), an Engine
 * object is a few hundred bytes, and a service at the validator's limits holds 10,000 and more (its observation's
 * heartbeat passed the limit and failed the activity). A retry reads the rest again.
 */
export const PROGRESS_MAX_OBJECTS = 1_000;

async function observe(
  engine: EngineClient,
  kinds: IdentifierCache,
  serviceUid: string,
  hb: Heartbeat<ObserveProgress>,
  only: string | undefined,
  known: readonly string[],
  readsSince: ReadMark | undefined,
): Promise<Map<string, ObservedObject[]>> {
  const previous = hb.previous?.serviceUid === serviceUid ? hb.previous.found : {};
  const done = new Map<string, Found | null>(Object.entries(previous));
  let recordedAt = 0;
  const progress = (force = false) => {
    if (!force && Date.now() - recordedAt < PROGRESS_EVERY_MS) return;
    recordedAt = Date.now();
    hb.record({ serviceUid, found: Object.fromEntries(done.size <= PROGRESS_MAX_OBJECTS ? done : [...done].slice(0, PROGRESS_MAX_OBJECTS)) });
  };
  const tag = serviceTag(serviceUid);
  const listed = new Set((await engine.listResourcesByTag(tag)).map((r) => r.identifier));
  const unlisted = new Set([...kinds.createdFor(serviceUid), ...known].filter((id) => !listed.has(id)));
  const refs = [...listed, ...unlisted].filter((id) => !kinds.isDeleting(id)).map((identifier) => ({ identifier, verify: unlisted.has(identifier) }));
  const found = await readEach<(typeof refs)[number], Found | null>(refs, {
    earlier: (ref) => {
      const known = done.get(ref.identifier);
      if (known !== undefined) return known;
      const lb = kinds.loadBalancerOf(ref.identifier);
      return only !== undefined && lb !== undefined && lb !== only ? null : undefined;
    },
    read: (ref) => readTagged(engine, kinds, ref.identifier, ref.verify ? tag : null, readsSince),
    kept: (ref, f) => done.set(ref.identifier, f),
    progress,
  });
  const groups = await groupByLoadBalancer(engine, found);
  for (const [lb, objects] of groups) for (const o of objects) kinds.setLoadBalancer(o.identifier, lb);
  return groups;
}

/** Reads one object; `verifyTag`: it was not listed under the tag, so confirm on the resource that it carries it. */
async function readTagged(engine: EngineClient, kinds: IdentifierCache, identifier: string, verifyTag: string | null, readsSince?: ReadMark): Promise<Found | null> {
  const cached = kinds.get(identifier);
  if (cached === null) return null;
  if (cached !== undefined && verifyTag === null && readsSince !== undefined) {
    const recent = engine.readSince(cached, identifier, readsSince);
    const state = recent ? stateName(recent.state) : 'Unknown';
    if (recent && (state === 'Deployed' || state === 'Updated')) return { kind: cached, object: recent } as Found;
  }
  if (cached !== undefined && verifyTag === null) {
    const object = await orNull(engine.get(cached, identifier));
    if (object) return { kind: cached, object } as Found;
    // Gone, or the identifier now names another kind (only a simulator reset reuses identifiers): look it up again.
  }
  const resource = await orNull(engine.getResource(identifier));
  if (!resource) {
    kinds.gone(identifier);
    return null;
  }
  if (verifyTag !== null && !resource.tags.includes(verifyTag)) return null;
  const kind = KIND_OF_RESOURCE_TYPE[resource.type.identifier] ?? null;
  kinds.set(identifier, kind);
  if (kind === null) return null;
  const object = await orNull(engine.get(kind, identifier));
  return object ? ({ kind, object } as Found) : null;
}

/** Groups objects by the load balancer their parent chain leads to. */
async function groupByLoadBalancer(engine: EngineClient, found: (Found | null)[]): Promise<Map<string, ObservedObject[]>> {
  const byId = new Map<string, Found>();
  for (const f of found) if (f) byId.set(f.object.identifier, f);

  // The load balancer an object's listing chain (LISTED_UNDER) leads to: a Bind's through its Frontend, a Server's
  // through its Backend. A link to an object that is not tagged for the service is read on demand, once.
  const read = new Map<string, Promise<string | null>>();
  const lbOfObject = (kind: Kind, object: EngineObjectMap[Kind]): Promise<string | null> => {
    const { field, target } = LISTED_UNDER[kind];
    const id = (object as unknown as Record<string, EngineRef | null | undefined>)[field]?.identifier;
    if (id === undefined) return Promise.resolve(null);
    if (target === 'loadbalancer') return Promise.resolve(id);
    const mine = byId.get(id);
    if (mine && mine.kind === target) return lbOfObject(target, mine.object);
    let p = read.get(id);
    if (!p) {
      p = orNull(engine.get(target, id)).then((o) => (o ? lbOfObject(target, o) : null));
      read.set(id, p);
    }
    return p;
  };
  const lbOfFound = (f: Found): Promise<string | null> => lbOfObject(f.kind, f.object);
  const all = [...byId.values()].sort((a, b) => (a.kind === b.kind ? a.object.identifier.localeCompare(b.object.identifier) : a.kind.localeCompare(b.kind)));
  const lbs = await mapLimit(all, RETRIEVE_CONCURRENCY, lbOfFound);
  const groups = new Map<string, ObservedObject[]>();
  all.forEach((f, i) => {
    const lb = lbs[i];
    if (!lb) return;
    const list = groups.get(lb) ?? [];
    list.push(observed(f.kind, f.object as never, true));
    groups.set(lb, list);
  });
  return groups;
}

/**
 * Identifiers of every object tagged for the service: what the tag index lists, plus the objects this worker created
 * for it and those in `known` that the index does not list yet (confirmed on the resource to carry the tag, and to
 * exist).
 */
export async function listTagged(engine: EngineClient, kinds: IdentifierCache, serviceUid: string, known: readonly string[] = []): Promise<string[]> {
  const tag = serviceTag(serviceUid);
  const listed = (await engine.listResourcesByTag(tag)).map((r) => r.identifier);
  const seen = new Set(listed);
  const extra = await mapLimit(
    [...new Set([...kinds.createdFor(serviceUid), ...known])].filter((id) => !seen.has(id) && !kinds.isDeleting(id)),
    RETRIEVE_CONCURRENCY,
    async (id) => {
      const resource = await orNull(engine.getResource(id));
      if (!resource) kinds.gone(id);
      return resource?.tags.includes(tag) ? id : null;
    },
  );
  return [...listed, ...extra.filter((id): id is string => id !== null)];
}

export interface RetrieveOptions {
  /**
   * Close a round on this worker's recent reads when the input names `readsSince` (default true); false reads every
   * object again, as before the cache (`npm run bench -- --core` measures what the cache buys against it).
   */
  recentReads?: boolean;
}

/** The snapshot of one service on one load balancer. */
export async function retrieveState(engine: EngineClient, kinds: IdentifierCache, input: ServiceOnLoadBalancer, options: RetrieveOptions = {}): Promise<ObservedSnapshot> {
  const since = options.recentReads !== false && isReadMark(input.readsSince) ? input.readsSince : undefined;
  const readMark = engine.readMark();
  const groups = await observeService(engine, kinds, input.serviceUid, input.loadBalancer, input.known ?? [], since);
  return { loadBalancer: input.loadBalancer, objects: groups.get(input.loadBalancer) ?? [], readMark };
}
