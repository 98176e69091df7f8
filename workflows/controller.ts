/**
 * serviceController: the long-lived workflow of one service (id `lbaas/<uid>`, docs/spec.md#temporal-surface). It
 * holds the desired spec and its revision, runs one pass at a time as a child reconcileService, lets the latest spec
 * win, retries failed passes with growing delays, resyncs on demand, deletes, and continues as new before its history
 * grows large. The entity state lives in ControllerState (controller-state.ts); this file is the loop and handlers
 * (a little over 300 lines: the server pool helpers at the end share the loop's closure).
 *
 * PINNED (workflows/versioning.ts): a run stays on the build that started it. Whenever it wakes idle on a build that
 * is no longer the Deployment's target (`targetWorkerDeploymentVersionChanged`), it continues as new onto the new
 * build (AUTO_UPGRADE for the first task only, then pinned there): only the continue-as-new input and the messages
 * cross builds (contract/schema.ts), so this loop carries no patch. Inputs without `v: 2` are runs of the previous
 * release and run its loop (workflows/legacy/controller.ts), which moves them here; workflows/legacy/dispatch.ts, asked
 * before the loop, also tells a `v: 2` run the previous release started from one this build started, and goes with
 * that module.
 *
 * The loop is a state machine (docs/architecture.md, "Controller states", has the full diagram):
 *
 *   idle ──work (revision, resync, retry due)──▶ reconcile ──▶ idle, or rotate if nothing is pending and history is long
 *   idle ──delete requested──▶ delete ──converged──▶ end (the workflow returns)
 *                               delete ──failed──▶ idle (retried after the retry delay)
 *   idle ──nothing pending, history long──▶ rotate ──▶ continue-as-new (state carried in ControllerSnapshot)
 *   idle ──no pass running, no handler running, a new target build──▶ rotate onto that build
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  ChildWorkflowFailure,
  type ChildWorkflowHandle,
  condition,
  continueAsNew,
  log,
  makeContinueAsNewFunc,
  getExternalWorkflowHandle,
  startChild,
  isCancellation,
  ParentClosePolicy,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  TerminatedFailure,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { checkApplied, ControllerState, passSpec, wasTerminated, type RunningPass } from './controller-state';
import { readControllerInput, readEntityInput, type ServiceControllerInput } from './entity-inputs';
import { invalidInput, MAX_KNOWN } from './input';
import {
  applyAndWaitUpdate,
  applyUpdate,
  controllerStatusQuery,
  deleteUpdate,
  FAILURE_TYPES,
  PASS_TERMINATED,
  poolMembersSignal,
  supersededCreatesSignal,
  resyncPassUpdate,
  resyncSignal,
  searchAttributes,
  waitConvergedUpdate,
  wakeSignal,
  workflowIds,
  readPoolMembers,
  readSupersededCreates,
  readWake,
  SCHEMA_VERSION,
  type PassResult,
  type Phase,
  type PoolMembers,
  type ReconcileServiceResult,
} from '../contract';
import { advancePoolIndex, membersOf, withOnlyServers, type DeltaPlan, type ObjectStatus, type PoolIndex } from '../domain';
import { reconcilePoolDelta, type ReconcilePoolDeltaResult } from './reconcile-delta';
import { legacyServiceController } from './legacy/controller';
import { runsPreviousLoop } from './legacy/dispatch';
import { reconcileService } from './reconcile-service';
import { RequestTraces } from './trace-context';
import { causeOf, childFailureOfType, failureDetails } from './failures';
import type { PoolActivities } from '../activities/pools';

/**
 * Reading a pool's members (activities/pools.ts): a few attempts, then the service's revision fails naming the
 * pool and the cause (an apply or a resync tries again), rather than a loop stuck where a delete cannot reach it.
 */
const poolRead = proxyActivities<PoolActivities>({
  startToCloseTimeout: '1m',
  heartbeatTimeout: '20s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 5 },
});

/** The steps of the controller loop (the state diagram is in docs/architecture.md and at the top of this file). */
type Step = 'idle' | 'reconcile' | 'delete' | 'rotate';

export type { ServiceControllerInput } from './entity-inputs';

/**
 * Continue as new well before the server's suggestion (about 4k events): each pass adds a few dozen events, and a
 * fresh run keeps replays after a worker restart fast.
 */
export const CONTINUE_AS_NEW_EVENTS = 2_000;

