/**
 * Planning inside a workflow, with a DEBUG line for every plan made there (LBAAS_LOG_LEVEL=DEBUG shows them): which
 * load balancer, of which service, and how many actions of each kind. The SDK writes workflow log lines only when a
 * task first runs, never while a history is replayed, so each line is one plan a pass really made; the fast tests
 * count them (test/fast/plan-once.test.ts).
 */
import { log } from '@temporalio/workflow';
import { planLoadBalancer, planSummary } from '../domain';
import type { DesiredObject, FailedResourcesPolicy, Plan, Snapshot } from '../domain/types';

/** The message of each plan's line. */
export const PLANNED_MESSAGE = 'planned in the workflow';

export function planInWorkflow(serviceUid: string, desired: readonly DesiredObject[], snapshot: Snapshot, policy: FailedResourcesPolicy): Plan {
  const plan = planLoadBalancer(desired, snapshot, policy);
  log.debug(PLANNED_MESSAGE, { serviceUid, loadBalancer: snapshot.loadBalancer, ...planSummary(plan) });
  return plan;
}
