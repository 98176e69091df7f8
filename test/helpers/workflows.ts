/**
 * Starting the lbaas workflows from a raw Temporal client the way the workflow tests need it: unique ids, every
 * started run remembered so a test that fails half-way cannot leave a workflow talking to the next test's Engine,
 * and failures unpacked into their cause chain for exact assertions.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, TemporalFailure } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type { Worker } from '@temporalio/worker';
import { workflowIds } from '../../contract';
import { planService } from '../../workflows/plan-service';
import { reconcileLoadBalancer, type ReconcileLoadBalancerInput } from '../../workflows/reconcile-lb';
import { reconcileService, type ReconcileServiceInput } from '../../workflows/reconcile-service';

type AnyHandle = WorkflowHandle<typeof reconcileService | typeof reconcileLoadBalancer | typeof planService>;

export class Runs {
  readonly #started: AnyHandle[] = [];
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
  ) {}

  /** reconcileService under a fresh id. */
  service(input: ReconcileServiceInput, idPrefix = 'svc') {
    return this.#track(this.client.workflow.start(reconcileService, { taskQueue: this.taskQueue, workflowId: `${idPrefix}-${randomUUID()}`, args: [input] }));
  }

  /** reconcileLoadBalancer under the product's id `lbaas/<uid>/lb/<lb>` unless another is given. */
  loadBalancer(input: ReconcileLoadBalancerInput & { spec: { serviceUid?: unknown } }, workflowId?: string) {
    const id = workflowId ?? workflowIds.loadBalancer(String(input.spec.serviceUid), input.loadBalancer);
    return this.#track(this.client.workflow.start(reconcileLoadBalancer, { taskQueue: this.taskQueue, workflowId: id, args: [input] }));
  }

  plan(input: { spec: unknown }) {
    return this.#track(this.client.workflow.start(planService, { taskQueue: this.taskQueue, workflowId: `plan-${randomUUID()}`, args: [input] }));
  }

  /** Any workflow type by name with any input: how a client that skips our typings would start one. */
  raw(workflowType: string, input: unknown, workflowId = `raw-${randomUUID()}`) {
    return this.#track(this.client.workflow.start(workflowType, { taskQueue: this.taskQueue, workflowId, args: [input] })) as Promise<WorkflowHandle>;
  }

  async #track<H extends AnyHandle>(started: Promise<H>): Promise<H> {
    const handle = await started;
    this.#started.push(handle);
    return handle;
  }

  /** Terminates every run this object started that is still running. */
  async terminateRunning(): Promise<void> {
    const handles = this.#started.splice(0);
    await Promise.all(
      handles.map(async (h) => {
        try {
          const d = await h.describe();
          if (d.status.name === 'RUNNING') await h.terminate('test cleanup');
        } catch {
          // Gone already.
        }
      }),
    );
  }
}

export interface FailureLink {
  class: string;
  type: string | null;
  message: string;
  nonRetryable: boolean | null;
}

/** The cause chain of a failure, outermost first: class, ApplicationFailure type, message, nonRetryable. */
export function chainOf(err: unknown): FailureLink[] {
  const chain: FailureLink[] = [];
  let e = err instanceof WorkflowFailedError ? err.cause : (err as Error | undefined);
  while (e) {
    chain.push({
      class: e.constructor.name,
      type: e instanceof ApplicationFailure ? (e.type ?? null) : null,
      message: e.message,
      nonRetryable: e instanceof ApplicationFailure ? (e.nonRetryable ?? false) : null,
    });
    e = e instanceof TemporalFailure || e instanceof Error ? ((e as { cause?: Error }).cause ?? undefined) : undefined;
  }
  return chain;
}

/** Awaits a workflow result that must fail; returns the WorkflowFailedError. */
export async function failureOf(result: Promise<unknown>): Promise<WorkflowFailedError> {
  try {
    const value = await result;
    throw new Error(`expected the workflow to fail, it returned ${JSON.stringify(value).slice(0, 500)}`);
  } catch (err) {
    if (err instanceof WorkflowFailedError) return err;
    throw err;
  }
}

export type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The events of a run's history. */
export async function eventsOf(handle: WorkflowHandle): Promise<HistoryEvent[]> {
  return (await handle.fetchHistory()).events ?? [];
}

/** An event's summary (the Web UI's text for an activity), decoded. */
export function summaryOf(e: { userMetadata?: { summary?: { data?: Uint8Array | null } | null } | null }): string {
  const data = e.userMetadata?.summary?.data;
  return data ? (JSON.parse(Buffer.from(data).toString('utf8')) as string) : '';
}

/** Activity types scheduled in a history, in order. */
export function scheduledActivities(events: readonly HistoryEvent[]): string[] {
  return events.flatMap((e) => (e.activityTaskScheduledEventAttributes?.activityType?.name ? [e.activityTaskScheduledEventAttributes.activityType.name] : []));
}

/**
 * An asynchronous probe asks Temporal (a query runs a workflow task on the worker, a describe reads the server):
 * repeated every 10 ms it loads the very worker and server the test waits on, and the other test files running
 * beside it. 50 ms still notices a state within a twentieth of a second.
 */
const ASYNC_PROBE_MIN_INTERVAL_MS = 50;

/**
 * Polls `probe` every `intervalMs` (an asynchronous probe at least every ASYNC_PROBE_MIN_INTERVAL_MS) until it
 * returns something other than undefined/false.
 */
export async function until<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 20_000, intervalMs = 10): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = probe();
    const v = await answer;
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, answer instanceof Promise ? Math.max(intervalMs, ASYNC_PROBE_MIN_INTERVAL_MS) : intervalMs));
  }
}

/**
 * Waits until `worker` runs no activity and the Engine has seen no request for `quietMs`. A terminated workflow's
 * activity attempt that is already running (or already handed to the worker) finishes on the worker, its result
 * then refused; waiting for that keeps its Engine requests out of the next test's counters.
 */
export async function drained(worker: Worker, engineRequests: () => number, quietMs = 300, timeoutMs = 30_000): Promise<void> {
  let last = -1;
  let since = Date.now();
  await until(
    'the worker to finish its running activities',
    () => {
      const total = engineRequests();
      if (total !== last || worker.getStatus().numInFlightActivities > 0) {
        last = total;
        since = Date.now();
        return false;
      }
      return Date.now() - since >= quietMs;
    },
    timeoutMs,
    20,
  );
}

/** The workflow type of each pass the controller of `uid` ran after pass `after`, in order (a pass no longer found left out). */
export async function passTypesAfter(client: Client, lastPass: () => Promise<number>, uid: string, after: number): Promise<string[]> {
  const last = await lastPass();
  const types: string[] = [];
  for (let n = after + 1; n <= last; n++) {
    const d = await client.workflow.getHandle(workflowIds.pass(uid, n)).describe().catch(() => null);
    if (d) types.push(d.type);
  }
  return types;
}
