/**
 * reconcileService: reconcile one service on all of its load balancers, one child reconcileLoadBalancer each,
 * concurrently; clean up load balancers that left the spec; merge the status (docs/spec.md#reconciliation-semantics,
 * docs/spec.md#temporal-surface).
 */
import { ApplicationFailure, WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { ChildWorkflowFailure, executeChild, isCancellation, ParentClosePolicy, proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { optionalIdentifiers, optionalInteger, passSpecOf } from './input';
import { ENGINE_CALL } from './options';
import { FAILURE_TYPES, isReadMark, searchAttributes, workflowIds, type LoadBalancerSummary, type ReadMark, type ReconcileServiceResult } from '../contract';
import { desiredObjects, indexBytes, indexOfPlan, MAX_INDEX_BYTES, MAX_OUTLINE_BYTES, mergeStatus, outlinedStates, planOfOutline, type LoadBalancerIndex, type PlanOutline } from '../domain';
import type { ObjectStatus, ValidatedSpec } from '../domain/types';
import { listedObjects, MAX_LISTED_OBJECTS, StatusBook } from './status-book';
import { reconcileLoadBalancer, type LoadBalancerFailureDetails, type ReconcileLoadBalancerResult } from './reconcile-lb';
import { causeOf, failureDetails } from './failures';
import { recordPassEnd } from './service-metrics';

export interface ReconcileServiceInput {
  /**
   * From a controller (or fullResync): the spec its apply validated, handed down as it is. From a client starting
   * the pass directly: a spec document, validated on entry (workflows/input.ts, passSpecOf).
   */
  spec: ValidatedSpec | unknown;
  revision?: number;
  /** Remove everything the service owns on every load balancer (the controller's delete). */
  teardown?: boolean;
  /** Identifiers of the service's objects from the controller's last pass: found even while the tag index lags. */
  known?: string[];
  /** Return the index of the service's Backends and Servers when the pass converges (`index`; pool-delta passes). */
  index?: boolean;
}

/** Waiting for a reconciliation of the same service and load balancer that someone else started: 1 s doubling to 30 s. */
const BUSY_WAIT_FIRST_MS = 1000;
const BUSY_WAIT_MAX_MS = 30_000;

interface Run {
  loadBalancer: string;
  cleanup: boolean;
  /** The outline of the parent's plan of this load balancer: the child's first round (first start attempt only). */
  outline?: PlanOutline;
  /** The mark taken when the parent's observation began: the child's reads may take that worker's answers since then. */
  observedSince?: ReadMark;
}

export async function reconcileService(input: ReconcileServiceInput): Promise<ReconcileServiceResult> {
  const wf = 'reconcileService';
  const { spec, fields } = passSpecOf(input, wf);
  const revision = optionalInteger(fields, 'revision', wf, 0, Number.MAX_SAFE_INTEGER) ?? null;
  const teardown = fields.teardown === true;
  const wantIndex = fields.index === true && !teardown;
  const knownBefore = optionalIdentifiers(fields, 'known', wf) ?? [];
  const uid = spec.serviceUid;
  const engine = proxyActivities<Activities>(ENGINE_CALL);

  const runChild = async ({ loadBalancer, cleanup, outline, observedSince }: Run): Promise<ReconcileLoadBalancerResult> => {
    const workflowId = workflowIds.loadBalancer(uid, loadBalancer);
    for (let attempt = 0; ; attempt++) {
      // After waiting for a reconciliation started elsewhere, the parent's plan is stale: the child reads and plans.
      const first = attempt === 0 ? { ...(outline ? { outline } : {}), ...(observedSince !== undefined ? { observedSince } : {}) } : {};
      try {
        return await executeChild(reconcileLoadBalancer, {
          workflowId,
          args: [{ spec, loadBalancer, cleanup, ...(revision !== null ? { revision } : {}), ...(knownBefore.length > 0 ? { known: knownBefore } : {}), ...(wantIndex && !cleanup ? { index: true } : {}), ...first }],
          staticSummary: `${cleanup ? 'remove' : 'reconcile'} ${uid} on ${loadBalancer}${revision !== null ? ` (revision ${revision})` : ''}`,
          typedSearchAttributes: [
            { key: searchAttributes.serviceUid, value: uid },
            { key: searchAttributes.loadBalancers, value: [loadBalancer] },
          ],
          parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
        });
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        // Exactly one reconciliation may run per service and load balancer. One started elsewhere (another client, or
        // a superseded parent whose child is still finishing) is waited for, then ours runs on what it left.
        const delay = Math.min(BUSY_WAIT_MAX_MS, BUSY_WAIT_FIRST_MS * 2 ** attempt);
        await sleep(delay, { summary: `wait for the running ${workflowId}` });
      }
    }
  };

  const results: Record<string, LoadBalancerSummary> = {};
  const objects: ObjectStatus[] = [];
  const indexes: Record<string, LoadBalancerIndex> = {};
  let omitted = 0;
  const errors: { loadBalancer: string; err: unknown }[] = [];
  /** Runs each load balancer's child, except those `inline` already has the result of (their plan was empty). */
  const runAll = async (runs: Run[], inline: (run: Run) => ReconcileLoadBalancerResult | undefined = () => undefined) => {
    const settled = await Promise.allSettled(runs.map((run) => Promise.resolve(inline(run) ?? runChild(run))));
    settled.forEach((s, i) => {
      const run = runs[i] as Run;
      if (s.status === 'fulfilled') {
        const r = s.value;
        results[run.loadBalancer] = { converged: r.converged, status: r.status, created: r.created, destroyed: r.destroyed, recovered: r.recovered, passes: r.passes, cleanup: run.cleanup };
        if (r.index && !run.cleanup) indexes[run.loadBalancer] = r.index;
        objects.push(...r.objects);
        omitted += r.objectsOmitted ?? 0;
      } else {
        if (isCancellation(s.reason)) throw s.reason;
        errors.push({ loadBalancer: run.loadBalancer, err: s.reason });
        const d = failureDetails<LoadBalancerFailureDetails>(s.reason);
        results[run.loadBalancer] = {
          converged: false,
          status: {},
          created: d?.created ?? 0,
          destroyed: d?.destroyed ?? 0,
          recovered: d?.recovered ?? 0,
          passes: 0,
          cleanup: run.cleanup,
          error: causeOf(s.reason),
        };
        objects.push(...(d?.objects ?? []));
        omitted += d?.objectsOmitted ?? 0;
      }
    });
  };

  const seen = await engine.planObservedService
    .executeWithOptions(
      { summary: `observe and plan ${uid}` },
      [{ spec, outlineUpTo: MAX_OUTLINE_BYTES, listUpTo: MAX_LISTED_OBJECTS, ...(teardown ? { teardown: true } : {}), ...(wantIndex ? { indexUpTo: MAX_INDEX_BYTES } : {}), ...(knownBefore.length > 0 ? { known: knownBefore } : {}) }],
    )
    .catch((err: unknown) => {
      // A pass that fails before any load balancer runs (the Engine refusing the token, say) is a failed pass too:
      // the alert on failing passes must see it (deploy/prometheus/lbaas-rules.yaml).
      if (!isCancellation(err)) recordPassEnd(uid, 'failed');
      throw err;
    });
  // The service is observed and planned in the worker (planObservedService): each load balancer's one plan before
  // anything is written. The result says which load balancers have work and hands each plan's outline back
  // (domain/plan-outline.ts) while they fit MAX_OUTLINE_BYTES, so neither it nor a child's input grows with the service
  // (docs/scaling.md, "Temporal's limits"). An outline, not the plan: a plan repeats every desired object, and written
  // into the activity's result and into each child's start (in both histories) it made a pass's history about a third
  // larger in bytes. The desired objects are a pure function of the spec, which the workflows hold: the plan comes back
  // from its outline without planning again. A load balancer whose plan is empty is reported from its outline without
  // a child; one with work gets a child that acts on the outline.
  const outlook = (lb: string) => seen.loadBalancers[lb];
  const outlinedPlan = (lb: string) => {
    const o = outlook(lb)?.outline;
    const plan = o ? planOfOutline(desiredObjects(spec, lb), o, lb) : null;
    return o && plan ? { plan, states: { objects: outlinedStates(o) } } : null;
  };
  const inline = (run: Run): ReconcileLoadBalancerResult | undefined => {
    const o = outlook(run.loadBalancer);
    if (!o?.empty || run.cleanup) return undefined;
    const outlined = outlinedPlan(run.loadBalancer);
    // Its index is in the outline when the outline came back, else in the outlook within indexUpTo.
    const index = o.index ?? (wantIndex && outlined ? indexOfPlan(outlined.plan) : null);
    const result = { serviceUid: uid, revision, loadBalancer: run.loadBalancer, converged: true, status: o.status, created: 0, destroyed: 0, recovered: 0, passes: 1, ...(index ? { index } : {}) };
    if (!outlined) return { ...result, objects: [], objectsOmitted: o.held };
    const book = new StatusBook(run.loadBalancer, () => Date.now());
    book.observe(outlined.plan, outlined.states);
    return { ...result, objects: book.list() };
  };
  // A child acts on the outline of the parent's plan in its first round when it came back, else reads its load
  // balancer and plans, taking this worker's reads of the observation where it can.
  const handDown = (loadBalancer: string, cleanup: boolean): Run => {
    const outline = outlook(loadBalancer)?.outline;
    // Histories of builds before read marks carry none (`observedAt`, a time): the child then reads every object.
    const mark = isReadMark(seen.readMark) ? { observedSince: seen.readMark } : {};
    return { loadBalancer, cleanup, ...(outline ? { outline } : {}), ...mark };
  };
  await runAll((teardown ? [] : spec.loadBalancers).map((loadBalancer) => handDown(loadBalancer, false)), inline);
  // New configuration first, old removed after, so traffic moves before anything is taken away.
  const dropped = Object.keys(seen.loadBalancers).filter((lb) => outlook(lb)?.cleanup && (outlook(lb)?.held ?? 0) > 0).sort();
  await runAll(dropped.map((loadBalancer) => handDown(loadBalancer, true)));

  const status = teardown ? {} : mergeStatus(spec.loadBalancers.map((lb) => results[lb]?.status ?? {}));
  const listed = listedObjects(objects, omitted);
  // The index of every load balancer of the spec, or none: a pool-delta pass needs all of them.
  const indexed = wantIndex && errors.length === 0 && spec.loadBalancers.every((lb) => indexes[lb] !== undefined) && Object.values(indexes).reduce((n, ids) => n + indexBytes(ids), 0) <= MAX_INDEX_BYTES;
  const result: ReconcileServiceResult = {
    serviceUid: uid,
    revision,
    converged: errors.length === 0,
    status,
    loadBalancers: results,
    objects: listed.objects,
    ...(listed.objectsOmitted > 0 ? { objectsOmitted: listed.objectsOmitted } : {}),
    ...(indexed ? { index: indexes } : {}),
  };
  const first = errors[0];
  if (first) {
    const message = `${uid} on ${first.loadBalancer}: ${causeOf(first.err)}`;
    recordPassEnd(uid, 'failed');
    throw ApplicationFailure.create({
      type: FAILURE_TYPES.reconcileFailed,
      message,
      nonRetryable: true,
      details: [{ ...result, error: message }],
      cause: first.err instanceof ChildWorkflowFailure && first.err.cause ? first.err.cause : (first.err as Error),
    });
  }
  recordPassEnd(uid, 'converged');
  return result;
}


