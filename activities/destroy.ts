/**
 * Destroying one object, on an Engine that deletes asynchronously: DELETE answers at once, but the object stays
 * readable and listed, its state unchanged, until it is deprovisioned, and its parent cannot be deleted meanwhile.
 * So a destroy ends when GET answers 404, waited for inside the activity (heartbeating), and only then does the
 * object count as destroyed and its parent's stage begin. A 409 because one of the service's own dependents is still
 * going away is waited out the same way, for OWN_DEPENDENTS_GRACE_MS (longer, and the dependent is one the pass did not
 * plan to remove: the pass fails and the next one removes it first); a 409 because something that is not ours references the object fails,
 * naming it. Nothing is destroyed unless it carries the service's tag.
 *
 * A pass destroys a stage's objects (all that may go at once: Binds and Servers, then Frontends, then Backends) in one
 * destroyObjects activity: one activity per stage instead of one per object, as realizeObjects does for creates;
 * each object keeps its progress in a slot of the group's heartbeat, so a retried group neither deletes twice nor
 * forgets an outcome.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { ApplicationFailure } from '@temporalio/common';
import { concurrencyLimit, KIND_DEFINITIONS, KIND_TITLE, LISTED_UNDER, REFERENCED_BY, SERVICE_TAG_PREFIX, serviceTag, type FieldTable, type Kind, type LinkTarget } from '../domain';
import { EngineConflictError, EngineNotFoundError, EngineRateLimitedError, type EngineClient, type EngineObjectMap, type EngineRef } from './engine';
import { FAILURE_TYPES } from '../contract';
import { SharedHeartbeat, type ProgressSlot } from './heartbeat';
import type { IdentifierCache } from './memory';

export interface DestroyObjectInput {
  kind: Kind;
  identifier: string;
  name: string;
  serviceUid: string;
}

export type DestroyOutcome = 'deleted' | 'gone' | 'not ours';

/**
 * Polling for deprovisioning: first after 500 ms, then 1.5x up to 2 s. Deletes take seconds on the real Engine;
 * this notices a quick one within half a second and costs at most one GET per 2 s of a slow one.
 */
export const GONE_POLL_FIRST_MS = 500;
export const GONE_POLL_MAX_MS = 2_000;
/**
 * How long one attempt waits for deprovisioning (and for the service's own dependents to go) before it hands the
 * wait to a retry: well inside ENGINE_CALL's two-minute start-to-close timeout (workflows/options.ts).
 */
export const DESTROY_WINDOW_MS = 60_000;

/**
 * Objects of one stage being destroyed at once, at most (each: tag check, DELETE, polls until gone): a stage holds up
 * to 5,000 Servers, and sending all their requests at once left most of them queued past the client's request timeout.
 */
export const DESTROYS_AT_ONCE = 64;

/**
 * How long a 409 from the service's own dependents is waited out. A pass destroys children before parents and waits
 * for each child's 404, so a dependent of ours that still holds the object after this is one the pass did not plan to
 * remove (the tag index lagged when it observed): waiting cannot end it, the next pass (a fresh observation) can.
 * 10 s covers a dependent deprovisioned by someone else at the same moment.
 */
export const OWN_DEPENDENTS_GRACE_MS = 10_000;

export interface DestroyOptions {
  pollFirstMs?: number;
  pollMaxMs?: number;
  windowMs?: number;
  ownDependentsGraceMs?: number;
}

/**
 * Heartbeat details: the DELETE was accepted in an earlier attempt (the object may be deprovisioning, still tagged);
 * in a group, also the outcome of an object whose destroy ended in an attempt that failed on another.
 */
interface DestroyProgress {
  deleteSent: boolean;
  outcome?: DestroyOutcome;
}

export interface DestroyObjectsInput {
  serviceUid: string;
  /** The objects of one destroy stage: none of them references another. */
  objects: Omit<DestroyObjectInput, 'serviceUid'>[];
}

export interface DestroyedObject {
  kind: Kind;
  identifier: string;
  outcome: DestroyOutcome;
}

const ident = (kind: Kind, name: string, id?: string) => `${KIND_TITLE[kind]} ${name}${id ? ` (${id})` : ''}`;

/**
 * Sleeps between polls. Not cancellable on purpose: a superseded pass waits for its destroys to finish (ENGINE_CALL
 * waits for cancellation to complete), so an object going away is never seen as present by the next pass.
 */
const pause = (ms: number) => delay(ms);

