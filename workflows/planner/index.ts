/** The planner's public API: pure functions, safe to import from workflow code. */
export * from './types';
export { canonicalIp, type CanonicalIp, type IpFamily } from './ip';
export { parseDuration, formatDuration } from './duration';
export {
  SERVICE_TAG_PREFIX,
  serviceTag,
  resourceName,
  MODE_TCP,
  TCP_HEALTH_CHECK,
  SERVER_CHECK_ENABLED,
  BIND_SSL,
} from './names';
export {
  validateSpec,
  formatIssues,
  DEFAULT_READINESS,
  DEFAULT_FAILED_RESOURCES,
  READINESS_LIMITS,
  SPEC_LIMITS,
  MESSAGES,
  type SpecIssue,
  type SpecResult,
} from './spec';
export { desiredObjects } from './desired';
export { classifyState } from './state';
export { planLoadBalancer } from './plan';
export { isPlanEmpty, planSummary, describePlan, type PlanSummary, type DescribeOptions } from './describe';
export { statusFromSnapshot, mergeStatus } from './status';
