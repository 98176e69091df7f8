/**
 * planService: a read-only dry run of what a pass would create, destroy and recover on each load balancer.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { specOf } from './input';
import { ENGINE_CALL } from './options';
import { describePlan, desiredObjects, planLoadBalancer, planSummary } from '../domain';
import type { LoadBalancerPlan, PlanServiceResult } from '../contract';

export async function planService(input: { spec: unknown }): Promise<PlanServiceResult> {
  const { spec } = specOf(input, 'planService');
  const engine = proxyActivities<Activities>(ENGINE_CALL);
  const held = await engine.observeService.executeWithOptions({ summary: `observe ${spec.serviceUid}` }, [{ serviceUid: spec.serviceUid }]);
  const dropped = Object.keys(held).filter((lb) => !spec.loadBalancers.includes(lb)).sort();
  const loadBalancers: Record<string, LoadBalancerPlan> = {};
  for (const lb of [...spec.loadBalancers, ...dropped]) {
    const cleanup = !spec.loadBalancers.includes(lb);
    const plan = planLoadBalancer(cleanup ? [] : desiredObjects(spec, lb), { loadBalancer: lb, objects: held[lb] ?? [] }, spec.failedResources);
    loadBalancers[lb] = { cleanup, summary: planSummary(plan), lines: describePlan(plan), plan };
  }
  return { serviceUid: spec.serviceUid, loadBalancers };
}
