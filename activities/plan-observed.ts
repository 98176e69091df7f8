/**
 * planObservedService: observe a service once and plan each of its load balancers in the worker, returning only
 * what the workflow decides on (which load balancers have work, how many objects each holds, the address status of
 * those without work), never the objects themselves.
 *
 * Why in the worker: one service at the validator's limits holds 5,000 objects on each of its load balancers, about
 * 1.4 MB of observed objects per load balancer, and every observation of all of them in one activity result (and in
 * every child's input) passes Temporal's 2 MiB payload limit with two load balancers. The children read their own
 * load balancer instead; `readMark` lets their first read take this worker's answers of the moment
 * (activities/engine/recent-reads.ts) rather than ask the Engine again. The plans stay here too: each repeats every
 * desired object of the spec, and the workflows plan again from the spec and the returned objects for less than the
 * Temporal server and the worker would pay for a plan written into every pass's histories.
 */
import { desiredObjects, indexBytes, indexOfPlan, isPlanEmpty, planLoadBalancer, statusFromSnapshot, type LoadBalancerIndex } from '../domain';
import type { ReadMark } from '../contract';
import type { AddressStatus, ObservedObject, ValidatedSpec } from '../domain/types';
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
   * Hand back the observed objects of each load balancer while they total at most this many (default 0): a small
   * service's children start from them, and its result lists them, without reading again.
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
  /** The objects observed there, within `listUpTo`. */
  objects?: ObservedObject[];
  /** Its Backends' and Servers' identifiers (a load balancer of the spec with nothing to do), within `indexUpTo`. */
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
  let listable = input.listUpTo ?? 0;
  let indexable = input.indexUpTo ?? 0;
  for (const lb of new Set([...wanted, ...held.keys()])) {
    const objects = held.get(lb) ?? [];
    const cleanup = !wanted.includes(lb);
    if (cleanup && objects.length === 0) continue;
    const snapshot = { loadBalancer: lb, objects };
    const plan = planLoadBalancer(cleanup ? [] : desiredObjects(spec, lb), snapshot, spec.failedResources);
    const empty = isPlanEmpty(plan);
    const listed = objects.length <= listable;
    if (listed) listable -= objects.length;
    const index = empty && !cleanup ? indexOfPlan(plan) : null;
    const bytes = index === null ? 0 : indexBytes(index);
    const indexed = index !== null && bytes <= indexable;
    if (indexed) indexable -= bytes;
    loadBalancers[lb] = { held: objects.length, cleanup, empty, status: statusFromSnapshot(snapshot), ...(listed ? { objects } : {}), ...(indexed ? { index } : {}) };
  }
  return { readMark, loadBalancers };
}
