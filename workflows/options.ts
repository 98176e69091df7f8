/**
 * Activity option sets and summary helpers shared by the workflows (the names clients also see are in contract/).
 */
import { ActivityCancellationType, type ActivityOptions } from '@temporalio/common';
import type { ReadinessPolicy } from '../domain/types';

/**
 * Engine calls (read state, create, destroy, recover). Transient Engine errors (5xx, 429, network, 409 while a
 * dependent is still being removed) are retried without a limit on attempts: the Engine coming back is the normal
 * way out, and the controller reports the pass as still running meanwhile. `EngineRejected` (a 4xx that retrying
 * cannot fix) is raised non-retryable by the activities and fails the reconciliation with the Engine's message.
 * Two minutes per attempt leaves room for the few requests of one attempt at the client's 30 s request timeout.
 *
 * When a pass is cancelled (a newer revision superseded it), the workflow waits for a running Engine call to end
 * instead of abandoning it: a create still in flight would otherwise land after the next pass observed, and that
 * pass would create a second object.
 */
export const ENGINE_CALL: ActivityOptions = {
  startToCloseTimeout: '2m',
  // Engine activities heartbeat every 5 s (activities/heartbeat.ts): a killed worker's call is retried after 15 s,
  // as a readiness wait is. Three beats per timeout leave room for an event loop slowed by a busy worker.
  heartbeatTimeout: '15s',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  // 250 ms x 1.5: a storm of transient errors (each attempt is a few requests, any of which may fail) is ridden out
  // in seconds, while an Engine that is down is asked about every 30 s after a minute and a half.
  retry: { initialInterval: '250ms', backoffCoefficient: 1.5, maximumInterval: '30s' },
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

/**
 * How long a list of names in an activity summary may grow: Temporal bounds a summary's payload
 * (`limit.userMetadataSummarySize`, 400 bytes by default), and the Web UI shows it on one line.
 */
export const SUMMARY_LIST_CHARS = 240;

/** `items` joined with commas, as many as fit in `max` characters, then "and N more". */
export function listed(items: readonly string[], max = SUMMARY_LIST_CHARS): string {
  let out = '';
  for (let i = 0; i < items.length; i++) {
    const next = out === '' ? (items[i] as string) : `${out}, ${items[i] as string}`;
    if (next.length > max && i > 0) return `${out} and ${items.length - i} more`;
    out = next;
  }
  return out;
}