export async function serviceController(input: ServiceControllerInput): Promise<PassResult> {
  const v = (input as { v?: unknown } | undefined)?.v;
  // The previous release's runs, and `v: 2` runs it started, replay its loop (workflows/legacy/dispatch.ts).
  if (runsPreviousLoop(input)) return legacyServiceController(input as unknown as Parameters<typeof legacyServiceController>[0]);
  // Any client may start a controller, and continue-as-new carries this input across builds: read strictly, the
  // fields of the previous release's snapshots included (workflows/entity-inputs.ts).
  const read = readEntityInput(() => {
    if (v !== SCHEMA_VERSION) throw invalidInput(`serviceController: v: this build reads schema version ${SCHEMA_VERSION} (or none: the previous release), got ${JSON.stringify(v)}`);
    return readControllerInput(input);
  });
  const uid = read.serviceUid;
  const historyLimit = read.historyLimit ?? CONTINUE_AS_NEW_EVENTS;
  const st = new ControllerState(uid, read.state, () => Date.now());
  // A new run reads its pool again: a delivery round listing visibility while this run's record was not there yet
  // (between the previous run's close and this one's start) did not signal it.
  if (read.state) st.pool.resync();
  // The request each pass is traced under (trace-context.ts).
  const traces = new RequestTraces();

  // Defined before the handlers: update-with-start delivers the first apply in the very first activation.
  let published: { phase: Phase; lbs: string; poolRevision: number | null } | null = null;
  let publishedPool: string | null = null;
  const publish = () => {
    // Only controllers that use (or used) a pool upsert LbaasServerPool: the others replay unchanged. Upserted before
    // the pool's members are read (syncPool): the order a pool's delivery rounds rely on (activities/pools.ts).
    if (st.poolName !== publishedPool) {
      upsertSearchAttributes([{ key: searchAttributes.serverPool, value: st.poolName }]);
      publishedPool = st.poolName;
    }
    const phase = st.phase;
    const lbs = st.loadBalancers();
    const key = lbs.join(',');
    // The pool revision the last finished pass reconciled, with the phase in the same upsert: a pool's convergence
    // is counted from the two (client/pool-client.ts).
    const last = st.lastResult?.pool;
    const poolRevision = last && last.name === st.poolName ? last.revision : null;
    if (!published || published.phase !== phase || published.lbs !== key || published.poolRevision !== poolRevision) {
      const withPool = poolRevision !== null || (published?.poolRevision ?? null) !== null;
      upsertSearchAttributes([
        { key: searchAttributes.phase, value: phase },
        { key: searchAttributes.loadBalancers, value: lbs },
        ...(withPool ? [{ key: searchAttributes.poolRevision, value: poolRevision }] : []),
      ]);
      published = { phase, lbs: key, poolRevision };
    }
    setCurrentDetails(st.details());
  };
  const apply = (spec: unknown): number => {
    const revision = st.apply(spec);
    traces.note();
    publish();
    return revision;
  };
  const validateApplied = (spec: unknown) => {
    if (st.deleting) throw new Error(`service ${uid} is being deleted; apply again once the delete has finished`);
    // Any Temporal client can send an update: this is where a spec from one is validated, once, with every issue
    // named by its field. The passes get the validated value and do not parse it again.
    const checked = checkApplied(uid, spec);
    if (!checked.ok) throw new Error(checked.error);
  };
  const converged = async (revision: number): Promise<PassResult> => {
    await condition(() => st.resultFor(revision) !== null);
    return st.resultFor(revision) as PassResult;
  };
  setHandler(applyUpdate, (spec: unknown) => ({ revision: apply(spec) }), {
    validator: validateApplied,
    description: 'Set the desired spec; returns its revision. The latest spec wins.',
  });
  setHandler(
    applyAndWaitUpdate,
    async (spec: unknown) => {
      const revision = apply(spec);
      return { revision, result: await converged(revision) };
    },
    {
      validator: validateApplied,
      description: 'apply, then waitConverged of the revision it set: returns the revision and the result of its pass.',
    },
  );
  setHandler(
    waitConvergedUpdate,
    converged,
    {
      validator: (revision: number) => {
        if (!Number.isInteger(revision) || revision < 1 || revision > st.revision) throw new Error(`revision: must be an applied revision from 1 to ${st.revision}`);
      },
      description: 'Wait for the first finished pass of this revision or a newer one, and return its result.',
    },
  );
  setHandler(
    deleteUpdate,
    async () => {
      st.requestDelete();
      traces.note();
      publish();
      await condition(() => st.deleted !== null);
      return st.deleted as PassResult;
    },
    { description: 'Remove everything the service owns on every load balancer, then end this controller.' },
  );
  setHandler(resyncSignal, () => {
    st.requestResync();
    traces.note();
  });
  setHandler(
    resyncPassUpdate,
    async () => {
      const before = st.lastResult;
      st.requestResync();
      traces.note();
      // Settled: no pass running, none pending (a failed pass waits for its retry), and a result newer than the
      // request's. A pass already running when the request came ends with work still pending, so it never answers.
      // A service waiting for its pool's members runs no pass: that answers too, or the handler would hold off
      // continue-as-new. A pass terminated from outside answers nothing: its retry follows at the first retry step.
      await condition(() => st.deleting || (st.running === null && !st.hasWork() && ((st.lastResult !== before && !wasTerminated(st.lastResult)) || !st.poolReady())));
      if (st.deleting) throw ApplicationFailure.create({ type: 'ServiceDeleting', message: `service ${uid} is being deleted`, nonRetryable: true });
      if (st.lastResult === before || st.lastResult === null) {
        throw ApplicationFailure.create({ type: 'NoPass', message: `service ${uid}: no pass ran: waiting for the members of server pool ${st.poolName}`, nonRetryable: true });
      }
      return st.lastResult;
    },
    {
      validator: () => {
        if (st.deleting) throw new Error(`service ${uid} is being deleted; nothing to resync`);
      },
      description: 'Reconcile now against what the Engine has; returns the result of the pass that did it.',
    },
  );
  // A signal's payload that does not read is dropped with a warning: a handler that threw would fail the workflow
  // task, and the entity with it.
  const dropped = (r: { ok: false; error: string }) => log.warn(`serviceController ${uid}: signal dropped: ${r.error}`, { serviceUid: uid });
  setHandler(supersededCreatesSignal, (m) => {
    const r = readSupersededCreates(m);
    if (r.ok) st.noteSupersededCreates(r.value.identifiers);
    else dropped(r);
  });
  setHandler(poolMembersSignal, (m) => {
    const r = readPoolMembers(m);
    if (!r.ok) return dropped(r);
    st.receiveMembers(r.value);
    traces.note();
    publish();
  });
  // A worker of a new Current Version wakes every entity still on another build (worker/wake.ts): the workflow task
  // is what matters, where the loop reads targetWorkerDeploymentVersionChanged.
  setHandler(wakeSignal, (m) => {
    const r = readWake(m);
    if (!r.ok) dropped(r);
  });
  setHandler(controllerStatusQuery, () => st.status(), { description: 'Phase, revision, status, per load balancer and per object.' });

  upsertSearchAttributes([{ key: searchAttributes.serviceUid, value: uid }]);
  publish();

  const historyIsLong = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > historyLimit;
  const idleAndLong = () => !st.hasWork() && historyIsLong();
  /**
   * Another build is the target now, and nothing is in flight that the next run could not pick up from the snapshot:
   * no pass running (it finishes on this build first: passes are pinned here too) and no handler running (a wait
   * answered by the next pass would otherwise hold the move, and the move would hold the pass). Work due or a retry
   * scheduled is carried over.
   */
  const moveWanted = () => workflowInfo().targetWorkerDeploymentVersionChanged && st.running === null && !st.deleting && allHandlersFinished();
  /** After a pass (or a wake-up with nothing to do): rotate if the history is long and nothing is pending. */
  const afterWork = (): Step => (!st.hasWork() && historyIsLong() ? 'rotate' : 'idle');

  /**
   * Idle: wait for work (a new revision, a resync, a delete, or the retry delay of a failed pass running out).
   * Updates and queries grow the history too, so a long history also wakes the loop, to continue as new.
   */
  const idle = async (): Promise<Step> => {
    if (st.needsSubscription()) await syncPool();
    if (idleAndLong() || moveWanted()) return 'rotate';
    const retryIn = st.retryDelayMs();
    const wake = () => st.hasWork() || idleAndLong() || st.needsSubscription() || moveWanted();
    if (retryIn === null) await condition(wake);
    else if (retryIn <= 0 || !(await condition(wake, retryIn))) st.retryDue();
    if (st.needsSubscription()) return 'idle';
    if (idleAndLong() || moveWanted()) return 'rotate';
    if (st.deleting) return 'delete';
    return st.hasWork() ? 'reconcile' : afterWork();
  };

  for (let step: Step = 'idle'; ; ) {
    switch (step) {
      case 'idle':
        step = await idle();
        break;
      case 'reconcile': {
        // Only the pool's members changed since the last converged pass (whether the round's signal or this
        // controller's own read brought them): write just that (reconcile-delta.ts). A delta that finds its knowledge
        // stale returns null, and the full pass follows at once.
        const delta = st.poolDelta();
        const result = delta ? await runDelta(st, delta) : await runPass(st, { teardown: false });
        publish();
        step = result ? afterWork() : 'idle';
        break;
      }
      case 'delete': {
        const result = await runPass(st, { teardown: true });
        if (!result.converged) {
          // Retried from idle once the retry delay runs out: a delete is never given up.
          publish();
          step = 'idle';
          break;
        }
        st.finishDelete(result);
        publish();
        await condition(allHandlersFinished);
        return result;
      }
      case 'rotate': {
        await condition(allHandlersFinished);
        const next: ServiceControllerInput = { v: SCHEMA_VERSION, serviceUid: uid, state: st.snapshot(), ...(input.historyLimit ? { historyLimit } : {}) };
        // Onto the target build when it changed (pinned there from its first task); on this build otherwise.
        if (workflowInfo().targetWorkerDeploymentVersionChanged) return makeContinueAsNewFunc<typeof serviceController>({ initialVersioningBehavior: 'AUTO_UPGRADE' })(next);
        return continueAsNew<typeof serviceController>(next);
      }
    }
  }

  /**
   * One pass as a child reconcileService. A newer revision (or a delete) arriving meanwhile cancels it: the child
   * cancels its load balancer children, which stop at their next activity boundary. Its result, if it still
   * finished, is recorded for its own revision only.
   */
  async function runPass(state: ControllerState, o: { teardown: boolean }): Promise<PassResult> {
    const pass = state.beginPass();
    publish();
    const cancel = supersedeWatch(state, pass);
    let result: PassResult;
    const pool = pass.pool ? { pool: { name: pass.pool.pool, revision: pass.pool.revision } } : {};
    const resolved = passSpec(pass);
    if (!resolved.ok) {
      result = { ...failedResult(uid, pass, new Error(resolved.message)), ...pool };
      state.endPass(pass, result);
      return result;
    }
    const spec = resolved.spec;
    try {
      const { index, ...r }: ReconcileServiceResult = await cancel.run(() =>
        traces.startUnderLatest(() =>
          startChild(reconcileService, {
            workflowId: workflowIds.pass(uid, pass.number),
            args: [{ spec, revision: pass.revision, ...(o.teardown ? { teardown: true } : {}), ...(pass.pool && !o.teardown ? { index: true } : {}), ...knownOf(state) }],
            staticSummary: `${o.teardown ? 'delete' : 'reconcile'} ${uid} revision ${pass.revision} (pass ${pass.number})`,
            typedSearchAttributes: [
              { key: searchAttributes.serviceUid, value: uid },
              { key: searchAttributes.loadBalancers, value: state.loadBalancers() },
            ],
            parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
          }),
        ),
      );
      result = { ...r, revision: pass.revision, pass: pass.number, finishedAt: Date.now(), ...pool };
      // What a pool-delta pass needs from this one: its identifiers, for the members and revision it reconciled.
      const poolIndex: PoolIndex | null =
        index && pass.pool && result.converged ? { revision: pass.revision, pool: pass.pool.pool, poolRevision: pass.pool.revision, members: membersOf(pass.pool.servers), loadBalancers: index } : null;
      state.endPass(pass, result, { index: poolIndex });
      return result;
    } catch (err) {
      if (isCancellation(err) && state.isSuperseded(pass)) {
        state.endPass(pass, null);
        return { serviceUid: uid, revision: pass.revision, converged: false, status: {}, loadBalancers: {}, objects: [], pass: pass.number, finishedAt: Date.now(), error: 'superseded' };
      }
      if (isCancellation(err)) throw err;
      if (err instanceof ChildWorkflowFailure && err.cause instanceof TerminatedFailure) {
        // Ended from outside, most often by a worker's sweep because its build is gone (worker/stranded.ts): a fresh
        // pass on the current build adopts what it created. Not the service's failure, so not counted as one.
        result = { ...failedResult(uid, pass, err), error: `${PASS_TERMINATED} (${workflowIds.pass(uid, pass.number)}): retried`, ...pool };
        state.endPass(pass, result, { terminated: true });
        return result;
      }
      result = { ...failedResult(uid, pass, err), ...pool };
    }
    state.endPass(pass, result);
    return result;
  }

  /**
   * A pool-delta pass as a child reconcilePoolDelta: the joining members' Servers created, the leaving members'
   * removed, from the index of the last converged pass. Newer pool members wait for it (another delta follows); a new
   * spec or a delete cancels it. Null when it stopped short (stale knowledge, or ended from outside): the index is
   * dropped, what it created is handed to the full pass that follows as known identifiers.
   */
  async function runDelta(state: ControllerState, plan: DeltaPlan): Promise<PassResult | null> {
    const index = state.poolIndex as PoolIndex;
    const last = state.lastResult;
    const pass = state.beginPass({ delta: true });
    const members = pass.pool;
    // The spec with every member must stay within the limits (resolvePool checks the members): else the full pass
    // reports why. The joining members are a subset of it, handed down as they are.
    const whole = members ? passSpec(pass) : null;
    if (!members || !last || !whole?.ok) {
      state.endPass(pass, null);
      return null;
    }
    publish();
    const cancel = supersedeWatch(state, pass);
    const backends: Record<string, Record<string, string>> = {};
    for (const [lb, ids] of Object.entries(index.loadBalancers)) {
      for (const [key, id] of Object.entries(ids)) if (key.startsWith('backend:')) (backends[lb] ??= {})[key.slice('backend:'.length)] = id;
    }
    let r: ReconcilePoolDeltaResult;
    try {
      r = await cancel.run(() =>
        traces.startUnderLatest(() =>
          startChild(reconcilePoolDelta, {
            workflowId: workflowIds.pass(uid, pass.number),
            args: [{ spec: withOnlyServers(whole.spec, new Set(plan.joins.map((j) => j.name))), revision: pass.revision, backends, destroys: plan.destroys }],
            staticSummary: `pool delta ${uid} revision ${pass.revision} (pass ${pass.number}): ${plan.joins.length} joining, ${plan.leaves.length} leaving`,
            typedSearchAttributes: [
              { key: searchAttributes.serviceUid, value: uid },
              { key: searchAttributes.loadBalancers, value: state.loadBalancers() },
            ],
            parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
          }),
        ),
      );
    } catch (err) {
      if (isCancellation(err) && state.isSuperseded(pass)) {
        state.endPass(pass, null);
        return { serviceUid: uid, revision: pass.revision, converged: false, status: {}, loadBalancers: {}, objects: [], pass: pass.number, finishedAt: Date.now(), error: 'superseded' };
      }
      if (isCancellation(err)) throw err;
      // Ended from outside or failed: the full pass follows and finds what it created.
      state.endPass(pass, null);
      return null;
    }
    // Handed to the next full pass as known identifiers: the tag index may not list them yet.
    state.noteSupersededCreates(r.created.map((c) => c.identifier));
    state.forgetCreates(r.destroyed.map((d) => d.identifier));
    if (r.stale !== undefined) {
      state.endPass(pass, null);
      return null;
    }
    const result = deltaResult(last, pass, members, r);
    state.endPass(pass, result, { index: advancePoolIndex(index, { poolRevision: members.revision, members: members.servers, created: r.created, destroyed: r.destroyed }) });
    return result;
  }

  /**
   * Starts using the spec's pool (or stops using one the spec no longer names): the pool keeps no subscribers, so
   * joining is reading its members, after this run's LbaasServerPool is visible (activities/pools.ts says why that
   * order leaves no service on an old revision). Newer members arrive later by a delivery round's signal.
   */
  async function syncPool(): Promise<void> {
    const { leave, join } = st.pool.step();
    if (leave !== null) st.pool.left();
    if (join !== null) {
      publish();
      const info = workflowInfo();
      try {
        const members = await poolRead.readServerPool.executeWithOptions({ summary: `read server pool ${join}` }, [{ pool: join, workflowId: info.workflowId, runId: info.runId }]);
        if (members) {
          st.pool.joined(join);
          st.receiveMembers(members);
        } else st.poolFailed(join, `serverPool ${join}: no such server pool (create it with: lbaas pool set -f FILE)`);
      } catch (err) {
        st.poolFailed(join, `serverPool ${join}: could not read the pool's members (${causeOf(err)}); lbaas resync ${uid} tries again`);
      }
    }
    publish();
  }
}

