/**
 * The full-resync Schedule (docs/architecture.md#full-resync-and-schedule): id `lbaas-full-resync`, starting
 * `fullResync` on the task queue. Overlap SKIP: a full resync only asks controllers to resync, so a second one
 * running beside the first would only repeat it. The catchup window is one interval: after an outage the missed run
 * is made up once, at most one interval late; older misses are dropped (SKIP would drop them anyway).
 */
import { ScheduleAlreadyRunning, ScheduleNotFoundError, ScheduleOverlapPolicy, type Client, type ScheduleDescription, type ScheduleHandle } from '@temporalio/client';
import { invalid } from '../common/errors';
import { formatDuration, parseDuration } from '../domain';
import { workflowIds, workflowTypes, type FullResyncInput, type FullResyncWorkflow } from '../contract';

export const SCHEDULE_ID = 'lbaas-full-resync';
/** Shorter intervals would only make runs skip each other; the server also refuses catchup windows under 10 s. */
const MIN_INTERVAL_MS = 10_000;

export interface ScheduleSettings {
  everyMs: number;
  destroyOrphans: boolean;
  taskQueue: string;
}

export interface ScheduleView {
  scheduleId: string;
  paused: boolean;
  note: string | null;
  every: string | null;
  everyMs: number | null;
  destroyOrphans: boolean;
  workflowType: string | null;
  taskQueue: string | null;
  overlap: string;
  catchupWindow: string;
  nextRuns: string[];
  recentRuns: { workflowId: string; scheduledAt: string; startedAt: string }[];
  running: string[];
  actionsTaken: number;
  skippedOverlap: number;
  missedCatchupWindow: number;
}

function action(s: ScheduleSettings) {
  const input: FullResyncInput = s.destroyOrphans ? { destroyOrphans: true } : {};
  return {
    type: 'startWorkflow' as const,
    workflowType: workflowTypes.fullResync,
    workflowId: workflowIds.scheduledResync,
    taskQueue: s.taskQueue,
    args: [input] as Parameters<FullResyncWorkflow>,
    staticSummary: s.destroyOrphans ? 'full resync (destroys orphaned objects)' : 'full resync',
  };
}

const policies = (s: ScheduleSettings) => ({ overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: Math.max(MIN_INTERVAL_MS, s.everyMs) });

/** Creates the schedule, or updates it in place when it exists (its paused state and history are kept). */
export async function setSchedule(client: Client, s: ScheduleSettings): Promise<'created' | 'updated'> {
  if (s.everyMs < MIN_INTERVAL_MS) throw invalid(`--every: must be at least ${formatDuration(MIN_INTERVAL_MS)}`);
  try {
    await client.schedule.create({ scheduleId: SCHEDULE_ID, spec: { intervals: [{ every: s.everyMs }] }, action: action(s), policies: policies(s) });
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  await client.schedule.getHandle(SCHEDULE_ID).update((prev) => ({
    ...prev,
    spec: { intervals: [{ every: s.everyMs }] },
    action: action(s),
    policies: { ...prev.policies, ...policies(s) },
  }));
  return 'updated';
}

/**
 * For `lbaas dev` and other programs: make sure the schedule exists with these settings (created, or updated in
 * place keeping its paused state). `every` is a duration like `10m`.
 */
export async function ensureFullResyncSchedule(
  client: Client,
  o: { taskQueue: string; every: string; destroyOrphans?: boolean },
): Promise<'created' | 'updated'> {
  const everyMs = parseDuration(o.every);
  if (everyMs === null) throw invalid(`every: must be a duration like 10m (got ${JSON.stringify(o.every)})`);
  return setSchedule(client, { everyMs, destroyOrphans: o.destroyOrphans === true, taskQueue: o.taskQueue });
}

/** The handle of the existing schedule; a missing one is an operator's mistake (exit 2) with the way out. */
export async function existingSchedule(client: Client): Promise<{ handle: ScheduleHandle; description: ScheduleDescription }> {
  const handle = client.schedule.getHandle(SCHEDULE_ID);
  try {
    return { handle, description: await handle.describe() };
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) throw invalid(`schedule ${SCHEDULE_ID} does not exist; create it with: lbaas schedule set --every 10m`);
    throw err;
  }
}

export function viewOf(d: ScheduleDescription): ScheduleView {
  const everyMs = d.spec.intervals?.[0]?.every ?? null;
  const a = d.action.type === 'startWorkflow' ? d.action : null;
  const input = (a?.args?.[0] ?? {}) as FullResyncInput;
  return {
    scheduleId: d.scheduleId,
    paused: d.state.paused,
    note: d.state.note || null,
    every: everyMs === null ? null : formatDuration(everyMs),
    everyMs,
    destroyOrphans: input?.destroyOrphans === true,
    workflowType: a ? a.workflowType : null,
    taskQueue: a?.taskQueue ?? null,
    overlap: d.policies.overlap ?? 'UNSPECIFIED',
    catchupWindow: formatDuration(d.policies.catchupWindow),
    nextRuns: d.info.nextActionTimes.map((t) => t.toISOString()),
    recentRuns: d.info.recentActions.map((r) => ({ workflowId: r.action.workflow.workflowId, scheduledAt: r.scheduledAt.toISOString(), startedAt: r.takenAt.toISOString() })),
    running: d.info.runningActions.map((r) => r.workflow.workflowId),
    actionsTaken: d.info.numActionsTaken,
    skippedOverlap: d.info.numActionsSkippedOverlap,
    missedCatchupWindow: d.info.numActionsMissedCatchupWindow,
  };
}

/**
 * Triggers a run now with overlap SKIP stated explicitly (trigger() alone would use ALLOW_ALL), then watches the
 * schedule briefly to report what happened: the run it started, or the run that made it skip.
 */
export async function triggerSchedule(client: Client, watchMs = 5_000): Promise<{ started: string | null; skippedFor: string | null }> {
  const { handle, description } = await existingSchedule(client);
  const before = new Set(description.info.recentActions.map((r) => r.action.workflow.workflowId));
  const running = description.info.runningActions[0]?.workflow.workflowId ?? null;
  await handle.trigger(ScheduleOverlapPolicy.SKIP);
  const until = Date.now() + watchMs;
  for (;;) {
    const d = await handle.describe();
    const fresh = d.info.recentActions.map((r) => r.action.workflow.workflowId).find((id) => !before.has(id));
    if (fresh) return { started: fresh, skippedFor: null };
    const stillRunning = d.info.runningActions[0]?.workflow.workflowId ?? null;
    if (Date.now() >= until || (running !== null && d.info.numActionsSkippedOverlap > description.info.numActionsSkippedOverlap)) {
      return { started: null, skippedFor: stillRunning ?? running };
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
