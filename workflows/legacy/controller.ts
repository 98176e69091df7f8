/**
 * The serviceController loop of the previous release (the last one whose entities were AUTO_UPGRADE), kept so that
 * its runs replay on this build: once this build is current, such a run's next workflow task comes here and replays
 * its whole history (docs/architecture.md, "Versions and patches"). workflows/controller.ts sends every input without
 * `v: 2` here. It is that release's loop as it was, patches included, with three additions that change nothing it
 * already recorded: the wake signal's handler (a no-op), the patch LEGACY_MOVE_PATCH (at the first idle point this
 * build executes rather than replays, it continues as new), and the continue-as-new input it writes, which is this
 * build's (`v: 2`), so the next run is the current loop's. Remove this file with workflows/legacy/pool.ts in the
 * release after the one that brought it (docs/architecture.md, "Versions and patches", says when and how).
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  ChildWorkflowFailure,
  condition,
  continueAsNew,
  deprecatePatch,
  patched,
  executeChild,
  getExternalWorkflowHandle,
  isCancellation,
  ParentClosePolicy,
  setCurrentDetails,
  setHandler,
  sleep,
  TerminatedFailure,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { ControllerState, passSpec, wasTerminated, type ControllerSnapshot } from '../controller-state';
import type { ServiceControllerInput } from '../entity-inputs';
import { invalidInput, MAX_KNOWN, optionalInteger } from '../input';
import {
  applyUpdate,
  controllerStatusQuery,
  deleteUpdate,
  engineRateLimitedSignal,
  FAILURE_TYPES,
  PASS_TERMINATED,
  poolMembersSignal,
  supersededCreatesSignal,
  poolReportSignal,
  poolSubscribeSignal,
  poolUnsubscribeSignal,
  resyncPassUpdate,
  resyncSignal,
  searchAttributes,
  waitConvergedUpdate,
  wakeSignal,
  workflowIds,
  SCHEMA_VERSION,
  type PassResult,
  type Phase,
  type PoolReport,
  type ReconcileServiceResult,
} from '../../contract';
import { formatIssues, isServiceUid, SERVICE_UID_RULE, validateSpec } from '../../domain';
import { reconcileService } from '../reconcile-service';
import { RequestTraces } from '../trace-context';
import { causeOf, childFailureOfType, failureDetails } from '../failures';

/** The steps of the controller loop (the state diagram is in docs/architecture.md and at the top of this file). */
type Step = 'idle' | 'reconcile' | 'delete' | 'rotate';

/** The previous release's input: no `v`; `state` a snapshot of that release or an earlier one. */
export interface LegacyControllerInput {
  serviceUid: string;
  state?: ControllerSnapshot;
  historyLimit?: number;
}

/**
 * The patch that moves a run of the previous release onto the current loop: its marker is written at the first idle
 * point (no pass running, nothing due, no handler running) that this build executes rather than replays, and the run
 * continues as new there with a `v: 2` input. Replayed tasks of the previous release find no marker and keep their
 * branch.
 */
export const LEGACY_MOVE_PATCH = 'entity-move-to-v2';

/**
 * Which loop a run with a `v: 2` input runs: the current one when its first workflow task ran on this build or a later
 * one (the marker is written there), the previous release's (this file) when that release ran it (a `v: 2` start
 * from a new client while the previous release was still current, or a continue-as-new onto it in a rollback): that
 * release wrote the history, so only its loop replays it. A `v: 2` run of the previous release moves here at its
 * first idle point like any of its runs. workflows/controller.ts and workflows/pool.ts ask it before anything else.
 */
export const ENTITY_LOOP_PATCH = 'entity-loop-v2';

/** As in the previous release (workflows/controller.ts has the current value). */
const CONTINUE_AS_NEW_EVENTS = 2_000;