/**
 * Runs a pass's child in a scope that is cancelled once the pass is superseded. A cancel that comes while the child's
 * start command is sent but the start not yet recorded goes out at once as a cancel request for a child the server may
 * not have created yet: nothing orders that request before the start, and one taken first fails as not found, so the
 * child would run to its end and answer the waiters of its revision. Such a cancel is requested again once the start is
 * recorded, of the started run. Only then: a child cancelled once started, or before its start command left, is
 * cancelled by the scope alone, and those histories keep their commands.
 */
function supersedeWatch(state: ControllerState, pass: RunningPass) {
  const scope = new CancellationScope();
  let started = false;
  let cancelledWhileStarting = false;
  // The watch ends with the pass either way.
  void condition(() => state.running !== pass || state.isSuperseded(pass)).then(() => {
    if (!state.isSuperseded(pass)) return;
    if (!started) cancelledWhileStarting = true;
    scope.cancel();
  });
  return {
    async run<R>(start: () => Promise<ChildWorkflowHandle<() => Promise<R>>>): Promise<R> {
      const child = await scope.run(start);
      started = true;
      if (cancelledWhileStarting) {
        // Outside the cancelled scope: a request made inside it would be refused at once.
        // Refused when the first request did reach the child and it has already closed: nothing left to cancel.
        await CancellationScope.nonCancellable(() => getExternalWorkflowHandle(child.workflowId, child.firstExecutionRunId).cancel()).catch(() => undefined);
      }
      return (await child.result()) as R;
    },
  };
}