/**
 * Destroys the objects of one stage at once. Every object's destroy comes to rest before the attempt ends (a DELETE
 * sent is followed up); then the attempt fails if one failed, with the first failure that no retry can end (an
 * object something not ours references), else the first in time. The next attempt returns the recorded outcome of
 * what was destroyed and resumes the rest.
 */
export async function destroyObjects(
  engine: EngineClient,
  memory: IdentifierCache,
  input: DestroyObjectsInput,
  options: DestroyOptions = {},
  onFailed?: (kind: Kind) => void,
): Promise<DestroyedObject[]> {
  const hb = new SharedHeartbeat<DestroyProgress>().start();
  try {
    const deadline = Date.now() + (options.windowMs ?? DESTROY_WINDOW_MS);
    const failures: unknown[] = [];
    const limit = concurrencyLimit(DESTROYS_AT_ONCE);
    const settled = await Promise.allSettled(
      input.objects.map(async (o): Promise<DestroyedObject> => {
        const slot = hb.slot(o.identifier);
        const done = slot.previous?.outcome;
        if (done) return { kind: o.kind, identifier: o.identifier, outcome: done };
        try {
          const outcome = await limit(() => destroyOne(engine, memory, { ...o, serviceUid: input.serviceUid }, slot, deadline, options));
          slot.record({ deleteSent: slot.previous?.deleteSent === true, outcome });
          return { kind: o.kind, identifier: o.identifier, outcome };
        } catch (err) {
          failures.push(err);
          onFailed?.(o.kind);
          throw err;
        }
      }),
    );
    if (failures.length > 0) throw failures.find((e) => e instanceof ApplicationFailure && e.nonRetryable) ?? failures[0];
    return settled.map((r) => (r as PromiseFulfilledResult<DestroyedObject>).value);
  } finally {
    hb.stop();
  }
}

async function destroyOne(
  engine: EngineClient,
  memory: IdentifierCache,
  input: DestroyObjectInput,
  hb: ProgressSlot<DestroyProgress>,
  deadline: number,
  options: DestroyOptions,
): Promise<DestroyOutcome> {
  const sentBefore = hb.previous?.deleteSent === true;
  if (!sentBefore) {
    try {
      const resource = await engine.getResource(input.identifier);
      if (!resource.tags.includes(serviceTag(input.serviceUid))) return 'not ours';
    } catch (err) {
      if (err instanceof EngineNotFoundError) {
        memory.gone(input.identifier);
        return 'gone';
      }
      throw err;
    }
  }
  memory.deleting(input.identifier);
  let accepted: boolean;
  try {
    accepted = await deleteWaitingOutOwnDependents(engine, input, deadline, options);
  } catch (err) {
    // Refused with a 409 (dependents still hold it): it is not going away, and the next pass must observe it. Other
    // errors keep the mark: a DELETE whose answer was lost may have been applied.
    if (!sentBefore && (err instanceof EngineConflictError || err instanceof ApplicationFailure)) memory.notDeleting(input.identifier);
    throw err;
  }
  if (accepted) hb.record({ deleteSent: true });
  await waitUntilGone(engine, input, deadline, options);
  memory.gone(input.identifier);
  return accepted || sentBefore ? 'deleted' : 'gone';
}

/** DELETE; true when the Engine accepted it, false when it answered 404. A 409 from our own dependents is waited out. */
async function deleteWaitingOutOwnDependents(engine: EngineClient, input: DestroyObjectInput, deadline: number, options: DestroyOptions): Promise<boolean> {
  let interval = options.pollFirstMs ?? GONE_POLL_FIRST_MS;
  let holders: Dependent[] | null = null;
  let since = 0;
  for (;;) {
    try {
      await engine.delete(input.kind, input.identifier);
      return true;
    } catch (err) {
      if (err instanceof EngineNotFoundError) return false;
      if (!(err instanceof EngineConflictError)) throw err;
      // Who holds it is read once per attempt: dependents do not change owner while we wait, and reads cost budget.
      if (!holders) {
        holders = await explainConflict(engine, input, err);
        since = Date.now();
      }
      if (holders.length > 0 && Date.now() - since > (options.ownDependentsGraceMs ?? OWN_DEPENDENTS_GRACE_MS)) {
        throw ApplicationFailure.create({
          type: FAILURE_TYPES.engineRejected,
          nonRetryable: true,
          message: `cannot destroy ${ident(input.kind, input.name, input.identifier)} yet: ${holders.map((d) => ident(d.kind, d.name, d.identifier)).join(', ')} of this service still reference${holders.length === 1 ? 's' : ''} it and this pass did not plan ${holders.length === 1 ? 'its' : 'their'} removal (the tag index may lag); the next pass removes ${holders.length === 1 ? 'it' : 'them'} first (${err.message})`,
        });
      }
      if (Date.now() + interval > deadline) throw err;
    }
    await pause(interval);
    interval = Math.min(options.pollMaxMs ?? GONE_POLL_MAX_MS, Math.round(interval * 1.5));
  }
}

