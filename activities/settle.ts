/**
 * settleObjects: recover (when asked) and await a group of existing objects in one activity.
 *
 * Why one activity per group instead of a recoverObject and an awaitReady per object: Temporal refuses to schedule
 * more than 2,000 pending activities per workflow (`limit.numPendingActivities.error`), and a load balancer holds up
 * to 5,000 objects; a port's Servers still deploying when their create group's attempt window ended, or found
 * deploying by an observation, used to be awaited one activity each, and past 2,000 the workflow task failed for
 * good. A group is bounded by its members, the workflow by how many groups it runs at once
 * (workflows/reconcile-lb.ts, MAX_GROUPS_AT_ONCE).
 *
 * What is kept: polling inside one heartbeating attempt (activities/objects.ts says why) and the spec's readiness
 * policy as the retry policy. An attempt that ends with members still deploying fails with a benign NotReady naming
 * them; what earlier attempts settled (and recovered) is carried in the heartbeat details, so a retry polls only the
 * rest and never redeploys twice.
 */
import { ApplicationFailure } from '@temporalio/common';
import { KIND_TITLE, type StateName } from '../domain';
import { EngineNotFoundError, EngineRateLimitedError, toUpdateBody, type EngineClient } from './engine';
import { FAILURE_TYPES } from '../contract';
import { currentContext, withHeartbeat, type Heartbeat } from './heartbeat';
import { stateOf } from './object-state';
import { ATTEMPT_WINDOW_MS, POLL_BACKOFF, POLL_FIRST_MS, POLL_MAX_MS, type AwaitReadyOptions, type ObjectRef, type ReadyOutcome } from './objects';
import { mapLimit, RETRIEVE_CONCURRENCY } from './state';

export interface SettleMember extends ObjectRef {
  /** Redeploy it first (it failed to deploy and the spec's failedResources is `recover`). */
  recover?: boolean;
}

export interface SettleObjectsInput {
  objects: SettleMember[];
}

export interface SettledObject {
  identifier: string;
  outcome: ReadyOutcome;
  /** This activity redeployed it (once, whatever the attempts). */
  recovered: boolean;
}

/** Carried from attempt to attempt: outcomes reached and redeploys sent. */
interface SettleProgress {
  settled: Record<string, ReadyOutcome>;
  recovered: string[];
}

/** Names of the first few members still deploying, for the NotReady message. */
const MESSAGE_NAMES = 5;

async function redeploy(engine: EngineClient, o: ObjectRef): Promise<ReadyOutcome | null> {
  try {
    const object = await engine.get(o.kind, o.identifier);
    if (stateOf(o.kind, object) === 'Updating') return null;
    await engine.update(o.kind, o.identifier, toUpdateBody(o.kind, object as never) as never);
    return null;
  } catch (err) {
    if (err instanceof EngineNotFoundError) return 'Gone';
    throw err;
  }
}

/** Told of what settleObjects does: each object it redeployed, and each readiness GET (the benchmark counts them). */
export interface SettleEvents {
  onRecovered?: (o: ObjectRef) => void;
  onPoll?: (kind: ObjectRef['kind'], identifier: string) => void;
}

export async function settleObjects(engine: EngineClient, input: SettleObjectsInput, opts: AwaitReadyOptions = {}, events: SettleEvents = {}): Promise<SettledObject[]> {
  return withHeartbeat<SettleProgress, SettledObject[]>((hb) => settle(engine, input, opts, hb, events));
}

async function settle(engine: EngineClient, input: SettleObjectsInput, opts: AwaitReadyOptions, hb: Heartbeat<SettleProgress>, { onRecovered, onPoll }: SettleEvents): Promise<SettledObject[]> {
  const ctx = currentContext();
  const settled = new Map<string, ReadyOutcome>(Object.entries(hb.previous?.settled ?? {}));
  const recovered = new Set<string>(hb.previous?.recovered ?? []);
  // The ticker re-sends the latest details while a long round of GETs runs.
  const beat = () => hb.record({ settled: Object.fromEntries(settled), recovered: [...recovered] });
  const deadline = Date.now() + (opts.windowMs ?? ATTEMPT_WINDOW_MS);

  // Redeploys first, each recorded before the next attempt could repeat it.
  await mapLimit(
    input.objects.filter((o) => o.recover && !recovered.has(o.identifier) && !settled.has(o.identifier)),
    RETRIEVE_CONCURRENCY,
    async (o) => {
      const gone = await redeploy(engine, o);
      recovered.add(o.identifier);
      if (gone) settled.set(o.identifier, gone);
      else onRecovered?.(o);
      beat();
    },
  );

  let interval = opts.pollFirstMs ?? POLL_FIRST_MS;
  const max = opts.pollMaxMs ?? POLL_MAX_MS;
  const states = new Map<string, StateName>();
  for (;;) {
    const open = input.objects.filter((o) => !settled.has(o.identifier));
    if (open.length === 0) break;
    let throttled = 0;
    await mapLimit(open, RETRIEVE_CONCURRENCY, async (o) => {
      try {
        onPoll?.(o.kind, o.identifier);
        const state = stateOf(o.kind, await engine.get(o.kind, o.identifier));
        states.set(o.identifier, state);
        if (state === 'Deployed' || state === 'Updated' || state === 'DeploymentError') settled.set(o.identifier, state);
      } catch (err) {
        if (err instanceof EngineNotFoundError) settled.set(o.identifier, 'Gone');
        // A throttled poll is a poll that did not happen: wait out the shared backoff and poll again.
        else if (err instanceof EngineRateLimitedError) throttled = Math.max(throttled, err.retryAfterMs);
        else throw err;
      }
    });
    beat();
    if (input.objects.every((o) => settled.has(o.identifier))) break;
    interval = Math.max(interval, throttled);
    if (Date.now() + interval > deadline) {
      const still = input.objects.filter((o) => !settled.has(o.identifier));
      // One object still deploying is named alone: the message reads as the Web UI shows one wait.
      const names = still.slice(0, MESSAGE_NAMES).map((o) => `${KIND_TITLE[o.kind]} ${o.name} (${o.identifier}) is still ${states.get(o.identifier) ?? 'Unknown'}`);
      const more = still.length > MESSAGE_NAMES ? `, and ${still.length - MESSAGE_NAMES} more` : '';
      throw ApplicationFailure.create({
        type: FAILURE_TYPES.notReady,
        message: still.length === 1 ? (names[0] as string) : `${still.length} of ${input.objects.length} objects are not ready: ${names.join(', ')}${more}`,
        category: 'BENIGN',
      });
    }
    await (ctx ? ctx.sleep(interval) : new Promise((r) => setTimeout(r, interval)));
    interval = Math.min(max, Math.round(interval * POLL_BACKOFF));
  }
  return input.objects.map((o) => ({ identifier: o.identifier, outcome: settled.get(o.identifier) as ReadyOutcome, recovered: recovered.has(o.identifier) }));
}