/**
 * A pool-delta pass's result: the last converged pass's, with the Servers it created and removed (per load balancer
 * and in the object list), for this pass's revision and pool revision.
 */
function deltaResult(last: PassResult, pass: RunningPass, members: PoolMembers, r: ReconcilePoolDeltaResult): PassResult {
  const now = Date.now();
  const gone = new Set(r.destroyed.map((d) => d.identifier));
  const added: ObjectStatus[] = r.created.map((c) => ({ loadBalancer: c.loadBalancer, kind: 'server', key: c.key, name: c.name, identifier: c.identifier, state: c.state, updatedAt: now }));
  const kept = last.objects.filter((o) => o.identifier === null || !gone.has(o.identifier));
  // Past MAX_LISTED_OBJECTS the list holds only objects not ready (status-book.ts): the ready new ones are counted.
  const omitted = last.objectsOmitted ?? 0;
  const objects = omitted > 0 ? kept : [...kept, ...added];
  const omittedNow = omitted > 0 ? Math.max(0, omitted + added.length - (r.destroyed.length - (last.objects.length - kept.length))) : 0;
  const loadBalancers = Object.fromEntries(
    Object.entries(last.loadBalancers)
      .filter(([, s]) => !s.cleanup)
      .map(([lb, s]) => [lb, { ...s, converged: true, created: r.created.filter((c) => c.loadBalancer === lb).length, destroyed: r.destroyed.filter((d) => d.loadBalancer === lb).length, recovered: 0, passes: 1 }]),
  );
  return {
    serviceUid: last.serviceUid,
    revision: pass.revision,
    converged: true,
    status: last.status,
    loadBalancers,
    objects,
    ...(omittedNow > 0 ? { objectsOmitted: omittedNow } : {}),
    pass: pass.number,
    finishedAt: now,
    pool: { name: members.pool, revision: members.revision },
  };
}

