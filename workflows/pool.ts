/**
 * serverPool: the long-lived workflow of one server pool (id `lbaas-pool/<name>`). It holds the members and a
 * revision that grows with every real change, and nothing about the services using it: each revision is sent to them
 * by a delivery round, a child workflow that finds them through visibility (workflows/pool-round.ts), and a service
 * starting to use the pool reads the members itself (activities/pools.ts). docs/architecture.md, "Server pools", has
 * the design and the ordering argument.
 *
 *   idle ──change or resync, no round running──▶ start a round for the current revision ──▶ idle
 *   idle ──the running round ended (its roundEnded signal), a change made meanwhile──▶ start the next round ──▶ idle
 *   idle ──delete accepted──▶ end
 *   idle ──history long, or a new target build──▶ continue-as-new (members, revision, the newest round carried over)
 *
 * PINNED (workflows/versioning.ts), and it moves to a new build by continue-as-new as the controller does
 * (workflows/controller.ts): only the input and the messages cross builds (contract/schema.ts). Inputs without `v: 2`
 * are runs of the previous release and run its loop (workflows/legacy/pool.ts); its continue-as-new input (members,
 * revision and subscribers) is read here, the subscribers dropped (workflows/pool-members.ts).
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  makeContinueAsNewFunc,
  ParentClosePolicy,
  setCurrentDetails,
  setHandler,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { formatIssues, SPEC_LIMITS, validateMembers, type ServerSpec } from '../domain';
import { invalidInput } from './input';
import { runsPreviousLoop } from './legacy/dispatch';
import { legacyServerPool } from './legacy/pool';
import {
  poolAddUpdate,
  poolDeleteUpdate,
  poolMembersSignal,
  poolRemoveUpdate,
  poolReportSignal,
  poolResyncSignal,
  poolRoundEndedSignal,
  poolSetUpdate,
  poolStatusQuery,
  poolSubscribeSignal,
  poolUnsubscribeSignal,
  searchAttributes,
  poolWakeSignal,
  workflowIds,
  readPoolReport,
  readRoundEnded,
  readServiceRef,
  readWake,
  SCHEMA_VERSION,
} from '../contract';
import { PoolMembersState } from './pool-members';
import { poolRound } from './pool-round';
import { readEntityInput, readPoolInput, type ServerPoolInput } from './entity-inputs';

export type { ServerPoolInput } from './entity-inputs';

/** A pool's history grows by a handful of events per change: rotating at 2,000 keeps replays short. */
export const POOL_CONTINUE_AS_NEW_EVENTS = 2_000;

/**
 * The youngest a run continues as new. Temporal holds back the first workflow task of a run whose predecessor lived
 * less than `history.continueAsNewMinInterval` (1 s by default) for the rest of that second, and the signals sent
 * meanwhile pile up for that task: hundreds under a stream of them. A task that slow lets more than the server's
 * 100 buffered events (`history.maximumBufferedEventsBatch`) arrive while it runs, the server fails it, and every
 * retry replays the longer run (docs/architecture.md, "Server pools").
 */
export const POOL_MIN_RUN_MS = 1_000;

/**
 * A young run waits for its second only while its history is this short. Under a stream of signals the wait gathers
 * them in many short tasks, and the rotation after it (a task that completes the run) fails as soon as one more
 * signal arrives while it runs; the worker then replays the whole run, and a replay of a few hundred events outlasts
 * the next 100 buffered events, so every attempt is force-closed (docs/architecture.md, "Server pools"). At 100 a
 * run of 94 events still replayed for 1.5 s on a loaded machine. Past this length the run rotates at once, young or
 * not: its successor's held-back first task costs less than that replay.
 */
export const POOL_YOUNG_RUN_MAX_EVENTS = 50;