export async function legacyServiceController(input: LegacyControllerInput): Promise<PassResult> {
  if (!isServiceUid(input?.serviceUid)) {
    throw invalidInput(`serviceController: serviceUid: ${SERVICE_UID_RULE}`);
  }
  const uid = input.serviceUid;
  const historyLimit = optionalInteger(input as unknown as Record<string, unknown>, 'historyLimit', 'serviceController', 20, 50_000) ?? CONTINUE_AS_NEW_EVENTS;
  const st = new ControllerState(uid, input.state, () => Date.now());
  // The request each pass is traced under (trace-context.ts).
  const traces = new RequestTraces();

  // Defined before the handlers: update-with-start delivers the first apply in the very first activation.
  let published: { phase: Phase; lbs: string } | null = null;
  let publishedPool: string | null = null;
  const publish = () => {
    // Only controllers that use (or used) a pool upsert LbaasServerPool: the others replay unchanged.
    if (st.poolName !== publishedPool) {
      upsertSearchAttributes([{ key: searchAttributes.serverPool, value: st.poolName }]);
      publishedPool = st.poolName;
    }
    const phase = st.phase;
    const lbs = st.loadBalancers();
    const key = lbs.join(',');
    if (!published || published.phase !== phase || published.lbs !== key) {
      upsertSearchAttributes([
        { key: searchAttributes.phase, value: phase },
        { key: searchAttributes.loadBalancers, value: lbs },
      ]);
      published = { phase, lbs: key };
    }
    setCurrentDetails(st.details());
  };
  setHandler(
    applyUpdate,
    (spec: unknown) => {
      const revision = st.apply(spec);
      traces.note();
      publish();
      return { revision };
    },
    {
      validator: (spec: unknown) => {
        if (st.deleting) throw new Error(`service ${uid} is being deleted; apply again once the delete has finished`);
        const result = validateSpec(spec);
        if (!result.ok) throw new Error(`invalid spec:\n${formatIssues(result.issues)}`);
        if (result.spec.serviceUid !== uid) throw new Error(`serviceUid: ${result.spec.serviceUid} does not match this controller's service ${uid}`);
      },
      description: 'Set the desired spec; returns its revision. The latest spec wins.',
    },
  );
  setHandler(
    waitConvergedUpdate,
    async (revision: number) => {
      await condition(() => st.resultFor(revision) !== null);
      return st.resultFor(revision) as PassResult;
    },
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
  setHandler(supersededCreatesSignal, (m) => {
    st.noteSupersededCreates(m?.identifiers);
  });
  setHandler(poolMembersSignal, (m) => {
    st.receiveMembers(m);
    traces.note();
    publish();
  });
  // Kept for replay only, for one continue-as-new rotation (docs/architecture.md, "Versions and patches"): workers
  // no longer send this signal (a throttled activity says it on itself, client/rate-limit.ts), but runs that received
  // it from workers of the previous build replay the timer below. Remove once no run started before then is open.
  setHandler(engineRateLimitedSignal, (notice) => {
    const before = st.rateLimitedUntil;
    st.noteRateLimited(notice?.until);
    publish();
    // Publish again when the notice runs out, so the summary stops saying it; one timer per notice that extends it.
    if (st.rateLimitedUntil !== null && st.rateLimitedUntil !== before) {
      const until = st.rateLimitedUntil;
      void sleep(Math.max(1, until - Date.now())).then(() => {
        if (st.rateLimitedUntil === until) publish();
      });
    }
  });
  // Sent by workers of this build to move the run (worker/wake.ts): the task it brings is what matters.
  setHandler(wakeSignal, () => undefined);
  setHandler(controllerStatusQuery, () => st.status(), { description: 'Phase, revision, status, per load balancer and per object.' });

  upsertSearchAttributes([{ key: searchAttributes.serviceUid, value: uid }]);
  publish();

  const historyIsLong = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > historyLimit;
  // Deprecated patch (docs/architecture.md, "Versions and patches"): every run of the previous release wrote its marker
  // and took the idle check; runs from before it, which rotated only right after a pass, are no longer met.
  deprecatePatch('continue-as-new-when-idle');
  const idleAndLong = () => !st.hasWork() && historyIsLong();
  // Evaluated last in every condition below, so that replayed tasks take their recorded branch first.
  const moveNow = () => st.running === null && !st.deleting && !st.hasWork() && allHandlersFinished() && patched(LEGACY_MOVE_PATCH);
  /** After a pass (or a wake-up with nothing to do): rotate if the history is long and nothing is pending. */
  const afterWork = (): Step => (!st.hasWork() && historyIsLong() ? 'rotate' : 'idle');

  /**
   * Idle: wait for work (a new revision, a resync, a delete, or the retry delay of a failed pass running out).
   * Updates and queries grow the history too, so a long history also wakes the loop, to continue as new.
   */
  const idle = async (): Promise<Step> => {
    if (st.needsSubscription()) await syncPool();
    if (idleAndLong() || moveNow()) return 'rotate';
    const retryIn = st.retryDelayMs();
    const wake = () => st.hasWork() || idleAndLong() || st.needsSubscription() || moveNow();
    if (retryIn === null) await condition(wake);
    else if (retryIn <= 0 || !(await condition(wake, retryIn))) st.retryDue();
    if (st.needsSubscription()) return 'idle';
    if (idleAndLong() || moveNow()) return 'rotate';
    if (st.deleting) return 'delete';
    return st.hasWork() ? 'reconcile' : afterWork();
  };

  for (let step: Step = 'idle'; ; ) {
    switch (step) {
      case 'idle':
        step = await idle();
        break;
      case 'reconcile':
        await reportToPool(await runPass(st, { teardown: false }));
        publish();
        step = afterWork();
        break;
      case 'delete': {
        const result = await runPass(st, { teardown: true });
        if (!result.converged) {
          // Retried from idle once the retry delay runs out: a delete is never given up.
          publish();
          step = 'idle';
          break;
        }
        st.finishDelete(result);
        if (st.pool.subscribed !== null) await signalPool(st.pool.subscribed, 'unsubscribe');
        publish();
        await condition(allHandlersFinished);
        return result;
      }
      case 'rotate':
        await condition(allHandlersFinished);
        return continueAsNew<(i: ServiceControllerInput) => Promise<PassResult>>({ v: SCHEMA_VERSION, serviceUid: uid, state: st.snapshot(), ...(input.historyLimit ? { historyLimit } : {}) });
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
    const scope = new CancellationScope();
    // Cancel the pass when it becomes obsolete; the watch ends with the pass either way.
    void condition(() => state.running !== pass || state.isSuperseded(pass)).then(() => {
      if (state.isSuperseded(pass)) scope.cancel();
    });
    let result: PassResult;
    const pool = pass.pool ? { pool: { name: pass.pool.pool, revision: pass.pool.revision } } : {};
    // The spec the apply validated, resolved into the pool's members (controller-state.ts passSpec): the pass is
    // handed a validated spec and trusts it, as it trusts today's controller. The commands are the release's own.
    const resolved = passSpec(pass);
    if (!resolved.ok) {
      result = { ...failedResult(uid, pass, new Error(resolved.message)), ...pool };
      state.endPass(pass, result);
      return result;
    }
    const spec = resolved.spec;
    try {
      const r: ReconcileServiceResult = await scope.run(() =>
        traces.startUnderLatest(() =>
          executeChild(reconcileService, {
            workflowId: workflowIds.pass(uid, pass.number),
            args: [{ spec, revision: pass.revision, ...(o.teardown ? { teardown: true } : {}), ...knownOf(state) }],
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
    } catch (err) {
      if (isCancellation(err) && state.isSuperseded(pass)) {
        state.endPass(pass, null);
        return { serviceUid: uid, revision: pass.revision, converged: false, status: {}, loadBalancers: {}, objects: [], pass: pass.number, finishedAt: Date.now(), error: 'superseded' };
      }
      if (isCancellation(err)) throw err;
      // The previous release took a terminated pass for a failed one (counted, the phase Failed until the retry):
      // its histories replay that branch; what a legacy run does on this build writes the marker and does not.
      if (err instanceof ChildWorkflowFailure && err.cause instanceof TerminatedFailure && patched('terminated-pass-not-failed')) {
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
   * Subscribes to the spec's pool (and unsubscribes from a pool the spec no longer names). The deprecated patch
   * `server-pools` only marked histories with pool signals (it never had another branch); the call stays while a
   * controller run that `patched('server-pools')` marked may be open (docs/architecture.md, "Versions and patches").
   */
  async function syncPool(): Promise<void> {
    deprecatePatch('server-pools');
    const { leave, join } = st.pool.step();
    if (leave !== null) {
      st.pool.left();
      await signalPool(leave, 'unsubscribe');
    }
    if (join !== null) {
      if (await signalPool(join, 'subscribe')) st.pool.joined(join);
      else st.poolFailed(join, `serverPool ${join}: no such server pool (create it with: lbaas pool set -f FILE)`);
    }
    publish();
  }

  /** Tells the pool how the pass for its revision ended (its status and `pool status --wait` show it). */
  async function reportToPool(result: PassResult): Promise<void> {
    if (!result.pool || result.error === 'superseded' || st.pool.subscribed !== result.pool.name) return;
    const report: PoolReport = { serviceUid: uid, revision: result.pool.revision, converged: result.converged, ...(result.error ? { error: result.error } : {}) };
    await signalPool(result.pool.name, 'report', report);
  }

  /** Signals a pool; false when it does not exist (ended or never created). */
  async function signalPool(pool: string, what: 'subscribe' | 'unsubscribe' | 'report', report?: PoolReport): Promise<boolean> {
    const handle = getExternalWorkflowHandle(workflowIds.pool(pool));
    try {
      if (what === 'report') await handle.signal(poolReportSignal, { v: SCHEMA_VERSION, ...(report as PoolReport) });
      else await handle.signal(what === 'subscribe' ? poolSubscribeSignal : poolUnsubscribeSignal, { v: SCHEMA_VERSION, serviceUid: uid });
      return true;
    } catch {
      return false;
    }
  }
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