function failedResult(uid: string, pass: { number: number; revision: number }, err: unknown): PassResult {
  const partial = failureDetails<Partial<ReconcileServiceResult>>(err);
  return {
    serviceUid: uid,
    revision: pass.revision,
    converged: false,
    status: partial?.status ?? {},
    loadBalancers: partial?.loadBalancers ?? {},
    objects: partial?.objects ?? [],
    pass: pass.number,
    finishedAt: Date.now(),
    // The service-level failure names the load balancer ("<uid> on <lb>: <cause>"); deeper causes do not.
    error: childFailureOfType(err, FAILURE_TYPES.reconcileFailed)?.message ?? causeOf(err),
  };
}

/**
 * The identifiers of the service's objects that the last pass reported, and what superseded passes created since, for
 * the next pass: the Engine's tag index lags behind tagging, and a pass that looked only there could miss what the
 * previous one created seconds ago.
 */
function knownOf(state: ControllerState): { known?: string[] } {
  const reported = (state.lastResult?.objects ?? []).map((o) => o.identifier).filter((id): id is string => typeof id === 'string' && id !== '');
  // Superseded creates first: only they may be missing from the tag index for long; at most MAX_KNOWN in all.
  const ids = [...new Set([...state.supersededCreates, ...reported])].slice(0, MAX_KNOWN);
  return ids.length > 0 ? { known: ids.sort() } : {};
}
