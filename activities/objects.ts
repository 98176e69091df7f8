/**
 * Creating one Engine object (createObject, run by realizeObjects for each member of a group) and the readiness
 * polling settings that realizeObjects and settleObjects share. A create is one logical Engine operation and safe to
 * repeat: Temporal may run it again after a lost answer, a timeout or a worker crash.
 */
import { currentContext, withHeartbeat, type ProgressSlot } from './heartbeat';
import { KIND_DEFINITIONS, SERVICE_TAG_PREFIX, sameFields, serviceTag, type FieldsOf, type Kind, type StateName } from '../domain';
import { EngineNotFoundError, EngineProtocolError, type EngineClient, type EngineCreateBodyMap } from './engine';
import { fieldsOf } from './kinds';
import type { IdentifierCache } from './memory';
import { stateOf } from './object-state';
import { mapLimit, RETRIEVE_CONCURRENCY } from './state';
import { ensureTagged } from './tagging';

export interface ObjectRef {
  kind: Kind;
  identifier: string;
  name: string;
}

export type CreateObjectInput = {
  /** `loadBalancer` is where the object goes (remembered by the worker to skip it in other load balancers' reads). */
  [K in Kind]: { serviceUid: string; kind: K; fields: FieldsOf[K]; loadBalancer?: string };
}[Kind];

export interface CreateObjectResult {
  identifier: string;
  state: StateName;
  /** A lost earlier attempt had created it; this attempt found and tagged it instead of creating a second one. */
  adopted: boolean;
}

/**
 * Clock skew tolerated between the worker and the Engine, used only when a retried create finds no record of what
 * existed before its first attempt (that attempt died before its first heartbeat reached Temporal): an untagged
 * look-alike is then taken as ours when it is not older than the first attempt, less this margin.
 */
export const ADOPTION_SKEW_MS = 5 * 60_000;

/** What the first attempt of a create records (as heartbeat details) before it sends the POST. */
export interface CreateProgress {
  /**
   * Objects with the same name and parent that existed before our first POST: never ours to adopt. Read from a
   * listing that may have started up to RECENT_LIST_MS before the create (activities/engine/client.ts), so an
   * untagged object with our name and fields that someone else made in that window would be taken as a lost attempt's
   * by a retry: a window of seconds, against the 5 minutes (ADOPTION_SKEW_MS) of a retry with no record. Absent when the
   * first attempt did not list them (a pool-delta pass, activities/realize.ts `unlisted`): a retry then adopts by
   * creation time, as after a first attempt that died before its first heartbeat.
   */
  preexisting?: string[];
  /** The object a POST answered with, recorded before tagging it: a retry after a failed tag only tags. */
  created?: string;
}

/**
 * Objects of the same kind and name as the one to create, listed under the same object (its `listedUnder` link).
 * `recent`: before the first POST, a listing up to RECENT_LIST_MS old will do (it only has to precede the POST); a
 * retry looking for what a lost attempt created must list afresh.
 */
async function lookAlikes(engine: EngineClient, memory: IdentifierCache, input: CreateObjectInput, o: { recent?: boolean } = {}): Promise<string[]> {
  const listedUnder = KIND_DEFINITIONS[input.kind].listedUnder;
  const parent = (input.fields as unknown as Record<string, string>)[listedUnder] ?? '';
  const refs = await engine.list(input.kind, { filters: { [listedUnder]: parent }, recent: o.recent === true });
  // An object being deleted stays listed with its state unchanged: it is never a look-alike to adopt.
  return refs.filter((r) => r.name === input.fields.name && !memory.isDeleting(r.identifier)).map((r) => r.identifier);
}

/**
 * Finds what lost earlier attempts of this activity created: look-alikes (same name, parent and compared fields)
 * that did not exist before the first attempt. Tagged ones are ours already; untagged ones are tagged now, every one
 * of them, so no untagged object stays behind even when several lost attempts each created one (the next pass
 * destroys the extras as duplicates). A look-alike that existed before is someone else's and is left alone.
 */
async function findLost(engine: EngineClient, memory: IdentifierCache, input: CreateObjectInput, tag: string, preexisting: string[] | null): Promise<string | null> {
  const before = new Set(preexisting ?? []);
  const since = (currentContext()?.info.scheduledTimestampMs ?? 0) - ADOPTION_SKEW_MS;
  const ids = (await lookAlikes(engine, memory, input)).filter((id) => !before.has(id));
  const candidates = await mapLimit(ids, RETRIEVE_CONCURRENCY, async (id) => {
    try {
      const object = await engine.get(input.kind, id);
      if (!sameFields(input.kind, input.fields, fieldsOf(input.kind, object as never))) return null;
      const resource = await engine.getResource(id);
      if (resource.tags.includes(tag)) return { id, tagged: true };
      // Another service's object with the same name (services may share a suffix): never ours.
      if (resource.tags.some((t) => t.startsWith(SERVICE_TAG_PREFIX))) return null;
      if (preexisting) return { id, tagged: false };
      const created = resource.createdAt ? parseEngineTime(resource.createdAt) : NaN;
      return Number.isNaN(created) || created >= since ? { id, tagged: false } : null;
    } catch (err) {
      if (err instanceof EngineNotFoundError) return null;
      throw err;
    }
  });
  const mine = candidates.filter((c): c is { id: string; tagged: boolean } => c !== null);
  // Their tags were read just now: tag without reading them again.
  for (const c of mine) if (!c.tagged) await ensureTagged(engine, memory, c.id, tag, { fresh: true });
  return mine.find((c) => c.tagged)?.id ?? mine[0]?.id ?? null;
}

