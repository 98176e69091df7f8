/**
 * Names, ids, search attributes and activity option sets shared by the workflows, declared once.
 */
import { defineSearchAttributeKey, SearchAttributeType, type ActivityOptions } from '@temporalio/common';
import type { ReadinessPolicy } from './planner/types';

export const workflowIds = {
  /** One reconciliation of one service on one load balancer; the id makes it exclusive (product.md section 3). */
  loadBalancer: (serviceUid: string, loadBalancer: string) => `lbaas/${serviceUid}/lb/${loadBalancer}`,
  controller: (serviceUid: string) => `lbaas/${serviceUid}`,
};

export const searchAttributes = {
  serviceUid: defineSearchAttributeKey('LbaasServiceUid', SearchAttributeType.KEYWORD),
  loadBalancers: defineSearchAttributeKey('LbaasLoadBalancers', SearchAttributeType.KEYWORD_LIST),
  phase: defineSearchAttributeKey('LbaasPhase', SearchAttributeType.KEYWORD),
};

export type Phase = 'Converging' | 'Converged' | 'Failed' | 'Deleting';

/** Non-retryable failure types raised by workflows. */
export const FAILURE_TYPES = {
  invalidInput: 'InvalidInput',
  notConverged: 'NotConverged',
} as const;

/**
 * Engine calls (read state, create, destroy, recover). Transient Engine errors (5xx, 429, network, 409 while a
 * dependent is still being removed) are retried without a limit on attempts: the Engine coming back is the normal
 * way out, and the controller reports the pass as still running meanwhile. `EngineRejected` (a 4xx that retrying
 * cannot fix) is raised non-retryable by the activities and fails the reconciliation with the Engine's message.
 * 60 s per attempt is twice the Engine client's request timeout, so an attempt can do its few requests.
 */
export const ENGINE_CALL: ActivityOptions = {
  startToCloseTimeout: '2m',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
};

/**
 * Readiness waits: one attempt polls inside the activity (see activities/objects.ts for why), heartbeating so that
 * a crashed worker's attempt is retried after 15 s rather than after the whole window; attempts are retried on the
 * spec's readiness policy, which bounds the wait in all.
 */
export function readinessOptions(policy: ReadinessPolicy): ActivityOptions {
  return {
    startToCloseTimeout: '90s',
    heartbeatTimeout: '15s',
    retry: {
      initialInterval: policy.initialIntervalMs,
      backoffCoefficient: policy.backoffCoefficient,
      maximumInterval: policy.maximumIntervalMs,
      maximumAttempts: policy.maximumAttempts,
    },
  };
}

/** First eight characters of an identifier, for summaries people read. */
export const short = (id: string) => (id.length > 12 ? `${id.slice(0, 8)}…` : id);
