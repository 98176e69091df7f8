/** Reading a plan: is there anything to do, how much, and in words for people (the CLI's plan output). */
import { KIND_TITLE } from './kinds';
import type { Plan } from './types';

/** Nothing to destroy and every desired object kept ready: the load balancer has converged. */
export function isPlanEmpty(plan: Plan): boolean {
  return plan.destroy.length === 0 && plan.objects.every((p) => p.action.type === 'keep');
}

export interface PlanSummary {
  create: number;
  destroy: number;
  recover: number;
  wait: number;
  keep: number;
}

export function planSummary(plan: Plan): PlanSummary {
  const summary: PlanSummary = { create: 0, destroy: plan.destroy.length, recover: 0, wait: 0, keep: 0 };
  for (const { action } of plan.objects) summary[action.type] += 1;
  return summary;
}

export interface DescribeOptions {
  /** Also list the objects kept as they are (left out by default: a converged plan then reads as nothing). */
  includeKept?: boolean;
}

/**
 * One line per step, in the order a pass runs them: destroys first, then the desired objects in dependency order.
 * `destroy Bind v4.http.old (not desired) <identifier>`, `create Backend http.web.default.prod`,
 * `recover Server node-1.http.web.default.prod <identifier>`, `wait Frontend ... <identifier>`.
 */
export function describePlan(plan: Plan, options: DescribeOptions = {}): string[] {
  const lines = plan.destroy.map((d) => `destroy ${KIND_TITLE[d.kind]} ${d.name} (${d.reason}) ${d.identifier}`);
  for (const { desired, action } of plan.objects) {
    const what = `${KIND_TITLE[desired.kind]} ${desired.name}`;
    if (action.type === 'create') lines.push(`create ${what}`);
    else if (action.type !== 'keep' || options.includeKept === true) lines.push(`${action.type} ${what} ${action.identifier}`);
  }
  return lines;
}
