/**
 * reconcileLoadBalancer: one reconciliation of one service on one load balancer
 * (docs/spec.md#reconciliation-semantics, docs/spec.md#temporal-surface).
 *
 * observe -> plan -> destroy -> create/recover/wait along the dependency graph -> observe again, until the plan is
 * empty or the pass budget is spent. (About 340 lines: the pass loop and its steps share the run's closure: status
 * book, counters, activity proxies.)
 */
import { ApplicationFailure, type ActivityOptions } from '@temporalio/common';
import { CancellationScope, condition, getExternalWorkflowHandle, isCancellation, metricMeter, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CreateObjectInput, ReadyOutcome } from '../activities/objects';
import type { RealizedObject } from '../activities/realize';
import type { DestroyedObject, DestroyOutcome } from '../activities/destroy';
import { causeOf } from './failures';
import { invalidInput, loadBalancerId, optionalIdentifiers, optionalInteger, optionalOutline, optionalReadMark, passSpecOf } from './input';
import { ENGINE_CALL, listed, readinessOptions, short } from './options';
import { FAILURE_TYPES, isReadMark, loadBalancerStatusQuery, SCHEMA_VERSION, supersededCreatesSignal, workflowIds, type LoadBalancerProgress, type ReadMark } from '../contract';
import { completeFields, desiredObjects, indexBytes, indexOfPlan, isPlanEmpty, MAX_INDEX_BYTES, outlinedStates, planOfOutline, statusFromSnapshot, type PlanOutline, type LoadBalancerIndex } from '../domain';
import { DESTROY_STAGES, KIND_TITLE, type Destroy, type LoadBalancerResult, type ObjectStatus, type Plan, type PlannedObject, type Snapshot, type ValidatedSpec } from '../domain';
import { describeOutstanding, listedObjects, StatusBook } from './status-book';
import { GroupSchedule, type Group } from './groups';
import { planInWorkflow } from './planning';

export interface ReconcileLoadBalancerInput {
  /**
   * From its reconcileService: the spec as the controller's apply validated it, taken as it is. From a client starting
   * it directly: a spec document (docs/spec.md#validation), validated on entry (workflows/input.ts, passSpecOf).
   */
  spec: ValidatedSpec | unknown;
  loadBalancer: string;
  /** Remove everything the service owns on this load balancer (it left the spec). */
  cleanup?: boolean;
  /** The controller's spec revision this pass belongs to. */
  revision?: number;
  /** Observe-and-act passes before giving up (default DEFAULT_MAX_PASSES). */
  maxPasses?: number;
  /**
   * Identifiers of the service's objects that earlier passes saw or created (any load balancer): read even while the
   * Engine's tag index, which lags behind tagging, does not list them yet.
   */
  known?: string[];
  /**
   * The outline of the parent's plan of this load balancer (domain/plan-outline.ts): the first round acts on it
   * instead of reading and planning again. No plan comes with it: the desired objects are the spec's.
   */
  outline?: PlanOutline;
  /**
   * The mark of the worker's clock taken when the parent's observation of the service began: this run's
   * observations may take that worker's reads since then of objects it has not written to (activities/state.ts,
   * `readsSince`) instead of reading again.
   */
  observedSince?: ReadMark;
  /** Return the index of its Backends and Servers when it converges (`index`; the controller's pool-delta passes). */
  index?: boolean;
}

export interface ReconcileLoadBalancerResult extends LoadBalancerResult {
  serviceUid: string;
  revision: number | null;
  /** Every object's status, or, past MAX_LISTED_OBJECTS, those not ready (workflows/status-book.ts, listedObjects). */
  objects: ObjectStatus[];
  /** Objects left out of `objects` (ready ones): the `status` query has them. */
  objectsOmitted?: number;
  /**
   * The identifiers of its Backends and Servers, for the controller's pool-delta passes (domain/pool-index.ts): on a
   * converged load balancer of the spec, when it fits MAX_INDEX_BYTES.
   */
  index?: LoadBalancerIndex;
}

