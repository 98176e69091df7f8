/**
 * describeServicePlan: the dry run behind `lbaas plan` and `lbaas import --check`, observed and planned in the worker,
 * returned bounded.
 *
 * Why in the worker and bounded: a service at the validator's limits holds thousands of objects on each load balancer;
 * its observation (about 1.4 MB per load balancer) and its full plan cannot cross Temporal's 2 MiB payload limit as
 * one activity result or workflow result. The result carries each load balancer's counts in full, its steps as lines
 * up to PLAN_LIMITS.lines in all (destroys first, then creates, recoveries and waits in dependency order, as a pass
 * runs them), and the plan objects themselves only while the whole service's plans hold at most
 * PLAN_LIMITS.objects objects (contract/payloads.ts).
 */
import { describePlan, desiredObjects, planLoadBalancer, planSummary } from '../domain';
import { PLAN_LIMITS, type LoadBalancerPlan, type PlanServiceResult } from '../contract';
import type { Plan, ValidatedSpec } from '../domain';
import type { EngineClient } from './engine';
import type { IdentifierCache } from './memory';
import { observeService } from './state';

/** Each load balancer's plan bounded as the file comment says; `plans` in the order they are reported. */
export function boundedPlans(plans: { loadBalancer: string; cleanup: boolean; plan: Plan }[], maxLines: number = PLAN_LIMITS.lines, maxObjects: number = PLAN_LIMITS.objects): Record<string, LoadBalancerPlan> {
  const objects = plans.reduce((n, p) => n + p.plan.objects.length + p.plan.destroy.length, 0);
  let lineBudget = maxLines;
  const out: Record<string, LoadBalancerPlan> = {};
  for (const { loadBalancer, cleanup, plan } of plans) {
    const all = describePlan(plan);
    const lines = all.slice(0, lineBudget);
    lineBudget -= lines.length;
    out[loadBalancer] = {
      cleanup,
      summary: planSummary(plan),
      lines,
      ...(lines.length < all.length ? { linesOmitted: all.length - lines.length } : {}),
      ...(objects <= maxObjects ? { plan } : {}),
    };
  }
  return out;
}

/** `spec`: what planService validated; an activity's input is the workflow's own command, so it is not parsed again. */
export async function describeServicePlan(engine: EngineClient, kinds: IdentifierCache, input: { spec: ValidatedSpec }): Promise<PlanServiceResult> {
  const { spec } = input;
  const held = await observeService(engine, kinds, spec.serviceUid);
  const dropped = [...held.keys()].filter((lb) => !spec.loadBalancers.includes(lb)).sort();
  const plans = [...spec.loadBalancers, ...dropped].map((loadBalancer) => {
    const cleanup = !spec.loadBalancers.includes(loadBalancer);
    const plan = planLoadBalancer(cleanup ? [] : desiredObjects(spec, loadBalancer), { loadBalancer, objects: held.get(loadBalancer) ?? [] }, spec.failedResources);
    return { loadBalancer, cleanup, plan };
  });
  return { serviceUid: spec.serviceUid, loadBalancers: boundedPlans(plans) };
}
