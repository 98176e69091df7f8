/**
 * The activities that change or watch one Engine object. Each is one logical Engine operation and safe to repeat:
 * Temporal may run any of them again after a lost answer, a timeout or a worker crash.
 */
import { Context } from '@temporalio/activity';
import { currentContext, withHeartbeat, type ProgressSlot } from './heartbeat';
import { ApplicationFailure } from '@temporalio/common';
import { KIND_DEFINITIONS, KIND_TITLE, SERVICE_TAG_PREFIX, sameFields, serviceTag, type FieldsOf, type Kind, type StateName } from '../domain';
import { EngineConflictError, EngineNotFoundError, EngineValidationError, stateName, toUpdateBody, type EngineClient, type EngineCreateBodyMap } from './engine';
import { FAILURE } from './failures';
import { fieldsOf } from './kinds';
import { mapLimit, RETRIEVE_CONCURRENCY } from './state';

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
  /** Objects with the same name and parent that existed before our first POST: never ours to adopt. */
  preexisting: string[];
  /** The object a POST answered with, recorded before tagging it: a retry after a failed tag only tags. */
  created?: string;
}

const ident = (kind: Kind, name: string, id?: string) => `${KIND_TITLE[kind]} ${name}${id ? ` (${id})` : ''}`;

async function ensureTagged(engine: EngineClient, id: string, tag: string): Promise<void> {
  try {
    await engine.tag(id, tag);
  } catch (err) {
    // The Engine answers 422 to tagging an already tagged resource: check before calling that a failure.
    if (err instanceof EngineValidationError && (await engine.getResource(id)).tags.includes(tag)) return;
    throw err;
  }
}

/** Objects of the same kind and name as the one to create, listed under the same object (its `listedUnder` link). */
async function lookAlikes(engine: EngineClient, input: CreateObjectInput): Promise<string[]> {
  const listedUnder = KIND_DEFINITIONS[input.kind].listedUnder;
  const parent = (input.fields as unknown as Record<string, string>)[listedUnder] ?? '';
  const refs = await engine.list(input.kind, { filters: { [listedUnder]: parent } });
  return refs.filter((r) => r.name === input.fields.name).map((r) => r.identifier);
}

/**
 * Finds what lost earlier attempts of this activity created: look-alikes (same name, parent and compared fields)
 * that did not exist before the first attempt. Tagged ones are ours already; untagged ones are tagged now, every one
 * of them, so no untagged object stays behind even when several lost attempts each created one (the next pass
 * destroys the extras as duplicates). A look-alike that existed before is someone else's and is left alone.
 */
async function findLost(engine: EngineClient, input: CreateObjectInput, tag: string, preexisting: string[] | null): Promise<string | null> {
  const before = new Set(preexisting ?? []);
  const since = (currentContext()?.info.scheduledTimestampMs ?? 0) - ADOPTION_SKEW_MS;
  const ids = (await lookAlikes(engine, input)).filter((id) => !before.has(id));
  const candidates = await mapLimit(ids, RETRIEVE_CONCURRENCY, async (id) => {
    try {
      const object = await engine.get(input.kind, id);
      if (!sameFields(input.kind, input.fields, fieldsOf(input.kind, object as never))) return null;
      const resource = await engine.getResource(id);
      if (resource.tags.includes(tag)) return { id, tagged: true };
      // Another service's object with the same name (services may share a suffix): never ours.
      if (resource.tags.some((t) => t.startsWith(SERVICE_TAG_PREFIX))) return null;
      if (preexisting) return { id, tagged: false };
      const created = resource.createdAt ? Date.parse(resource.createdAt) : NaN;
      return Number.isNaN(created) || created >= since ? { id, tagged: false } : null;
    } catch (err) {
      if (err instanceof EngineNotFoundError) return null;
      throw err;
    }
  });
  const mine = candidates.filter((c): c is { id: string; tagged: boolean } => c !== null);
  for (const c of mine) if (!c.tagged) await ensureTagged(engine, c.id, tag);
  return mine.find((c) => c.tagged)?.id ?? mine[0]?.id ?? null;
}

/**
 * Create and tag one object as one idempotent step. The first attempt records which look-alikes exist before it
 * creates; a retried attempt adopts and tags what an earlier attempt created (its answer lost, or the worker gone
 * between create and tag) instead of creating a second object, and never takes someone else's. `slot` keeps the
 * progress in a heartbeat shared with other steps of the same activity (activities/realize.ts); the activity's own
 * heartbeat otherwise.
 */
export async function createObject(engine: EngineClient, input: CreateObjectInput, slot?: ProgressSlot<CreateProgress>): Promise<CreateObjectResult> {
  const run = async (hb: ProgressSlot<CreateProgress>): Promise<CreateObjectResult> => {
    const tag = serviceTag(input.serviceUid);
    const attempt = currentContext()?.info.attempt ?? 1;
    const recorded = hb.previous?.preexisting ?? null;
    const createdBefore = hb.previous?.created;
    if (createdBefore) {
      try {
        await ensureTagged(engine, createdBefore, tag);
        const object = await engine.get(input.kind, createdBefore);
        return { identifier: createdBefore, state: stateName(object.state), adopted: true };
      } catch (err) {
        // Gone meanwhile (deleted out of band): create it as if for the first time.
        if (!(err instanceof EngineNotFoundError)) throw err;
      }
    }
    if (attempt > 1) {
      const lost = await findLost(engine, input, tag, recorded);
      if (lost) {
        const object = await engine.get(input.kind, lost);
        return { identifier: lost, state: stateName(object.state), adopted: true };
      }
    }
    const preexisting = recorded ?? (await lookAlikes(engine, input));
    hb.record({ preexisting });
    const created = await engine.create(input.kind, input.fields as unknown as EngineCreateBodyMap[typeof input.kind]);
    hb.record({ preexisting, created: created.identifier });
    await ensureTagged(engine, created.identifier, tag);
    return { identifier: created.identifier, state: stateName(created.state), adopted: false };
  };
  return slot ? run(slot) : withHeartbeat<CreateProgress, CreateObjectResult>(run);
}

