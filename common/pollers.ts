/**
 * Reading Temporal's poller lists (DescribeTaskQueue): when a poller counts as live. Shared by the pickup diagnosis
 * (client/pickup.ts), the worker's readiness (worker/health.ts) and its first-install check (worker/versioning.ts).
 */

/**
 * A poller whose last poll reached the server longer ago than this is taken for gone. Temporal keeps a poller in
 * DescribeTaskQueue's list for minutes after its worker stopped, while a live worker starts a new long poll at least
 * once a minute (the server's long-poll expiry); measured on the dev server (Temporal 1.29.1): an idle worker's last
 * poll was at most 58.5 s old.
 */
export const LIVE_POLLER_MS = 70_000;

/**
 * A Version counts as dead once nothing has polled it for this long (worker/stranded.ts; LBAAS_STRANDED_AFTER_SECONDS
 * sets it per worker). A live worker's last poll, as DescribeTaskQueue lists it, was measured at most ~60 s old on an
 * idle task queue (the long poll's length): 90 s leaves a margin for clock skew between worker and server and for a
 * worker busy starting up. The pickup diagnosis (client/pickup.ts) names it when it says a run will be taken over.
 */
export const DEFAULT_DEAD_AFTER_MS = 90_000;
/** How often a worker of the Current Version sweeps for stranded runs (worker/stranded.ts), jittered by a fifth. */
export const STRANDED_SWEEP_MS = 30_000;

type Timestamp = { seconds?: unknown; nanos?: number | null } | null | undefined;

/** A protobuf Timestamp (seconds as a Long or number) in epoch milliseconds; null when absent. */
export function timestampMs(t: Timestamp): number | null {
  if (!t || t.seconds === undefined || t.seconds === null) return null;
  return Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
}

/** Whether a poller last seen at `lastAccessTime` still polls at `now`; one without a time counts as live. */
export function isLivePoller(lastAccessTime: Timestamp, now: number): boolean {
  const at = timestampMs(lastAccessTime);
  return at === null || now - at <= LIVE_POLLER_MS;
}
