/**
 * realizeObjects: create, tag and await a group of sibling objects (same kind, same parent) in one activity.
 *
 * Why one activity per group instead of a createObject and an awaitReady per object: every activity costs the
 * workflow three history events and usually a workflow task of its own (three more), and Temporal Cloud bills each
 * start; a port's Servers or a Frontend's Binds are created and become ready together anyway. Measured on the core
 * workload: see docs/benchmarks.md (history events per reconcileLoadBalancer).
 *
 * What is kept: each object is created by createObject (activities/objects.ts), idempotent under retries and
 * crashes: its progress (look-alikes seen before the POST, the identifier the POST answered) sits in a slot of the
 * group's heartbeat, so a retried group adopts what an earlier attempt created instead of creating it twice. The
 * activity's summary names the objects and the result carries each object's identifier and state for the workflow's
 * per-object status; while the group runs, its heartbeat details hold each member's progress (the identifier its POST
 * answered), which `lbaas status` and `apply --wait` read from the pending activity (client/service-client.ts).
 * Readiness is polled on the schedule learned from earlier deploys (deploy-times.ts); an object that is still
 * deploying when the attempt window ends comes back as NotReady, for the workflow to await with settleObjects on the
 * spec's readiness policy. A member's children start when its whole group returns, so objects that others wait for
 * (Backends, Frontends) are spread over groups of their own (workflows/groups.ts): one activity more per extra group
 * instead of per-object signals from the worker, whose A/B found no gain for 18 more history events per load
 * balancer.
 */
import { concurrencyLimit, KIND_DEFINITIONS, type Kind, type StateName } from '../domain';
import { EngineNotFoundError, EngineRateLimitedError, type EngineClient } from './engine';
import { priorSchedule, type DeployTimes } from './deploy-times';
import { currentContext, SharedHeartbeat } from './heartbeat';
import type { IdentifierCache } from './memory';
import { stateOf } from './object-state';
import { createObject, type CreateObjectInput, type CreateProgress, type ReadyOutcome } from './objects';

export interface RealizeObjectsInput {
  serviceUid: string;
  loadBalancer: string;
  kind: Kind;
  /** Objects of `kind` under one parent (the same `listedUnder` link), each with the key the workflow knows it by. */
  members: { key: string; fields: CreateObjectInput['fields'] }[];
  /**
   * The first attempt sends no look-alike list before its creates: the parent was created by the same
   * reconcileLoadBalancer run (workflows/reconcile-lb.ts), or held none of these names at the last converged pass (a
   * pool-delta pass, workflows/reconcile-delta.ts, where listing a Backend of 5,000 Servers is 50 requests); a
   * retried attempt still finds what a lost attempt created (activities/objects.ts, CreateProgress).
   */
  unlisted?: boolean;
  /**
   * Nothing waits on these deploys (a pool-delta pass): poll once when every deploy seen was over, for one GET per
   * object (DeployTimes.sureSchedule), and learn nothing from them (that schedule would skew what is learned).
   */
  sure?: boolean;
}

export interface RealizedObject {
  key: string;
  identifier: string;
  /** A lost earlier attempt had created it (see createObject). */
  adopted: boolean;
  /** Ready, failed or gone; NotReady: still deploying when the attempt window ended. */
  outcome: ReadyOutcome | 'NotReady';
  /** The last state read. */
  state: StateName;
}

export interface RealizeOptions {
  /** How long one attempt polls before handing what is still deploying back (default: awaitReady's window). */
  windowMs: number;
  /** Told of every readiness GET (the benchmark counts them per object). */
  onPoll?: (kind: Kind, identifier: string) => void;
}

/**
 * One GET per object when the group is created: the look-alikes of all members, listed once under their common
 * parent (createObject would list them once per member). Only names are compared, as createObject does. The list may
 * be one that another group's creates asked for up to RECENT_LIST_MS before (activities/engine/client.ts): what it
 * records only has to have existed before this group's POSTs (see CreateProgress in activities/objects.ts).
 */
async function lookAlikesOfGroup(engine: EngineClient, memory: IdentifierCache, input: RealizeObjectsInput): Promise<Map<string, string[]>> {
  const listedUnder = KIND_DEFINITIONS[input.kind].listedUnder;
  const parents = new Set(input.members.map((m) => (m.fields as unknown as Record<string, string>)[listedUnder] ?? ''));
  if (parents.size !== 1) throw new Error(`realizeObjects: the members of a group share one ${listedUnder}, got ${[...parents].join(', ')}`);
  const refs = await engine.list(input.kind, { filters: { [listedUnder]: [...parents][0] as string }, recent: true });
  const byName = new Map<string, string[]>();
  // An object being deleted stays listed with its state unchanged: never a look-alike to adopt (as in createObject).
  for (const r of refs) if (!memory.isDeleting(r.identifier)) byName.set(r.name, [...(byName.get(r.name) ?? []), r.identifier]);
  return byName;
}

/**
 * Members of one group being created (POST and tag) at once, at most: a group holds up to 1,000 Servers, and sending
 * all their requests at once left most of them queued past the client's request timeout. Watches are not counted:
 * they sleep between polls.
 */
export const CREATES_AT_ONCE = 8;

type Learning = Pick<DeployTimes, 'schedule' | 'record'>;

/** For objects whose deploy started at an unknown time: the prior schedule, and nothing learned. */
const NO_LEARNING: Learning = { schedule: () => priorSchedule(), record: () => {} };