export interface DestroyObjectInput extends ObjectRef {
  serviceUid: string;
}

export type DestroyOutcome = 'deleted' | 'gone' | 'not ours';

/**
 * Destroys one object, but only while it carries the service's tag: what is not ours is never destroyed, even if
 * someone untagged it after the plan was made. Already gone is success.
 */
export async function destroyObject(engine: EngineClient, input: DestroyObjectInput): Promise<DestroyOutcome> {
  return withHeartbeat(() => destroyTagged(engine, input));
}

async function destroyTagged(engine: EngineClient, input: DestroyObjectInput): Promise<DestroyOutcome> {
  try {
    const resource = await engine.getResource(input.identifier);
    if (!resource.tags.includes(serviceTag(input.serviceUid))) return 'not ours';
    await engine.delete(input.kind, input.identifier);
    return 'deleted';
  } catch (err) {
    if (err instanceof EngineNotFoundError) return 'gone';
    if (err instanceof EngineConflictError) await explainConflict(engine, input, err);
    throw err;
  }
}

/**
 * A 409 on delete means something still references the object. When that is one of ours still being removed,
 * retrying is right. When it is not ours (untagged, or another service's), no retry will ever succeed and we may not
 * remove it: fail non-retryably, naming it, instead of retrying a 409 forever with nobody told why.
 */
async function explainConflict(engine: EngineClient, input: DestroyObjectInput, conflict: EngineConflictError): Promise<void> {
  const dependents: { kind: Kind; identifier: string; name: string }[] = [];
  if (input.kind === 'frontend') {
    for (const r of await engine.list('bind', { filters: { frontend: input.identifier } })) dependents.push({ kind: 'bind', ...r });
  } else if (input.kind === 'backend') {
    for (const r of await engine.list('server', { filters: { backend: input.identifier } })) dependents.push({ kind: 'server', ...r });
    const backend = await engine.get('backend', input.identifier);
    for (const r of await engine.list('frontend', { filters: { load_balancer: backend.load_balancer.identifier } })) {
      const f = await engine.get('frontend', r.identifier).catch(() => null);
      if (f?.default_backend.identifier === input.identifier) dependents.push({ kind: 'frontend', ...r });
    }
  }
  const tag = serviceTag(input.serviceUid);
  for (const d of dependents) {
    const tags = await engine.getResource(d.identifier).then((r) => r.tags, () => [tag]);
    if (tags.includes(tag)) continue;
    throw ApplicationFailure.create({
      type: FAILURE.rejected,
      nonRetryable: true,
      message: `cannot destroy ${ident(input.kind, input.name, input.identifier)}: ${ident(d.kind, d.name, d.identifier)} still references it and is not ours (${tags.find((t) => t.startsWith(SERVICE_TAG_PREFIX)) ?? 'untagged'}); remove or retag it (${conflict.message})`,
    });
  }
}

/**
 * Asks the Engine to redeploy a failed object: PUT of the whole object as read, with state "0". An object already
 * Updating is left alone (a repeated attempt after a lost answer).
 */
export async function recoverObject(engine: EngineClient, input: ObjectRef): Promise<StateName> {
  return withHeartbeat(() => redeploy(engine, input));
}

async function redeploy(engine: EngineClient, input: ObjectRef): Promise<StateName> {
  const object = await engine.get(input.kind, input.identifier);
  const current = stateName(object.state);
  if (current === 'Updating') return current;
  const updated = await engine.update(input.kind, input.identifier, toUpdateBody(input.kind, object as never) as never);
  return stateName(updated.state);
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

export interface AwaitReadyInput extends ObjectRef {
  /** The object was created a moment ago: the first GET could only see NewlyCreated, so wait before it. */
  justCreated?: boolean;
}

export interface AwaitReadyOptions {
  pollFirstMs?: number;
  pollMaxMs?: number;
  windowMs?: number;
}

export type ReadyOutcome = StateName | 'Gone';

/**
 * Waits until the object is ready (Deployed/Updated), failed (DeploymentError) or gone, and says which. Still
 * NewlyCreated/Updating after the attempt window: throws a retryable, benign NotReady failure.
 */
export async function awaitReady(engine: EngineClient, input: AwaitReadyInput, opts: AwaitReadyOptions = {}): Promise<ReadyOutcome> {
  const ctx = Context.current();
  const first = opts.pollFirstMs ?? POLL_FIRST_MS;
  const max = opts.pollMaxMs ?? POLL_MAX_MS;
  const deadline = Date.now() + (opts.windowMs ?? ATTEMPT_WINDOW_MS);
  let interval = first;
  let state: StateName = 'Unknown';
  if (input.justCreated && ctx.info.attempt === 1) await ctx.sleep(first);
  for (;;) {
    try {
      state = stateName((await engine.get(input.kind, input.identifier)).state);
    } catch (err) {
      if (err instanceof EngineNotFoundError) return 'Gone';
      throw err;
    }
    if (state === 'Deployed' || state === 'Updated' || state === 'DeploymentError') return state;
    ctx.heartbeat(state);
    if (Date.now() + interval > deadline) break;
    await ctx.sleep(interval);
    interval = Math.min(max, Math.round(interval * POLL_BACKOFF));
  }
  throw ApplicationFailure.create({
    type: FAILURE.notReady,
    message: `${ident(input.kind, input.name, input.identifier)} is still ${state}`,
    category: 'BENIGN',
  });
}