/**
 * Create and tag one object as one idempotent step. The first attempt records which look-alikes exist before it
 * creates; a retried attempt adopts and tags what an earlier attempt created (its answer lost, or the worker gone
 * between create and tag) instead of creating a second object, and never takes someone else's. `slot` keeps the
 * progress in a heartbeat shared with other steps of the same activity (activities/realize.ts); the activity's own
 * heartbeat otherwise. `halt` stops it before its POST (never between the POST and the tag).
 */
export async function createObject(
  engine: EngineClient,
  memory: IdentifierCache,
  input: CreateObjectInput,
  slot?: ProgressSlot<CreateProgress>,
  halt?: AbortSignal,
  o: { unlisted?: boolean } = {},
): Promise<CreateObjectResult> {
  const run = async (hb: ProgressSlot<CreateProgress>): Promise<CreateObjectResult> => {
    const tag = serviceTag(input.serviceUid);
    const attempt = currentContext()?.info.attempt ?? 1;
    const recorded = hb.previous?.preexisting ?? null;
    const createdBefore = hb.previous?.created;
    const mine = (identifier: string, state: CreateObjectResult['state'], adopted: boolean): CreateObjectResult => {
      memory.created(input.serviceUid, identifier);
      // Another load balancer's observation of the service then skips it instead of reading it (activities/state.ts).
      if (input.loadBalancer) memory.setLoadBalancer(identifier, input.loadBalancer);
      return { identifier, state, adopted };
    };
    if (createdBefore) {
      // Found by the identifier an earlier attempt recorded, not through the tag index (which lags behind a tag).
      try {
        await ensureTagged(engine, memory, createdBefore, tag);
        return mine(createdBefore, stateOf(input.kind, await engine.get(input.kind, createdBefore)), true);
      } catch (err) {
        // Gone meanwhile (deleted out of band): create it as if for the first time.
        if (!(err instanceof EngineNotFoundError)) throw err;
      }
    }
    if (attempt > 1) {
      const lost = await findLost(engine, memory, input, tag, recorded);
      if (lost) return mine(lost, stateOf(input.kind, await engine.get(input.kind, lost)), true);
    }
    // A first attempt told not to list records no look-alikes (and no list request is sent): see CreateProgress.
    const preexisting = recorded ?? (o.unlisted && attempt === 1 ? undefined : await lookAlikes(engine, memory, input, { recent: true }));
    const before = preexisting ? { preexisting } : {};
    hb.record(before);
    // Its group failed meanwhile (activities/realize.ts): no new object for an attempt that is ending.
    halt?.throwIfAborted();
    let created: { identifier: string; state: { id?: string | null; type?: number | null }; name: string };
    try {
      created = await engine.create(input.kind, input.fields as unknown as EngineCreateBodyMap[typeof input.kind]);
    } catch (err) {
      // An answer that fails validation still names the object it created: record and tag it before failing.
      if (err instanceof EngineProtocolError && err.createdIdentifier !== undefined) {
        hb.record({ ...before, created: err.createdIdentifier });
        await ensureTagged(engine, memory, err.createdIdentifier, tag, { fresh: true });
        memory.created(input.serviceUid, err.createdIdentifier);
      }
      throw err;
    }
    hb.record({ ...before, created: created.identifier });
    await ensureTagged(engine, memory, created.identifier, tag, { fresh: true });
    return mine(created.identifier, stateOf(input.kind, created), false);
  };
  return slot ? run(slot) : withHeartbeat<CreateProgress, CreateObjectResult>(run);
}

/**
 * A Core timestamp in milliseconds. The real Engine may send it without a zone (`2026-11-23 14:52:37`); such a time
 * is read as UTC, the Engine's wall clock as far as the public sources show (docs/engine-api.md).
 */
export function parseEngineTime(value: string): number {
  const zoneless = /^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(value.trim());
  return Date.parse(zoneless ? `${value.trim().replace(' ', 'T')}Z` : value);
}

/**
 * Readiness polling, chosen by measuring (docs/benchmarks.md): objects deploy in about 1-3 s and each level of the
 * dependency graph waits for the one above it, so every second of polling slack is paid up to three times per
 * port. Retry-based polling on the spec's policy (1 s x 1.5) overshoots by up to half an interval per level;
 * polling inside one heartbeating attempt starts fast (POLL_FIRST_MS) and backs off to POLL_MAX_MS, so the slack
 * stays a fraction of a second while a long wait costs about two GETs per second. Measured on deploys of 1-3 s:
 * retry-based polling at the spec's 1 s x 1.5 converged 1.61x the lower bound, this 1.15-1.20x; and retries cannot
 * poll faster than about once a second on this server, whatever their interval (docs/benchmarks.md). A wait that
 * follows a create skips the first GET, which could only see NewlyCreated. An attempt gives up after
 * ATTEMPT_WINDOW_MS with a benign NotReady failure, and Temporal retries it with the spec's readiness policy: that
 * policy bounds how long we wait in all, and a crashed worker's attempt is retried after the heartbeat timeout.
 */
export const POLL_FIRST_MS = 250;
export const POLL_BACKOFF = 1.25;
export const POLL_MAX_MS = 500;
export const ATTEMPT_WINDOW_MS = 30_000;

export interface AwaitReadyOptions {
  pollFirstMs?: number;
  pollMaxMs?: number;
  windowMs?: number;
}

export type ReadyOutcome = StateName | 'Gone';
