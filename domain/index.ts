/**
 * The domain model: what a service spec means (validation, names, kinds, addresses) and the reconciliation planner.
 * Pure and deterministic: workflows, activities and the client import it; it imports nothing of theirs (lint-enforced).
 */
export * from './types';
export * from './kinds';
export { canonicalIp, type CanonicalIp, type IpFamily } from './ip';
export { parseDuration, formatDuration } from './duration';
export { concurrencyLimit } from './limit';
export {
  SERVICE_TAG_PREFIX,
  SERVICE_UID_PATTERN,
  SERVICE_UID_RULE,
  isServiceUid,
  serviceTag,
  resourceName,
  POOL_NAME_PATTERN,
  POOL_NAME_RULE,
  isPoolName,
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
export { backendKey, desiredBackend, desiredBind, desiredFrontend, desiredObjects, desiredServer, frontendKey } from './desired';
export { classifyState } from './state';
export { planLoadBalancer } from './plan';
export { MAX_OUTLINE_BYTES, outlineBytes, outlinedStates, outlineOf, planOfOutline, type OutlinedAction, type OutlinedDestroy, type PlanOutline } from './plan-outline';
export { isPlanEmpty, planSummary, describePlan, type PlanSummary, type DescribeOptions } from './describe';
export { statusFromSnapshot, mergeStatus } from './status';
export {
  validatePoolFile,
  validateMembers,
  sortMembers,
  sameMembers,
  diffMembers,
  isNoChange,
  addMembers,
  removeMembers,
  applyPoolDelta,
  resolvePool,
  resolveSpecDocument,
  withOnlyServers,
  type PoolFile,
  type PoolFileResult,
  type MemberChange,
} from './pool';
export {
  advancePoolIndex,
  indexOfPlan,
  indexBytes,
  poolIndexBytes,
  membersOf,
  planPoolDelta,
  readPoolIndex,
  MAX_DELTA_SERVERS,
  MAX_INDEX_BYTES,
  type DeltaCreate,
  type DeltaDestroy,
  type DeltaPlan,
  type LoadBalancerIndex,
  type PoolIndex,
} from './pool-index';
