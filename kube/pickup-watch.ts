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
export const PICKUP_REASONS: readonly PickupReason[] = ['no-worker', 'no-current-version', 'version-not-polled', 'workers-busy'];

export interface Waiting {
  /** The workflow waited on: a Service's controller, or the node pool. */
  workflowId: string;
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
    const same = before?.workflowId === w.workflowId;
    this.#waiting.set(key, { ...w, since: same ? before.since : now, checkedAt: 0, reportedAt: same ? before.reportedAt : 0, diagnosis: same ? before.diagnosis : null });
  }

  /** `key` no longer waits (its wait ended, whichever way). */
  done(key: string): void {
    const e = this.#waiting.get(key);
    this.#waiting.delete(key);
    if (e?.diagnosis) this.o.log(`${key}: ${e.what}: its workflow was picked up or the wait ended`);
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
    const due = [...this.#waiting.entries()].filter(([, e]) => now - e.since >= reportAfter).sort(([, a], [, b]) => a.checkedAt - b.checkedAt).slice(0, MAX_PER_CHECK);
    for (const [key, e] of due) {
      let d: PickupDiagnosis | null;
      try {
        d = await diagnosePickup(this.o.client, { namespace: this.o.namespace, taskQueue: this.o.taskQueue, workflowId: e.workflowId, minWaitMs: reportAfter, now });
      } catch (err) {
        this.o.log(`${key}: could not tell whether ${e.workflowId} is picked up: ${(err as Error).message}`);
        continue;
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
      if (e.service) await this.o.event(e.service, 'Warning', NOT_PICKED_UP_REASON, d.message);
    }
  }
}
