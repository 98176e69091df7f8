/**
 * Services, controllers and histories as the operations tests use them: unique service uids (the dev server may be
 * shared with other test files, so visibility queries must only ever match this run's workflows), specs validated
 * the way the CLI validates them, cleanup of every controller a test started, and who ran which activity.
 */
import { randomUUID } from 'node:crypto';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { LbaasClient } from '../../client/service-client';
import { validateSpec } from '../../domain';
import type { ValidatedSpec } from '../../domain/types';
import { exampleSpec } from './fixtures';
import { until } from './workflows';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** A service uid unique to this run: `<prefix>-<8 hex>`. */
export const uniqueUid = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

/** A 32-hex Engine identifier nobody has used. */
export const freshIdentifier = () => randomUUID().replace(/-/g, '');

export function valid(raw: Record<string, unknown>): ValidatedSpec {
  const r = validateSpec(raw);
  if (!r.ok) throw new Error(`invalid test spec: ${JSON.stringify(r.issues)}`);
  return r.spec;
}

/** The example of docs/spec.md#format on `loadBalancers` (12 objects per load balancer), nameSuffix = uid. */
export function serviceSpec(uid: string, loadBalancers: string[], overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return exampleSpec(loadBalancers, { serviceUid: uid, nameSuffix: uid, ...overrides });
}

/** An LbaasClient that remembers every service it applied, so `cleanup` can end their controllers. */
export class TrackedLbaas extends LbaasClient {
  readonly uids = new Set<string>();

  constructor(client: Client, taskQueue: string) {
    super(client, taskQueue);
  }

  override async apply(raw: unknown, spec: ValidatedSpec) {
    this.uids.add(spec.serviceUid);
    return super.apply(raw, spec);
  }

  /** apply(raw) with the spec validated here. */
  async applyRaw(raw: Record<string, unknown>) {
    return this.apply(raw, valid(raw));
  }

  /** Terminates every controller of this client that still runs (its children are cancelled with it). */
  async cleanup(): Promise<void> {
    await Promise.all(
      [...this.uids].map(async (uid) => {
        try {
          const h = this.controller(uid);
          if ((await h.describe()).status.name === 'RUNNING') await h.terminate('test cleanup');
        } catch {
          // Never started or already gone.
        }
      }),
    );
  }
}

/** Workflow ids a visibility query matches, sorted. */
export async function visibleIds(client: Client, query: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const wf of client.workflow.list({ query })) ids.push(wf.workflowId);
  return ids.sort();
}

/** Polls a visibility query until it matches exactly `expected` (visibility is eventually consistent). */
export async function untilVisible(client: Client, query: string, expected: string[], timeoutMs = 15_000): Promise<string[]> {
  let last: string[] = [];
  try {
    return await until(
      `visibility query ${query} to match ${JSON.stringify(expected)}`,
      async () => {
        last = await visibleIds(client, query);
        return JSON.stringify(last) === JSON.stringify([...expected].sort()) ? last : false;
      },
      timeoutMs,
      200,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last answer ${JSON.stringify(last)}`);
  }
}

export interface ActivityRun {
  activityId: string;
  activityType: string;
  identity: string;
  attempt: number;
  /** completed, failed, timedOut, canceled, or running (no close event yet). */
  outcome: string;
}

/** Every activity attempt that history records (ActivityTaskStarted), with the worker identity that ran it. */
export function activityRuns(events: readonly HistoryEvent[]): ActivityRun[] {
  const types = new Map<string, { activityId: string; activityType: string }>();
  const closed = new Map<string, string>();
  for (const e of events) {
    const id = String(e.eventId);
    const a = e.activityTaskScheduledEventAttributes;
    if (a) types.set(id, { activityId: a.activityId ?? '', activityType: a.activityType?.name ?? '?' });
    const close =
      (e.activityTaskCompletedEventAttributes && ['completed', e.activityTaskCompletedEventAttributes.scheduledEventId]) ||
      (e.activityTaskFailedEventAttributes && ['failed', e.activityTaskFailedEventAttributes.scheduledEventId]) ||
      (e.activityTaskTimedOutEventAttributes && ['timedOut', e.activityTaskTimedOutEventAttributes.scheduledEventId]) ||
      (e.activityTaskCanceledEventAttributes && ['canceled', e.activityTaskCanceledEventAttributes.scheduledEventId]);
    if (close) closed.set(String(close[1]), close[0] as string);
  }
  return events.flatMap((e) => {
    const s = e.activityTaskStartedEventAttributes;
    if (!s) return [];
    const scheduled = String(s.scheduledEventId);
    const t = types.get(scheduled) ?? { activityId: '?', activityType: '?' };
    return [{ ...t, identity: s.identity ?? '', attempt: s.attempt ?? 0, outcome: closed.get(scheduled) ?? 'running' }];
  });
}

export async function historyOf(handle: WorkflowHandle): Promise<HistoryEvent[]> {
  return (await handle.fetchHistory()).events ?? [];
}

export interface PendingActivity {
  activityId: string;
  activityType: string;
  /** SCHEDULED, STARTED or CANCEL_REQUESTED. */
  state: string;
  attempt: number;
  lastWorkerIdentity: string;
  /** The last failed attempt's message ('' when no attempt has failed). */
  lastFailure: string;
  /** The attempt has heartbeated: the worker is running it, not merely handed it by the server. */
  heartbeated: boolean;
}

const PENDING_STATES: Record<number, string> = { 1: 'SCHEDULED', 2: 'STARTED', 3: 'CANCEL_REQUESTED', 4: 'PAUSED', 5: 'PAUSE_REQUESTED' };

/** The pending activities of a running workflow ([] when it has ended or does not exist). */
export async function pendingActivities(handle: WorkflowHandle): Promise<PendingActivity[]> {
  try {
    const d = await handle.describe();
    return (d.raw.pendingActivities ?? []).map((p) => ({
      activityId: p.activityId ?? '',
      activityType: p.activityType?.name ?? '?',
      state: PENDING_STATES[Number(p.state)] ?? String(p.state),
      attempt: p.attempt ?? 0,
      lastWorkerIdentity: p.lastWorkerIdentity ?? '',
      lastFailure: p.lastFailure?.message ?? '',
      heartbeated: p.lastHeartbeatTime != null,
    }));
  } catch {
    return [];
  }
}
