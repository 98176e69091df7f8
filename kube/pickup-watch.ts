/**
 * What `lbaas kube` says while a Service waits on a workflow that no worker picks up (client/pickup.ts): the controller
 * tells it "this key waits on that workflow" and "done"; it checks the waiting ones every PICKUP_CHECK_MS and, once a
 * task has waited PICKUP_REPORT_AFTER_MS, logs the diagnosis with its fix, records a Warning Event on the Service,
 * counts it in `lbaas_kube_workflows_not_picked_up{reason}` and makes /readyz answer 503 with it; then again every
 * PICKUP_REPEAT_MS while it lasts. A Service whose pass simply takes long (its tasks are taken) is not reported.
 */
import type { Client } from '@temporalio/client';
import { BLOCKING_REASONS, diagnosePickup, PICKUP_CHECK_MS, PICKUP_REPEAT_MS, PICKUP_REPORT_AFTER_MS, type PickupDiagnosis, type PickupReason } from '../client/pickup';
import type { KubeService } from './objects';

/** The Event reason on a Service whose workflow is not picked up. */
export const NOT_PICKED_UP_REASON = 'WorkflowNotPickedUp';
/**
 * Waiting keys diagnosed per check at most (oldest check first): each costs a few describes, and a cluster applying
 * thousands of Services at once must not turn the check into a flood. A problem of the whole task queue shows on the
 * first ones checked.
 */
const MAX_PER_CHECK = 25;
/**
 * Waits diagnosed per check while no wait is known to be blocked (nothing found, or only busy workers): a backlog drains
 * by itself, and asking about 25 Services' workflows (a describe of each controller and its children) every check to
 * learn it again cost the Temporal server the workers wait for about 1,000 describes while 300 Services were applied
 * at once (`npm run bench -- --kube --services 300`), 190 at 5. A problem of the whole task queue still shows on the
 * first ones checked; once one is found, the next checks go through MAX_PER_CHECK again, so every Service gets its
 * Warning soon.
 */
const MAX_PER_QUIET_CHECK = 5;
export const PICKUP_REASONS: readonly PickupReason[] = ['no-worker', 'no-current-version', 'version-not-polled', 'workers-busy'];

export interface Waiting {
  /** The workflow waited on: a Service's controller, the node pool's, a discovery run. */
  workflowId?: string;
  /**
   * Instead of a workflow: the key of another wait this one is behind (a Service waiting for the node pool or the
   * first discovery). It shares that wait's diagnosis, gets its own Event, and ends when that wait is done.
   */
  behind?: string;
  /** The Service that gets the Warning Event; none for the node pool. */
  service?: KubeService;
  /** For the log: `revision 3 of service <uid>`. */
  what: string;
}

interface Entry extends Waiting {
  since: number;
  checkedAt: number;
  reportedAt: number;
  diagnosis: PickupDiagnosis | null;
}

export interface PickupWatchOptions {
  client: Pick<Client, 'workflowService'>;
  namespace: string;
  taskQueue: string;
  log: (line: string) => void;
  event: (svc: KubeService, type: 'Warning', reason: string, message: string) => Promise<void>;
  checkMs?: number;
  reportAfterMs?: number;
  repeatMs?: number;
}

export class KubePickupWatch {
  readonly #waiting = new Map<string, Entry>();
  #timer: NodeJS.Timeout | undefined;
  #stopped = true;

  constructor(readonly o: PickupWatchOptions) {}

  /** `key` (a Service key, or the node pool's) now waits on `w.workflowId`; replaces what it waited on before. */
  waiting(key: string, w: Waiting, now = Date.now()): void {
    const before = this.#waiting.get(key);
    const same = before !== undefined && before.workflowId === w.workflowId && before.behind === w.behind;
    this.#waiting.set(key, { ...w, since: same ? before.since : now, checkedAt: 0, reportedAt: same ? before.reportedAt : 0, diagnosis: same ? before.diagnosis : null });
  }