/** Sleeps `ms`, or less when `halt` is aborted meanwhile (an activity's cancellation still rejects it). */
function sleep(ms: number, halt?: AbortSignal): Promise<void> {
  const ctx = currentContext();
  if (halt?.aborted) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const done = () => {
      halt?.removeEventListener('abort', done);
      if (timer) clearTimeout(timer);
      resolve();
    };
    halt?.addEventListener('abort', done, { once: true });
    if (ctx) ctx.sleep(ms).then(done, (err: unknown) => {
      halt?.removeEventListener('abort', done);
      reject(err);
    });
    else timer = setTimeout(done, ms);
  });
}

/**
 * Polls one object created at `createdAt` on its kind's schedule until it is ready, failed or gone, or until
 * `deadline`; records how long a deploy that finished took.
 */
export async function watchDeploy(
  engine: EngineClient,
  times: Learning,
  o: { kind: Kind; identifier: string; createdAt: number; state: StateName },
  deadline: number,
  onPoll?: RealizeOptions['onPoll'],
  halt?: AbortSignal,
): Promise<{ outcome: ReadyOutcome | 'NotReady'; state: StateName }> {
  const schedule = times.schedule(o.kind);
  let state = o.state;
  let previous: number | null = null;
  let notReadyAt = 0;
  for (;;) {
    const at = schedule.next(previous);
    previous = at;
    if (o.createdAt + at > deadline) return { outcome: 'NotReady', state };
    const wait = o.createdAt + at - Date.now();
    if (wait > 0) await sleep(wait, halt);
    // The group failed elsewhere: hand this object back as still deploying, for the retry to wait for.
    if (halt?.aborted) return { outcome: 'NotReady', state };
    const sentAt = Date.now() - o.createdAt;
    onPoll?.(o.kind, o.identifier);
    try {
      state = stateOf(o.kind, await engine.get(o.kind, o.identifier));
    } catch (err) {
      if (err instanceof EngineNotFoundError) return { outcome: 'Gone', state };
      // A throttled poll is a poll that did not happen: wait out the Engine's backoff and poll again.
      if (!(err instanceof EngineRateLimitedError)) throw err;
      await sleep(err.retryAfterMs, halt);
      continue;
    }
    if (state === 'Deployed' || state === 'Updated') {
      times.record(o.kind, notReadyAt, sentAt);
      return { outcome: state, state };
    }
    if (state === 'DeploymentError') return { outcome: state, state };
    notReadyAt = sentAt;
  }
}

/**
 * When one member fails, the attempt fails, but only once every other member has come to rest: a member whose POST
 * was sent finishes its create and tag (or records the identifier for the retry) before the attempt ends, a member
 * not yet at its POST does not send it, and readiness watches stop. An attempt that returned while a sibling's POST
 * was still on its way would leave that object to a request nobody follows up: created after the retry listed its
 * look-alikes (so the retry creates a second one) and untagged if its tag request then fails.
 */
export async function realizeObjects(engine: EngineClient, memory: IdentifierCache, times: DeployTimes, input: RealizeObjectsInput, o: RealizeOptions): Promise<RealizedObject[]> {
  const hb = new SharedHeartbeat<CreateProgress>().start();
  const halt = new AbortController();
  try {
    const deadline = Date.now() + o.windowMs;
    const slots = input.members.map((m) => ({ member: m, slot: hb.slot(m.key) }));
    // The first attempt lists the look-alikes of all members at once and records them before any POST.
    if (!input.unlisted && slots.some((s) => s.slot.previous === undefined) && (currentContext()?.info.attempt ?? 1) === 1) {
      const byName = await lookAlikesOfGroup(engine, memory, input);
      for (const s of slots) if (s.slot.previous === undefined) s.slot.record({ preexisting: byName.get(s.member.fields.name) ?? [] });
    }
    const creating = concurrencyLimit(CREATES_AT_ONCE);
    const learning: Learning = input.sure ? { schedule: (kind) => times.sureSchedule(kind), record: () => {} } : times;
    const settled = await Promise.allSettled(
      slots.map(async ({ member, slot }): Promise<RealizedObject> => {
        try {
          const fields = { serviceUid: input.serviceUid, kind: input.kind, fields: member.fields, loadBalancer: input.loadBalancer } as CreateObjectInput;
          const created = await creating(() => createObject(engine, memory, fields, slot, halt.signal, { unlisted: input.unlisted === true }));
          // Deploy times count from the moment the create (and tag) returned, as the schedule does. An adopted object may
          // have been created long ago: its deploy time is unknown, so it is not learned from.
          const watched = await watchDeploy(
            engine,
            created.adopted ? NO_LEARNING : learning,
            { kind: input.kind, identifier: created.identifier, createdAt: Date.now(), state: created.state },
            deadline,
            o.onPoll,
            halt.signal,
          );
          return { key: member.key, identifier: created.identifier, adopted: created.adopted, ...watched };
        } catch (err) {
          if (!halt.signal.aborted) halt.abort(err);
          throw err;
        }
      }),
    );
    // The first failure in time is the attempt's failure; the others only followed it.
    if (halt.signal.aborted) throw halt.signal.reason;
    return settled.map((r) => (r as PromiseFulfilledResult<RealizedObject>).value);
  } finally {
    hb.stop();
  }
}
