/**
 * What the fast workflow tests (test/fast) share: a worker on the time-skipping server (test/helpers/time-skipping.ts)
 * whose activities are fakes, and a fake of the one activity a controller's pass starts with, planObservedService,
 * that the test steers: the pass converges, fails as the Engine refusing it would, or blocks until released or
 * cancelled. A load balancer whose plan is empty is reported by reconcileService without a child
 * (workflows/reconcile-service.ts), so a converging pass is that one activity.
 */
import { randomUUID } from 'node:crypto';
import { after, before } from 'node:test';
import { Context } from '@temporalio/activity';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { DefaultLogger, Runtime, Worker, type LogEntry } from '@temporalio/worker';
import type { Activities } from '../../activities';
import type { PlanObservedInput, PlanObservedResult } from '../../activities/plan-observed';
import { LbaasClient } from '../../client/service-client';
import { FAILURE_TYPES, workflowTypes } from '../../contract';
import { PLANNED_MESSAGE } from '../../workflows/planning';
import { workflowBundle } from './bundle';
import { startTimeSkippingServer, type TimeSkippingServer } from './time-skipping';

/**
 * Warnings the tests cause on purpose or that say nothing about them, left out so that the report shows only those
 * that matter: the fakes fail passes (the worker warns of each failed activity and workflow), and the core says once
 * per worker that the test server does not advertise a capability of newer servers (heartbeat details kept on
 * failure, which no fake uses).
 */
const EXPECTED_WARNINGS = ['Activity failed', 'Workflow failed', 'activity_failure_include_heartbeat'];

/** A plan a workflow made (workflows/planning.ts): its DEBUG line's attributes, in the order the lines came. */
export interface WorkflowPlanLine {
  serviceUid: string;
  loadBalancer: string;
  workflowId: string;
  create: number;
  destroy: number;
  recover: number;
  wait: number;
  keep: number;
}
const planLines: WorkflowPlanLine[] = [];
/**
 * Every plan the workflows of this process's workers made so far, from the worker's DEBUG lines. The runtime holds
 * log lines back for a moment to sort them by time: they are flushed first.
 */
export function workflowPlans(): readonly WorkflowPlanLine[] {
  Runtime.instance().flushLogs();
  return [...planLines];
}

const LEVEL_RANK = { TRACE: 0, DEBUG: 1, INFO: 2, WARN: 3, ERROR: 4 } as const;

Runtime.install({
  // DEBUG for the workflows' plan lines (workflows/planning.ts), which are recorded, not printed; other lines below WARN are dropped.
  logger: new DefaultLogger('DEBUG', (entry: LogEntry) => {
    if (entry.message === PLANNED_MESSAGE) {
      planLines.push(entry.meta as unknown as WorkflowPlanLine);
      return;
    }
    if (LEVEL_RANK[entry.level] < LEVEL_RANK.WARN) return;
    if (EXPECTED_WARNINGS.some((w) => entry.message.includes(w))) return;
    process.stderr.write(`${entry.level} ${entry.message}${entry.meta ? ` ${JSON.stringify(entry.meta)}` : ''}\n`);
  }),
  // The core's own lines go through the logger above instead of straight to the console.
  telemetryOptions: { logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} } },
});

/** One call of the fake planObservedService. */
export interface PlanCall {
  input: PlanObservedInput;
  /** The test server's time at which this attempt was scheduled (the workflow clock). */
  scheduledAt: number;
  /** How the call ended: 'converged', 'failed', 'cancelled', or null while it runs. */
  outcome: 'converged' | 'failed' | 'cancelled' | null;
  /** Whether the call learnt of its cancellation (a 'hold' call ends with it only once released). */
  cancelRequested: boolean;
}

/**
 * 'block': the call waits until released or cancelled. 'hold': it waits until released even when cancelled, and then
 * ends cancelled if it was: the pass's end (and so the next pass's start) waits for the test.
 */
export type PlanOutcome = 'converge' | 'fail' | 'block' | 'hold';

/** The fake Engine of a test file's worker; each service's calls do what `set` last said for it (default converge). */
export class FakeEngine {
  readonly calls: PlanCall[] = [];
  /** The message of a failing call, as the activity's EngineRejected failure carries it. */
  readonly failMessage = 'POST /api/LBaaS/v1/backend.json: 422 Unprocessable Entity: load balancer unknown';
  readonly #outcomes = new Map<string, PlanOutcome>();
  readonly #gates = new Map<string, { promise: Promise<void>; open: () => void }>();

  /** What the next calls for `uid` do; a blocked call goes on only once released (or cancelled). */
  set(uid: string, outcome: PlanOutcome): void {
    this.#outcomes.set(uid, outcome);
  }

  /**
   * Lets the blocked and held calls of `uid` go on; each then converges or fails as `set` says now ('block', 'hold':
   * converges), or ends cancelled if its cancellation came.
   */
  release(uid: string): void {
    this.#gate(uid).open();
    this.#gates.delete(uid);
  }