/** Polls GET until it answers 404. A 429 on a poll waits out the shared backoff and polls again. */
async function waitUntilGone(engine: EngineClient, input: DestroyObjectInput, deadline: number, options: DestroyOptions): Promise<void> {
  let interval = options.pollFirstMs ?? GONE_POLL_FIRST_MS;
  for (;;) {
    try {
      if (!(await engine.exists(input.kind, input.identifier))) return;
    } catch (err) {
      if (!(err instanceof EngineRateLimitedError)) throw err;
      interval = Math.max(interval, err.retryAfterMs);
    }
    if (Date.now() + interval > deadline) break;
    await pause(interval);
    interval = Math.min(options.pollMaxMs ?? GONE_POLL_MAX_MS, Math.round(interval * 1.5));
  }
  throw ApplicationFailure.create({
    type: FAILURE_TYPES.notReady,
    message: `${ident(input.kind, input.name, input.identifier)} is still being deprovisioned`,
    category: 'BENIGN',
  });
}

/**
 * A 409 on delete means something still references the object. When every dependent is the service's own (still
 * going away, or about to), waiting is right. When one is not ours (untagged, or another service's), no wait will
 * ever end it and we may not remove it: fail non-retryably, naming it, instead of retrying a 409 forever.
 */
interface Dependent {
  kind: Kind;
  identifier: string;
  name: string;
}

/** Returns the dependents (all the service's own), or throws when one is not ours. */
async function explainConflict(engine: EngineClient, input: DestroyObjectInput, conflict: EngineConflictError): Promise<Dependent[]> {
  const dependents: Dependent[] = [];
  // Every link that may point at the object (REFERENCED_BY). A referrer listed under the object is listed by it (one
  // request, so those come first); one listed elsewhere (a Frontend's default_backend) is found among the objects
  // listed where the object itself hangs, each read to see its link.
  const direct = (r: { kind: Kind; field: string }) => LISTED_UNDER[r.kind].field === r.field;
  const referrers = [...REFERENCED_BY[input.kind].filter(direct), ...REFERENCED_BY[input.kind].filter((r) => !direct(r))];
  let self: Promise<EngineObjectMap[Kind]> | undefined;
  for (const { kind, field } of referrers) {
    const listing = LISTED_UNDER[kind];
    if (listing.field === field) {
      for (const r of await engine.list(kind, { filters: { [field]: input.identifier } })) dependents.push({ kind, ...r });
      continue;
    }
    self ??= engine.get(input.kind, input.identifier);
    const home = linkOf(await self, linkTo(input.kind, listing.target));
    if (home === undefined) continue;
    for (const r of await engine.list(kind, { filters: { [listing.field]: home } })) {
      const o = await engine.get(kind, r.identifier).catch(() => null);
      if (o && linkOf(o, field) === input.identifier) dependents.push({ kind, ...r });
    }
  }
  const tag = serviceTag(input.serviceUid);
  for (const d of dependents) {
    const tags = await engine.getResource(d.identifier).then(
      (r) => r.tags,
      () => [tag],
    );
    if (tags.includes(tag)) continue;
    throw ApplicationFailure.create({
      type: FAILURE_TYPES.engineRejected,
      nonRetryable: true,
      message: `cannot destroy ${ident(input.kind, input.name, input.identifier)}: ${ident(d.kind, d.name, d.identifier)} still references it and is not ours (${tags.find((t) => t.startsWith(SERVICE_TAG_PREFIX)) ?? 'untagged'}); remove or retag it (${conflict.message})`,
    });
  }
  return dependents;
}

/** The identifier a link field of an Engine object holds. */
function linkOf(object: EngineObjectMap[Kind], field: string): string | undefined {
  return (object as unknown as Record<string, EngineRef | null | undefined>)[field]?.identifier;
}

/** The link field of `kind` that points at `target` (a Backend's `load_balancer` for the load balancer). */
function linkTo(kind: Kind, target: LinkTarget): string {
  const fields = KIND_DEFINITIONS[kind].fields as FieldTable;
  const field = Object.keys(fields).find((f) => fields[f]?.type === 'link' && fields[f]?.to === target);
  if (field === undefined) throw new TypeError(`${kind} has no link to ${target}`);
  return field;
}