  /**
   * `key` no longer waits. What waited behind it ends too when it `succeeded` (the node pool's first sync and a
   * discovery queue every Service again); after a failure it stays, for the next attempt to take over.
   */
  done(key: string, succeeded = true): void {
    const e = this.#waiting.get(key);
    this.#waiting.delete(key);
    if (e?.diagnosis) this.o.log(`${key}: ${e.what}: its workflow was picked up or the wait ended`);
    if (succeeded) for (const [k, other] of this.#waiting) if (other.behind === key) this.#waiting.delete(k);
  }

  /** `run` while `key` waits on `w`: done when it settles (kept behind on failure, as done() says). */
  async during<T>(key: string, w: Waiting, run: () => Promise<T>): Promise<T> {
    this.waiting(key, w);
    try {
      const v = await run();
      this.done(key);
      return v;
    } catch (err) {
      this.done(key, false);
      throw err;
    }
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    const loop = async () => {
      await this.check();
      if (!this.#stopped) this.#timer = setTimeout(() => void loop(), this.o.checkMs ?? PICKUP_CHECK_MS).unref();
    };
    this.#timer = setTimeout(() => void loop(), this.o.checkMs ?? PICKUP_CHECK_MS).unref();
  }

  /** Stops checking and forgets every wait (leadership ended). */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#waiting.clear();
  }

  /** Keys waiting, and per reason how many wait on a workflow not picked up (for the metrics). */
  counts(): { waiting: number; notPickedUp: Record<PickupReason, number> } {
    const notPickedUp = Object.fromEntries(PICKUP_REASONS.map((r) => [r, 0])) as Record<PickupReason, number>;
    for (const e of this.#waiting.values()) if (e.diagnosis) notPickedUp[e.diagnosis.reason]++;
    return { waiting: this.#waiting.size, notPickedUp };
  }

  /** Null, or one line for /readyz: what nothing can pick up, and the fix. */
  blocking(): string | null {
    const blocked = [...this.#waiting.entries()].filter(([, e]) => e.diagnosis && BLOCKING_REASONS.includes(e.diagnosis.reason));
    const first = blocked[0];
    if (!first) return null;
    const [key, e] = first;
    return `workflows not picked up (${blocked.length} waiting): ${key}: ${(e.diagnosis as PickupDiagnosis).message}`;
  }

  /** One round of checks (the timer's; tests call it directly). */
  async check(now = Date.now()): Promise<void> {
    const reportAfter = this.o.reportAfterMs ?? PICKUP_REPORT_AFTER_MS;
    // The waits of workflows first, then those behind them, which take their diagnosis.
    const entries = [...this.#waiting.entries()].filter(([, e]) => now - e.since >= reportAfter);
    const perCheck = this.blocking() === null ? MAX_PER_QUIET_CHECK : MAX_PER_CHECK;
    const own = entries.filter(([, e]) => e.workflowId !== undefined).sort(([, a], [, b]) => a.checkedAt - b.checkedAt).slice(0, perCheck);
    const behind = entries.filter(([, e]) => e.behind !== undefined);
    const client = { workflowService: askedOncePerRound(this.o.client.workflowService) };
    for (const [key, e] of [...own, ...behind]) {
      let d: PickupDiagnosis | null;
      if (e.behind !== undefined) {
        // Between two attempts of what it waits behind there is nothing new to say.
        const ahead = this.#waiting.get(e.behind);
        if (!ahead) continue;
        d = ahead.diagnosis;
      } else {
        try {
          d = await diagnosePickup(client, { namespace: this.o.namespace, taskQueue: this.o.taskQueue, workflowId: e.workflowId as string, minWaitMs: reportAfter, now });
        } catch (err) {
          this.o.log(`${key}: could not tell whether ${e.workflowId} is picked up: ${(err as Error).message}`);
          continue;
        }
      }
      // The wait may have ended while the server answered.
      if (this.#waiting.get(key) !== e) continue;
      e.checkedAt = now;
      const had = e.diagnosis;
      e.diagnosis = d;
      if (!d) {
        if (had) this.o.log(`${key}: ${e.what}: its workflow was picked up`);
        continue;
      }
      if (had && now - e.reportedAt < (this.o.repeatMs ?? PICKUP_REPEAT_MS)) continue;
      e.reportedAt = now;
      this.o.log(`${key}: ${e.what}: ${d.message}`);
      // Busy workers are a backlog that drains by itself: logged and counted, but no Warning on the Service (a
      // thousand Services created at once made about 1,400 such Events while the workers caught up).
      if (e.service && BLOCKING_REASONS.includes(d.reason)) await this.o.event(e.service, 'Warning', NOT_PICKED_UP_REASON, d.message);
    }
  }
}

type WorkflowService = Client['workflowService'];

/**
 * The workflow service for one round of checks, answering each task queue and Worker Deployment question once: every
 * wait checked in a round asks about the same task queue and Deployment, and with a thousand Services waiting on busy
 * workers a round asked up to 25 times each (describeWorkerDeployment the server answers by querying a workflow of
 * its own). Workflows are still described one by one; the next round asks everything again.
 */
export function askedOncePerRound(service: WorkflowService): WorkflowService {
  const answers = new Map<string, Promise<unknown>>();
  const once = <R>(method: string, req: unknown, ask: () => Promise<R>): Promise<R> => {
    const key = `${method} ${JSON.stringify(req)}`;
    let answer = answers.get(key) as Promise<R> | undefined;
    if (!answer) {
      answer = ask();
      answers.set(key, answer);
    }
    return answer;
  };
  const shared: Record<string, (req: never) => Promise<unknown>> = {
    describeTaskQueue: (req: Parameters<WorkflowService['describeTaskQueue']>[0]) => once('describeTaskQueue', req, () => service.describeTaskQueue(req)),
    describeWorkerDeployment: (req: Parameters<WorkflowService['describeWorkerDeployment']>[0]) => once('describeWorkerDeployment', req, () => service.describeWorkerDeployment(req)),
  };
  return new Proxy(service, { get: (target, prop, receiver) => (typeof prop === 'string' && Object.hasOwn(shared, prop) ? shared[prop] : Reflect.get(target, prop, receiver)) });
}