export async function serverPool(input: ServerPoolInput): Promise<{ name: string; revision: number }> {
  const v = (input as { v?: unknown } | undefined)?.v;
  // The previous release's runs, and `v: 2` runs it started, replay its loop (workflows/legacy/dispatch.ts).
  if (runsPreviousLoop(input)) return legacyServerPool(input as unknown as Parameters<typeof legacyServerPool>[0]);
  // Read strictly, the fields the previous release's pool loop wrote included (workflows/entity-inputs.ts).
  const read = readEntityInput(() => {
    if (v !== SCHEMA_VERSION) throw invalidInput(`serverPool: v: this build reads schema version ${SCHEMA_VERSION} (or none: the previous release), got ${JSON.stringify(v)}`);
    return readPoolInput(input);
  });
  const name = read.name;
  const historyLimit = read.historyLimit ?? POOL_CONTINUE_AS_NEW_EVENTS;
  const roundPageSize = read.roundPageSize;
  const minRunMsKnob = read.minRunMs;
  const minRunMs = minRunMsKnob ?? POOL_MIN_RUN_MS;
  const st = new PoolMembersState(name, read.state);
  // The first task's start: a run that began with a held-back task lived from here, as the server counts it.
  const runBegan = Date.now();
  const publish = () => setCurrentDetails(st.details());

  const members = (value: unknown): ServerSpec[] => {
    const r = validateMembers(value);
    if (!r.ok) throw new Error(`invalid servers:\n${formatIssues(r.issues)}`);
    return r.servers;
  };
  const notDeleting = () => {
    if (st.deleting) throw new Error(`server pool ${name} is being deleted`);
  };
  const change = { validator: (value: unknown) => (notDeleting(), void members(value)) };
  setHandler(poolSetUpdate, (servers) => done(st.set(members(servers))), { ...change, description: 'Replace the members; a new revision only when they differ.' });
  setHandler(poolAddUpdate, (servers) => done(st.add(members(servers))), { ...change, description: 'Add members, or change the address of members of that name.' });
  setHandler(poolRemoveUpdate, (names) => done(st.remove(names as string[])), {
    validator: (names: unknown) => {
      notDeleting();
      if (!Array.isArray(names) || names.length === 0 || names.length > SPEC_LIMITS.servers || !names.every((n) => typeof n === 'string' && n !== '')) {
        throw new Error(`names: must be a list of 1 to ${SPEC_LIMITS.servers} server names`);
      }
    },
    description: 'Remove members by name; names that are not members are ignored.',
  });
  setHandler(
    poolDeleteUpdate,
    () => {
      st.deleting = true;
      publish();
      return { name, revision: st.revision };
    },
    {
      validator: notDeleting,
      // The pool does not know its services: the client refuses a delete while visibility shows any
      // (client/pool-client.ts), and a service that starts using the pool after it reads it missing.
      description: 'End the pool (the client checks first that no service uses it).',
    },
  );
  setHandler(poolStatusQuery, () => st.status(), { description: 'Members, revision, and the newest delivery round.' });
  setHandler(poolResyncSignal, () => done(st.resync()));
  // A signal's payload that does not read is dropped with a warning: a handler that threw would fail the workflow
  // task, and the pool with it.
  const dropped = (r: { ok: boolean; error?: string }) => {
    if (!r.ok) log.warn(`serverPool ${name}: signal dropped: ${r.error}`, { pool: name });
  };
  setHandler(poolRoundEndedSignal, (m) => {
    const r = readRoundEnded(m);
    if (r.ok) done(st.roundEnded(r.value.round));
    else dropped(r);
  });
  // A controller of the previous release subscribes and waits for the members: answered once, nothing kept.
  setHandler(poolSubscribeSignal, async (m) => {
    const r = readServiceRef(m, 'subscribe');
    if (!r.ok) return dropped(r);
    if (st.revision === 0) return;
    await getExternalWorkflowHandle(workflowIds.controller(r.value.serviceUid))
      .signal(poolMembersSignal, { v: SCHEMA_VERSION, pool: name, revision: st.revision, servers: st.servers })
      .catch(() => undefined);
  });
  // Reports and unsubscribes of the previous release's controllers: nothing to keep (handled, so not buffered); read
  // only to warn of a payload that does not.
  setHandler(poolReportSignal, (m) => dropped(readPoolReport(m)));
  setHandler(poolUnsubscribeSignal, (m) => dropped(readServiceRef(m, 'unsubscribe')));
  // A worker of a new Current Version wakes every entity still on another build (worker/wake.ts).
  setHandler(poolWakeSignal, (m) => dropped(readWake(m)));

  function done<T>(result: T): T {
    publish();
    return result;
  }

  upsertSearchAttributes([{ key: searchAttributes.serverPool, value: name }]);
  publish();

  const historyIsLong = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > historyLimit;
  const moved = () => workflowInfo().targetWorkerDeploymentVersionChanged;
  const rotateNow = () => (historyIsLong() || moved()) && !st.deleting;
  const youngFor = () => minRunMs - (Date.now() - runBegan);
  // A long history (or a new build) rotates before another round starts; the round due is carried in the snapshot
  // (`delivered` behind `revision`, or `resend`) and the next run starts it. A round's start takes workflow tasks of
  // its own (the child's start, its end), in which more messages arrive: it must not stand between a long history and
  // its rotation, nor run while a run too young to rotate waits (docs/architecture.md, "Server pools"). Starting
  // rounds in that wait instead failed the storm of test/workflow/pool-updates-rotating.test.ts 4 times in 4.
  for (;;) {
    await condition(() => st.roundStartable() || st.deleting || rotateNow());
    if (st.roundStartable() && !st.deleting && !rotateNow()) {
      await startRound();
      publish();
      continue;
    }
    if (!st.deleting && youngFor() > 0 && workflowInfo().historyLength <= POOL_YOUNG_RUN_MAX_EVENTS) {
      // Messages are handled meanwhile as they come, in short tasks; a history grown past the bound ends the wait.
      await condition(() => workflowInfo().historyLength > POOL_YOUNG_RUN_MAX_EVENTS, youngFor());
      continue;
    }
    // Handlers finish first: an update answered by this run is not left to the next one. Today's update handlers are
    // synchronous; only the previous release's subscribe answer (one signal) can be running.
    await condition(allHandlersFinished);
    if (st.deleting) return { name, revision: st.revision };
    const next: ServerPoolInput = { v: SCHEMA_VERSION, name, state: st.snapshot(), ...(input.historyLimit ? { historyLimit } : {}), ...(roundPageSize ? { roundPageSize } : {}), ...(minRunMsKnob !== undefined ? { minRunMs: minRunMsKnob } : {}) };
    if (moved()) return makeContinueAsNewFunc<typeof serverPool>({ initialVersioningBehavior: 'AUTO_UPGRADE' })(next);
    return continueAsNew<typeof serverPool>(next);
  }

  /**
   * Starts the round of the current revision; no other round is running. The round outlives this run (ABANDON): a
   * pool that continues as new does not cut it short, and the round's roundEnded signal reaches whichever run is
   * current. This run also sees the end of its own round, however it ends (failed, terminated by hand), so a round
   * that never signals does not hold the next one while this run lasts.
   */
  async function startRound(): Promise<void> {
    const chain = workflowInfo().firstExecutionRunId.slice(0, 8);
    const { round, members } = st.beginRound((n) => workflowIds.poolRound(name, `${chain}-${n}`));
    try {
      const child = await startChild(poolRound, {
        workflowId: round.workflowId,
        args: [{ v: SCHEMA_VERSION, pool: name, revision: round.revision, ...members, ...(roundPageSize ? { pageSize: roundPageSize } : {}), ...(input.historyLimit ? { historyLimit } : {}) }],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        staticSummary: `server pool ${name}: deliver revision ${round.revision} (round ${round.number})`,
        typedSearchAttributes: [{ key: searchAttributes.serverPool, value: name }],
      });
      const ended = () => done(st.roundEnded(round.workflowId));
      child.result().then(ended, ended);
    } catch (err) {
      // Started already: this task ran before and its start went through (the round is running; nothing to redo).
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }
}