/** Details of a failed reconcileLoadBalancer: what it did and the state of every object when it stopped. */
export interface LoadBalancerFailureDetails {
  created: number;
  destroyed: number;
  recovered: number;
  objects: ObjectStatus[];
  objectsOmitted?: number;
}

/**
 * A pass normally converges in one go; further passes repair what the Engine failed to deploy (recover or recreate)
 * or what changed meanwhile. Eight gives a DeploymentError rate of 10 % a one in 10^8 chance per object of
 * exhausting them, while a reconciliation that cannot converge still fails in bounded time.
 */
export const DEFAULT_MAX_PASSES = 8;

/**
 * Activities of one load balancer's reconciliation pending at once, at most: a tenth of Temporal's per-workflow
 * limit (`limit.numPendingActivities.error`, 2,000), leaving room for history and for the worker's slots. Groups
 * beyond it wait for a slot. With groups of at most MAX_GROUP_MEMBERS objects, no load balancer size reaches that
 * limit (docs/scaling.md, "Temporal's limits").
 */
export const MAX_GROUPS_AT_ONCE = 200;

/** Objects per group activity, at most: its input and result stay a few hundred KiB (Temporal's payload limit is 2 MiB). */
export const MAX_GROUP_MEMBERS = 1_000;

/**
 * Workflow-side metrics (docs/spec.md#metrics), on the worker's Prometheus endpoint. Temporal does not emit them
 * while replaying, so a worker restart does not count a reconciliation twice.
 */
const metrics = {
  total: () => metricMeter.createHistogram('lbaas_reconcile_total_duration_seconds', 'float', 's', 'one load balancer reconciliation, start to converged'),
  create: () => metricMeter.createHistogram('lbaas_reconcile_create_resources_duration_seconds', 'float', 's', 'the create/recover/wait phase of one pass'),
  pending: () => metricMeter.createGauge('lbaas_reconcile_resources_pending', 'int', '', 'objects a pass still has to create, recover or wait for'),
};

