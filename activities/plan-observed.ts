/**
 * planObservedService: observe a service once and plan each of its load balancers in the worker, the one plan of each
 * load balancer before anything is written: what the workflow decides on (which load balancers have work, how many
 * objects each holds, the address status of those without work) and, within a byte budget, each plan's outline
 * (domain/plan-outline.ts), never the plans or the objects themselves.
 *
 * Why in the worker: one service at the validator's limits holds 5,000 objects on each of its load balancers, about
 * 1.4 MB of observed objects per load balancer, and every observation of all of them in one activity result (and in
 * every child's input) passes Temporal's 2 MiB payload limit with two load balancers. Why outlines: a plan repeats
 * every desired object of the spec, and written into the activity's result and each child's start (in both
 * histories) it made a pass's history about a third larger in bytes; an outline names each object by key, and the
 * workflows, which hold the spec, get the plan back from it (the desired objects are a pure function of the spec)
 * without planning again. A load balancer whose outline does not fit is read again by its child; `readMark` lets that
 * read take this worker's answers of the moment (activities/engine/recent-reads.ts) rather than ask the Engine again.
 */
import { desiredObjects, indexBytes, indexOfPlan, isPlanEmpty, outlineBytes, outlineOf, planLoadBalancer, statusFromSnapshot, type LoadBalancerIndex, type PlanOutline } from '../domain';
import type { ReadMark } from '../contract';
import type { AddressStatus, ValidatedSpec } from '../domain/types';
import type { EngineClient } from './engine';
import type { IdentifierCache } from './memory';
import { observeService } from './state';

export interface PlanObservedInput {
  /**
   * The service spec, with its servers resolved, as the controller's apply (or the pass, started directly) validated
   * it. An activity's input is a command its own workflow wrote into history, so it is not parsed again here.
   */
  spec: ValidatedSpec;
  /** Plan the removal of everything (a delete): every load balancer holding objects is to be emptied. */
  teardown?: boolean;
  known?: string[];
  /**
   * Hand back the outline of each load balancer's plan while they total at most this many bytes of JSON (default 0):
   * a child acts on its outline without reading or planning again, and the pass lists the objects of a load balancer
   * with nothing to do from its outline.
   */
  outlineUpTo?: number;
  /**
   * A load balancer with nothing to do gets its outline only while such outlines list at most this many objects in
   * all (default 0): beyond, a pass's result would leave its objects out anyway (ready ones are not listed there).
   */
  listUpTo?: number;
  /**
   * Hand back the index (domain/pool-index.ts) of each load balancer of the spec with nothing to do while they total
   * at most this many bytes of JSON (default 0): a pass that writes nothing keeps the controller's pool-delta passes
   * possible.
   */
  indexUpTo?: number;
}

export interface LoadBalancerOutlook {
  /** Objects of the service the load balancer holds. */
  held: number;
  /** No longer in the spec (or a teardown): everything there is to be destroyed. */
  cleanup: boolean;
  /** Nothing to do there. */
  empty: boolean;
  /** Address/port pairs present (for a load balancer with nothing to do). */
  status: AddressStatus;
  /** The outline of its plan (domain/plan-outline.ts), within `outlineUpTo` (and, with nothing to do, `listUpTo`). */
  outline?: PlanOutline;
  /**
   * Its Backends' and Servers' identifiers (a load balancer of the spec with nothing to do), within `indexUpTo`; left
   * out when the outline is there, which holds them (domain/pool-index.ts, indexOfPlan, on the outline's plan).
   */
  index?: LoadBalancerIndex;
}

export interface PlanObservedResult {
  /** The mark of this worker's clock taken before the observation's first read (activities/engine/recent-reads.ts). */
  readMark: ReadMark;
  /** Every load balancer of the spec, and every other one that holds objects of the service. */
  loadBalancers: Record<string, LoadBalancerOutlook>;
}

export async function planObservedService(engine: EngineClient, kinds: IdentifierCache, input: PlanObservedInput): Promise<PlanObservedResult> {
  const { spec } = input;
  const readMark = engine.readMark();
  const held = await observeService(engine, kinds, spec.serviceUid, undefined, input.known ?? []);
  const loadBalancers: Record<string, LoadBalancerOutlook> = {};
  const wanted = input.teardown ? [] : spec.loadBalancers;
  let outlinable = input.outlineUpTo ?? 0;
  let listable = input.listUpTo ?? 0;
  let indexable = input.indexUpTo ?? 0;
  for (const lb of new Set([...wanted, ...held.keys()])) {
    const objects = held.get(lb) ?? [];
    const cleanup = !wanted.includes(lb);
    if (cleanup && objects.length === 0) continue;
    const snapshot = { loadBalancer: lb, objects };
    const plan = planLoadBalancer(cleanup ? [] : desiredObjects(spec, lb), snapshot, spec.failedResources);
    const empty = isPlanEmpty(plan);
    const outline = outlineOf(plan, snapshot);
    const outlineSize = outlineBytes(outline);
    const outlined = outlineSize <= outlinable && (!empty || objects.length <= listable);
    if (outlined) {
      outlinable -= outlineSize;
      if (empty) listable -= objects.length;
    }
    const index = empty && !cleanup ? indexOfPlan(plan) : null;
    const bytes = index === null ? 0 : indexBytes(index);
    const indexed = index !== null && bytes <= indexable;
    if (indexed) indexable -= bytes;
    // An outlined load balancer's index is in its outline (the Backends' and Servers' kept identifiers): not twice.
    loadBalancers[lb] = { held: objects.length, cleanup, empty, status: statusFromSnapshot(snapshot), ...(outlined ? { outline } : {}), ...(indexed && !outlined ? { index } : {}) };
  }
  return { readMark, loadBalancers };
}
