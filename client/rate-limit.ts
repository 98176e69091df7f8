/**
 * Whether the Engine is throttling a service's running pass, read from the pass itself. A throttled activity shows it
 * in one of two ways: a write answered 429 fails the attempt with EngineRateLimitedError, retried by Temporal after the
 * pacer's backoff (activities/failures.ts), so the pending activity's last failure says it; a polling loop waits the
 * backoff inside the attempt and says it on its heartbeat (activities/heartbeat.ts). The pass's workflow and its running children (the load balancer workflows, and theirs) are
 * described, and the latest such time among their pending activities is the answer. No signal is involved.
 */
import type { Client } from '@temporalio/client';
import { isRateLimitedDetails, workflowIds } from '../contract';

/** How long one 429 keeps the status saying it (as activities/heartbeat.ts holds it): spans the gaps between 429s. */
const HOLD_MS = 30_000;
const RATE_LIMITED_FAILURE = 'EngineRateLimitedError';

function millis(ts: { seconds?: { toNumber(): number } | number | null; nanos?: number | null } | null | undefined): number | null {
  if (!ts?.seconds) return null;
  const seconds = typeof ts.seconds === 'number' ? ts.seconds : ts.seconds.toNumber();
  return seconds * 1000 + Math.floor((ts.nanos ?? 0) / 1e6);
}

/** How many workflows one status call describes at most (a pass over thousands of load balancers is sampled). */
export const MAX_DESCRIBED = 64;
/** Children of children: pass → load balancer workflow → its object groups. */
const MAX_DEPTH = 3;

/** The latest time a pending activity of the running pass says its requests are held back until; null when none. */
export async function passRateLimitedUntil(client: Client, serviceUid: string, pass: number, now: number = Date.now()): Promise<number | null> {
  const converter = client.options.loadedDataConverter.payloadConverter;
  let latest: number | null = null;
  let level = [workflowIds.pass(serviceUid, pass)];
  let described = 0;
  for (let depth = 0; depth < MAX_DEPTH && level.length > 0 && described < MAX_DESCRIBED; depth++) {
    const ids = level.slice(0, MAX_DESCRIBED - described);
    described += ids.length;
    const next: string[] = [];
    await Promise.all(
      ids.map(async (id) => {
        try {
          const { raw } = await client.workflow.getHandle(id).describe();
          for (const child of raw.pendingChildren ?? []) if (child.workflowId) next.push(child.workflowId);
          for (const activity of raw.pendingActivities ?? []) {
            if (activity.lastFailure?.applicationFailureInfo?.type === RATE_LIMITED_FAILURE) {
              const failedAt = millis(activity.lastAttemptCompleteTime) ?? now;
              const until = Math.max(failedAt + HOLD_MS, millis(activity.nextAttemptScheduleTime) ?? 0);
              if (until > now) latest = Math.max(latest ?? 0, until);
            }
            const payload = activity.heartbeatDetails?.payloads?.[0];
            if (!payload) continue;
            const details: unknown = converter.fromPayload(payload);
            if (isRateLimitedDetails(details) && details.engineRateLimitedUntil > now) latest = Math.max(latest ?? 0, details.engineRateLimitedUntil);
          }
        } catch {
          // Finished and gone, or not started yet: nothing pending to read.
        }
      }),
    );
    level = next.sort();
  }
  return latest;
}
