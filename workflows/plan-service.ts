/**
 * planService: a read-only dry run of what a pass would create, destroy and recover on each load balancer. Observed
 * and planned in the worker (describeServicePlan, activities/plan-service.ts), whose result is bounded for a service
 * of any size the validator accepts.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { specOf } from './input';
import { ENGINE_CALL } from './options';
import type { PlanServiceResult } from '../contract';

export async function planService(input: { spec: unknown }): Promise<PlanServiceResult> {
  // Only clients start a dry run: its input is validated here, and the activity is handed the validated spec.
  const { spec } = specOf(input, 'planService');
  const engine = proxyActivities<Activities>(ENGINE_CALL);
  return engine.describeServicePlan.executeWithOptions({ summary: `observe and plan ${spec.serviceUid}` }, [{ spec }]);
}