export async function reconcileLoadBalancer(input: ReconcileLoadBalancerInput): Promise<ReconcileLoadBalancerResult> {
  const wf = 'reconcileLoadBalancer';
  const { spec, fields } = passSpecOf(input, wf);
  const loadBalancer = loadBalancerId(fields, wf);
  const cleanup = fields.cleanup === true;
  if (!cleanup && !spec.loadBalancers.includes(loadBalancer)) {
    throw invalidInput(`${wf}: loadBalancer: ${loadBalancer} is not in spec.loadBalancers (use cleanup: true to remove the service from it)`);
  }
  const maxPasses = optionalInteger(fields, 'maxPasses', wf, 1, 100) ?? DEFAULT_MAX_PASSES;
  const revision = optionalInteger(fields, 'revision', wf, 0, Number.MAX_SAFE_INTEGER) ?? null;
  const uid = spec.serviceUid;
  const desired = cleanup ? [] : desiredObjects(spec, loadBalancer);

  const engine = proxyActivities<Activities>(ENGINE_CALL);
  const readiness = proxyActivities<Activities>(readinessOptions(spec.readiness));
  const on = `on ${short(loadBalancer)}`;
  const call = <A extends unknown[], R>(fn: { executeWithOptions(o: ActivityOptions, a: A): Promise<R> }, summary: string, ...args: A) =>
    fn.executeWithOptions({ summary }, args);

  const book = new StatusBook(loadBalancer, () => Date.now());
  const progress: LoadBalancerProgress = { loadBalancer, pass: 0, phase: 'observing', objects: [] };
  setHandler(loadBalancerStatusQuery, () => ({ ...progress, objects: book.list() }));
  const counts = { created: 0, destroyed: 0, recovered: 0 };
  const startedAt = Date.now();
  const pendingGauge = metrics.pending().withTags({ load_balancer: loadBalancer });

  // Identifiers of the service's objects this run has seen or created: observations read them even while the Engine's
  // tag index, which lags behind tagging, does not list them yet.
  const known = new Set<string>(optionalIdentifiers(fields, 'known', wf) ?? []);
  // What this run created: a superseded run hands it to the controller, since its pass returns no result.
  const created = new Set<string>();
  const outline = optionalOutline(fields, wf);
  const observedSince = optionalReadMark(fields, 'observedSince', wf);

  const destroyed = (d: Destroy, outcome: DestroyOutcome) => {
    known.delete(d.identifier);
    if (outcome === 'deleted') counts.destroyed++;
    book.update(`destroy:${d.identifier}`, { state: 'Destroyed', ...(outcome === 'not ours' ? { error: 'left alone: no longer tagged for the service' } : {}) });
  };
  /** The objects of one destroy stage in one destroyObjects activity, whose summary names each and its reason. */
  const destroyStage = async (stage: Destroy[]) => {
    if (stage.length === 0) return;
    const byId = new Map(stage.map((d) => [d.identifier, d]));
    const summary =
      stage.length === 1
        ? `destroy ${KIND_TITLE[(stage[0] as Destroy).kind]} ${(stage[0] as Destroy).name} ${on} (${(stage[0] as Destroy).reason})`
        : `destroy ${stage.length} objects ${on}: ${listed(stage.map((d) => `${KIND_TITLE[d.kind]} ${d.name} (${d.reason})`))}`;
    const outcomes: DestroyedObject[] = await call(engine.destroyObjects, summary, { serviceUid: uid, objects: stage.map(({ kind, identifier, name }) => ({ kind, identifier, name })) });
    for (const o of outcomes) {
      const d = byId.get(o.identifier);
      if (d) destroyed(d, o.outcome);
    }
  };

  /** Books how an object's wait ended; resolves to its identifier when it is ready, null otherwise. */
  const settle = (key: string, id: string, outcome: ReadyOutcome): string | null => {
    if (outcome === 'Deployed' || outcome === 'Updated') {
      book.update(key, { identifier: id, state: outcome });
      return id;
    }
    // Failed or vanished: the next pass recovers, recreates or creates it; its children wait for that pass.
    book.update(key, { identifier: id, state: outcome === 'Gone' ? 'Pending' : outcome, error: outcome === 'Gone' ? 'vanished while deploying' : 'deployment failed' });
    return null;
  };

  /**
   * Creates a group of siblings (same kind, same parent) in one realizeObjects activity whose summary names them;
   * what is still deploying when its attempt window ends is awaited on the spec's readiness policy, together in one
   * settleObjects activity.
   */
  const realizeGroup = async (members: PlannedObject[], parentId: string): Promise<Map<string, string | null>> => {
    const kind = (members[0] as PlannedObject).desired.kind;
    const names = listed(members.map((p) => p.desired.name));
    const byKey = new Map(members.map((p) => [p.desired.key, p.desired]));
    // Not cancellable, as a single create is: a superseded pass still finishes creating and tagging (and waits for the
    // group's attempt to end, at most the readiness window).
    const realized: RealizedObject[] = await CancellationScope.nonCancellable(() =>
      call(engine.realizeObjects, `create and await ${KIND_TITLE[kind]}${members.length > 1 ? 's' : ''} ${names} ${on}`, {
        serviceUid: uid,
        loadBalancer,
        kind,
        members: members.map((p) => ({ key: p.desired.key, fields: completeFields(kind, p.desired.fields, parentId) as CreateObjectInput['fields'] })),
        // Under a parent this run created (a new Frontend's Binds, a new Backend's Servers) nothing was there before
        // our creates: no look-alike list (a retry still finds what a lost attempt created, activities/objects.ts).
        ...(created.has(parentId) ? { unlisted: true } : {}),
      }),
    );
    const ids = new Map<string, string | null>();
    const waiting: PlannedObject[] = [];
    for (const r of realized) {
      const d = byKey.get(r.key);
      if (!d) continue;
      counts.created++;
      known.add(r.identifier);
      created.add(r.identifier);
      book.update(r.key, { identifier: r.identifier, state: r.state });
      if (r.outcome === 'NotReady') waiting.push({ desired: d, action: { type: 'wait', identifier: r.identifier } });
      else ids.set(r.key, settle(r.key, r.identifier, r.outcome));
    }
    if (waiting.length > 0) for (const [key, id] of await settleGroup(waiting)) ids.set(key, id);
    return ids;
  };

  /**
   * Recovers (action `recover`) and awaits (action `wait`) a group of existing siblings in one settleObjects activity;
   * resolves to each member's identifier when it is ready, null otherwise.
   */
  const settleGroup = async (members: PlannedObject[]): Promise<Map<string, string | null>> => {
    const kind = (members[0] as PlannedObject).desired.kind;
    const idOf = (p: PlannedObject) => (p.action as { identifier: string }).identifier;
    const recovering = members.filter((p) => p.action.type === 'recover').length;
    const what = `${KIND_TITLE[kind]}${members.length > 1 ? 's' : ''} ${listed(members.map((p) => p.desired.name))} ${on}`;
    const summary = recovering > 0 ? `recover ${recovering} and await ${what}` : `await ${what}`;
    const objects = members.map((p) => ({ kind, identifier: idOf(p), name: p.desired.name, ...(p.action.type === 'recover' ? { recover: true } : {}) }));
    const outcomes = await call(readiness.settleObjects, summary, { objects });
    const byId = new Map(outcomes.map((o) => [o.identifier, o]));
    const ids = new Map<string, string | null>();
    for (const p of members) {
      const o = byId.get(idOf(p));
      if (!o) continue;
      if (o.recovered) counts.recovered++;
      ids.set(p.desired.key, settle(p.desired.key, idOf(p), o.outcome));
    }
    return ids;
  };

  /**
   * The create/recover/wait step of a round, along the dependency graph: the plan's objects in groups of siblings
   * (workflows/groups.ts: one realizeObjects or settleObjects activity each). Start every group whose parent is
   * ready, while fewer than MAX_GROUPS_AT_ONCE run; wait for one to end and record which of its members are ready;
   * repeat until none waits or runs. A group whose parent will not be ready this round is left to the next round
   * (the closing observation plans it again). A failed group fails the round once every running group has come to
   * rest. A superseded (cancelled) round starts no further group, and still waits for the running ones: a create is
   * finished and tagged, never abandoned.
   */
  const applyGroups = async (plan: Plan) => {
    const schedule = new GroupSchedule(plan, loadBalancer, MAX_GROUP_MEMBERS);
    const ended: { group: Group; ids: Map<string, string | null> | null; error?: unknown }[] = [];
    const scope = CancellationScope.current();
    let running = 0;
    let failure: { error: unknown } | null = null;
    for (;;) {
      if (scope.consideredCancelled) schedule.drop();
      while (running < MAX_GROUPS_AT_ONCE) {
        const next = schedule.next();
        if (!next) break;
        const { group, parentId } = next;
        running++;
        (group.creating ? realizeGroup(group.members, parentId) : settleGroup(group.members)).then(
          (ids) => ended.push({ group, ids }),
          (error: unknown) => ended.push({ group, ids: null, error }),
        );
      }
      if (running === 0) break;
      await CancellationScope.nonCancellable(() => condition(() => ended.length > 0));
      for (const e of ended.splice(0)) {
        running--;
        schedule.ended(e.group, e.ids);
        if (e.error !== undefined && failure === null) failure = { error: e.error };
      }
    }
    if (failure) throw failure.error;
    if (scope.consideredCancelled) await scope.cancelRequested;
  };

  const run = async (): Promise<ReconcileLoadBalancerResult> => {
    // Observations take the worker's reads since the first observation of this run (or the parent's) of objects
    // nothing wrote to since: what a round did not touch is not read again to close it. The mark is the observing
    // worker's own clock, and only that worker honours it (activities/engine/recent-reads.ts).
    let firstObserved = observedSince;
    for (let pass = 1; ; pass++) {
      progress.pass = pass;
      progress.phase = 'observing';
      const reuse = firstObserved !== undefined ? { readsSince: firstObserved } : {};
      // The first round acts on the parent's plan (its outline) when it fits the spec's desired objects and has work;
      // one with nothing to do (the parent reports such a load balancer itself) is read again for its status.
      const handed = pass === 1 && outline ? planOfOutline(desired, outline, loadBalancer) : null;
      const first = handed && outline && !isPlanEmpty(handed) ? { plan: handed, states: { objects: outlinedStates(outline) } } : null;
      const read = first ? undefined : await call(engine.retrieveState, `observe ${uid} ${on}`, { serviceUid: uid, loadBalancer, ...(known.size > 0 ? { known: [...known].sort() } : {}), ...reuse });
      // Histories of builds before read marks return no mark: later rounds then read every object.
      firstObserved ??= isReadMark(read?.readMark) ? read.readMark : undefined;
      // What the tag index listed it lists again: only objects it may not list yet are remembered in `known` (bounded).
      // A new observation is a new plan: after this run's own writes, or when no outline came.
      const plan = first?.plan ?? planInWorkflow(uid, desired, read as Snapshot, spec.failedResources);
      book.observe(plan, first?.states ?? (read as Snapshot));
      pendingGauge.set(plan.objects.filter((p) => p.action.type !== 'keep').length);
      if (isPlanEmpty(plan)) {
        progress.phase = 'converged';
        metrics.total().record((Date.now() - startedAt) / 1000);
        const index = cleanup || fields.index !== true ? null : indexOfPlan(plan);
        const indexed = index !== null && indexBytes(index) <= MAX_INDEX_BYTES ? { index } : {};
        // An empty plan is always one of a read: a first round acts on an outline only when it has work.
        return { serviceUid: uid, revision, loadBalancer, converged: true, status: statusFromSnapshot(read as Snapshot), ...counts, passes: pass, ...listedObjects(book.list()), ...indexed };
      }
      if (pass > maxPasses) {
        progress.phase = 'failed';
        throw ApplicationFailure.create({
          type: FAILURE_TYPES.notConverged,
          nonRetryable: true,
          message: `${uid} on ${loadBalancer} did not converge after ${maxPasses} passes; ${describeOutstanding(book, plan)}`,
        });
      }
      // Destroy before create: a new object may clash with one being removed. Stages run dependents first because the
      // Engine refuses to delete what something still references.
      progress.phase = 'destroying';
      for (const kinds of DESTROY_STAGES) await destroyStage(plan.destroy.filter((d) => kinds.includes(d.kind)));
      progress.phase = 'creating';
      const createStart = Date.now();
      await applyGroups(plan);
      metrics.create().record((Date.now() - createStart) / 1000);
    }
  };

  try {
    return await run();
  } catch (err) {
    if (isCancellation(err)) {
      // Superseded: the groups that ran have come to rest (applyGroups waits for them), and what they created must
      // reach the next pass, which would otherwise find it only through the lagging tag index. The signal is in the
      // controller's history before this run, and so its pass, ends. No controller (a pass started on its own, or
      // the controller gone): nothing to tell.
      if (created.size > 0) {
        await CancellationScope.nonCancellable(() =>
          getExternalWorkflowHandle(workflowIds.controller(uid))
            .signal(supersededCreatesSignal, { v: SCHEMA_VERSION, identifiers: [...created].sort() })
            .catch(() => undefined),
        );
      }
      throw err;
    }
    progress.phase = 'failed';
    // Carry the per-object status and counts out with the failure: the parent reports what exists and what is
    // pending on a load balancer that failed, not just the message.
    const details: LoadBalancerFailureDetails = { ...counts, ...listedObjects(book.list()) };
    if (err instanceof ApplicationFailure && err.type === FAILURE_TYPES.notConverged) {
      throw ApplicationFailure.create({ type: err.type, message: err.message, nonRetryable: true, details: [details] });
    }
    throw ApplicationFailure.create({ type: FAILURE_TYPES.reconcileFailed, message: causeOf(err), nonRetryable: true, details: [details], cause: err as Error });
  }
}
