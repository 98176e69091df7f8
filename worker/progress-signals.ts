/**
 * Per-object progress of realizeObjects groups (activities/realize.ts), sent to the group's own workflow run as
 * `objectsProgress` signals (workflows/realize-progress.ts), so that its `status` query, `apply --wait` progress and the
 * Web UI show each member's identifier and state while the group still runs. A workflow knows only what its history
 * holds: it cannot read a running activity's heartbeat details, and the activity's result comes when the whole group
 * is done.
 *
 * Why few signals: each one costs the workflow a history event and, unless it arrives with other work, a workflow
 * task (three more events), and it is an action on a Temporal Cloud bill. So a creation waits PROGRESS_DELAY_MS, and
 * every change of the same workflow run within that window (the groups of one round start together) goes out in one
 * signal; a change whose activity returned first is not sent at all (the result carries every member), so a group
 * that deploys within the window costs no signal. A member's deploy ending causes no signal of its own (it rides
 * along with the next creation's, or arrives with its group's result), unless the workflow waits on it: an announced
 * member (a Backend whose Frontend and Servers are to be created, RealizeObjectsInput.announce) is signalled at once,
 * with whatever else is queued for the run, because its children start on it. Creations are what the workflow could
 * not know for a whole group's deploy (identifiers, for its status and its known set); any other finished deploy it
 * learns at most the group's spread of deploy times later. Measured on the core workload (creations only vs every
 * change): docs/benchmarks.md.
 */
import type { Client } from '@temporalio/client';
import type { GroupReports, MemberProgress, ProgressSink } from '../activities/realize';
import { objectsProgressSignal, type ObjectsProgress } from '../contract';

/**
 * How long a change waits to be coalesced with others before it is signalled. `apply --wait` asks for progress once
 * a second (PROGRESS_EVERY_MS in cli/wait.ts), so a second's delay shows a change at most about one progress line
 * later, while groups that deploy within a second (and the Engine's quick answers) cost no signal.
 */
export const PROGRESS_DELAY_MS = 1_000;

export interface WorkflowRun {
  workflowId: string;
  runId: string;
}

type Send = (run: WorkflowRun, progress: ObjectsProgress) => Promise<void>;

interface Queued {
  run: WorkflowRun;
  pass: number;
  objects: Map<string, MemberProgress>;
  /** Set by the first creation queued; settled deploys alone wait for one (or for their group's result). */
  timer: NodeJS.Timeout | null;
}

export class ProgressSignals implements ProgressSink {
  readonly #queued = new Map<string, Queued>();

  constructor(
    private readonly send: Send,
    private readonly delayMs: number = PROGRESS_DELAY_MS,
  ) {}

  /** Signals through `client`; a run that has ended meanwhile has nobody to tell, so a failed signal is dropped. */
  static viaClient(client: Client, delayMs?: number): ProgressSignals {
    return new ProgressSignals((run, progress) => client.workflow.getHandle(run.workflowId, run.runId).signal(objectsProgressSignal, progress), delayMs);
  }

  open(run: WorkflowRun, pass: number): GroupReports {
    const mine = new Set<string>();
    return {
      report: (m) => {
        mine.add(m.key);
        this.#queue(run, pass, m);
      },
      delivered: () => this.#drop(run, pass, mine),
    };
  }

  /** Changes waiting to be signalled, by run id (for tests). */
  waiting(): Record<string, ObjectsProgress> {
    return Object.fromEntries([...this.#queued].map(([runId, q]) => [runId, progressOf(q)]));
  }

  #queue(run: WorkflowRun, pass: number, m: MemberProgress): void {
    let q = this.#queued.get(run.runId);
    // A report of a newer round makes the older one's stale (the workflow ignores other rounds anyway).
    if (q && q.pass !== pass) {
      if (q.timer) clearTimeout(q.timer);
      this.#queued.delete(run.runId);
      q = undefined;
    }
    if (!q) {
      q = { run, pass, objects: new Map(), timer: null };
      this.#queued.set(run.runId, q);
    }
    q.objects.set(m.key, m);
    // The workflow waits on this deploy to start the member's children: now, with whatever else is queued for the run.
    if (m.announced) {
      if (q.timer) clearTimeout(q.timer);
      this.#flush(run.runId, q);
      return;
    }
    if (!m.settled && !q.timer) {
      const queued = q;
      q.timer = setTimeout(() => this.#flush(run.runId, queued), this.delayMs);
      q.timer.unref();
    }
  }

  #drop(run: WorkflowRun, pass: number, keys: Set<string>): void {
    const q = this.#queued.get(run.runId);
    if (!q || q.pass !== pass) return;
    for (const key of keys) q.objects.delete(key);
    if (q.objects.size === 0) {
      if (q.timer) clearTimeout(q.timer);
      this.#queued.delete(run.runId);
    }
  }

  #flush(runId: string, q: Queued): void {
    if (this.#queued.get(runId) !== q) return;
    this.#queued.delete(runId);
    if (q.objects.size === 0) return;
    this.send(q.run, progressOf(q)).catch(() => {});
  }
}

function progressOf(q: Queued): ObjectsProgress {
  const objects = [...q.objects.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { pass: q.pass, objects: objects.map(({ key, identifier, state }) => ({ key, identifier, state })) };
}