  #gate(uid: string) {
    let g = this.#gates.get(uid);
    if (!g) {
      let open = () => {};
      const promise = new Promise<void>((resolve) => (open = resolve));
      g = { promise, open };
      this.#gates.set(uid, g);
    }
    return g;
  }

  /** Calls of the service `uid`, in order. */
  of(uid: string): PlanCall[] {
    return this.calls.filter((c) => uidOf(c) === uid);
  }

  activities(): Pick<Activities, 'planObservedService'> {
    return {
      planObservedService: async (input: PlanObservedInput): Promise<PlanObservedResult> => {
        const ctx = Context.current();
        const uid = uidOf({ input });
        const call: PlanCall = { input, scheduledAt: ctx.info.currentAttemptScheduledTimestampMs, outcome: null, cancelRequested: false };
        this.calls.push(call);
        const mode = this.#outcomes.get(uid);
        if (mode === 'block' || mode === 'hold') {
          // Heartbeats carry the cancellation of a superseded pass to the activity (the worker's throttle is short).
          const beat = setInterval(() => ctx.heartbeat(), 200);
          ctx.heartbeat();
          let cancellation: unknown = null;
          const cancelled = ctx.cancelled.catch((err: unknown) => {
            call.cancelRequested = true;
            cancellation = err;
          });
          try {
            await Promise.race([this.#gate(uid).promise, mode === 'block' ? cancelled : new Promise<never>(() => {})]);
            if (cancellation !== null) throw cancellation;
          } catch (err) {
            call.outcome = 'cancelled';
            throw err;
          } finally {
            clearInterval(beat);
          }
        }
        if (this.#outcomes.get(uid) === 'fail') {
          call.outcome = 'failed';
          throw ApplicationFailure.create({ type: FAILURE_TYPES.engineRejected, message: this.failMessage, nonRetryable: true });
        }
        call.outcome = 'converged';
        const spec = input.spec as { loadBalancers: string[] };
        const lbs = input.teardown ? [] : spec.loadBalancers;
        return { readMark: { reader: 'fake', at: 0 }, loadBalancers: Object.fromEntries(lbs.map((lb) => [lb, { held: 0, cleanup: false, empty: true, status: {} }])) };
      },
    };
  }
}

function uidOf(c: { input: PlanObservedInput }): string {
  return String((c.input.spec as { serviceUid?: unknown }).serviceUid);
}

/** A worker on a task queue of its own on the time-skipping server, with `activities` as its only activities. */
export async function fastWorker(ts: TimeSkippingServer, activities: object): Promise<{ worker: Worker; taskQueue: string }> {
  const taskQueue = `fast-${randomUUID()}`;
  const worker = await Worker.create({
    connection: ts.env.nativeConnection,
    namespace: ts.env.namespace ?? 'default',
    taskQueue,
    workflowBundle: await workflowBundle(),
    activities,
    // A blocked fake learns of its cancellation from the answer to a heartbeat: send them at once.
    maxHeartbeatThrottleInterval: '100ms',
    defaultHeartbeatThrottleInterval: '100ms',
    shutdownGraceTime: '1s',
  });
  return { worker, taskQueue };
}

/** What a fast test file runs on; the fields are there once the file's `before` has run. */
export interface FastStack {
  readonly ts: TimeSkippingServer;
  /** The task queue of the file's worker. */
  readonly taskQueue: string;
  /** The client library on the time-skipping server and the worker's task queue. */
  readonly lbaas: LbaasClient;
}

/**
 * Registers the file's `before` and `after`: a time-skipping server of the file's own, a worker on it whose only
 * activities are `engine`'s, and the client library on both; stopped after the last test.
 */
export function fastStack(engine: FakeEngine): FastStack {
  let s: { ts: TimeSkippingServer; worker: Awaited<ReturnType<typeof runFastWorker>>; lbaas: LbaasClient } | null = null;
  let ts: TimeSkippingServer | undefined;
  let worker: Awaited<ReturnType<typeof runFastWorker>> | undefined;
  const get = () => {
    if (!s) throw new Error('fastStack: used before its before() hook ran');
    return s;
  };
  before(async () => {
    ts = await startTimeSkippingServer();
    worker = await runFastWorker(ts, engine.activities());
    s = { ts, worker, lbaas: new LbaasClient(ts.env.client, worker.taskQueue) };
  });
  after(async () => {
    await worker?.stop();
    await ts?.stop();
  });
  return {
    get ts() {
      return get().ts;
    },
    get taskQueue() {
      return get().worker.taskQueue;
    },
    get lbaas() {
      return get().lbaas;
    },
  };
}

/** A running worker for a whole test file; `stop` shuts it down and fails if it had failed. */
export async function runFastWorker(ts: TimeSkippingServer, activities: object): Promise<{ taskQueue: string; stop(): Promise<void> }> {
  const { worker, taskQueue } = await fastWorker(ts, activities);
  const running = worker.run();
  await warmUp(ts, taskQueue);
  return {
    taskQueue,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
    },
  };
}

/**
 * Runs one workflow task on the worker before the tests: its first task builds the workflow sandbox from the bundle,
 * which takes seconds on a busy machine, and a first task that outlives its 10 s timeout on the test server fails
 * the update that started the workflow (as UNKNOWN) instead of retrying the task. A pool started with a bad name
 * fails in its first task; its task timeout is long enough for any machine.
 */
async function warmUp(ts: TimeSkippingServer, taskQueue: string): Promise<void> {
  const handle = await ts.env.client.workflow.start(workflowTypes.serverPool, { taskQueue, workflowId: `warm-up-${randomUUID()}`, args: [{ v: 2, name: '' }], workflowTaskTimeout: '5m' });
  try {
    await handle.result();
    throw new Error('the warm-up workflow was expected to fail on its bad input');
  } catch (err) {
    if (!(err instanceof WorkflowFailedError)) throw err;
  }
}
