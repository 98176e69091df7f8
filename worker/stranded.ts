/**
 * Stranded runs (docs/architecture.md#stranded-runs). A PINNED run is served only by workers of the Version it is
 * pinned to; when every worker of that Version is gone (a Kubernetes rolling update kills the old pods at once), its
 * tasks wait in the task queue for good. Workers of the Deployment's Current Version sweep for such runs every 30 s
 * (jittered, so that several workers do not ask at the same moment; the sweep is idempotent, so several of them doing
 * it is harmless):
 *
 * 1. Only a worker whose Version is current sweeps (DescribeWorkerDeployment): the current build is the one the
 *    replacement runs start on.
 * 2. One visibility list: running PINNED runs of this task queue and Deployment pinned to another Version. Nothing
 *    listed (the common case) ends the sweep.
 * 3. Whether anything still polls each such Version: DescribeTaskQueue (workflow and activity queues) lists every
 *    poller with its Version and the time of its last poll. A live worker polls again at least every ~60 s even when
 *    idle (its long poll ends empty after about a minute); a killed one's time stops. A Version is dead when its last
 *    poll is older than `deadAfterMs` (default 90 s), or, when the server lists no poller of it at all (the list is
 *    not persisted), when this sweeper has seen it unlisted for that long.
 * 4. A pass pinned to a dead Version is terminated, children before parents, with a reason naming the build. Its
 *    controller (AUTO_UPGRADE, already on the current build) sees the child terminated and starts a fresh pass at
 *    once, which adopts what the stranded one created (objects are created-and-tagged, never untagged). A stranded
 *    fullResync, importServices or discoverCluster is run again by its Schedule or its operator; a VIP allocation or
 *    release by lbaas kube's next sync of that Service.
 * 5. An entity (serviceController, serverPool) pinned to a dead Version is reset to its first workflow task, with
 *    its signals and updates re-applied and a versioning override pinning the new run to the current build: the new
 *    run replays only its start event (the continue-as-new input) and those messages with the current code, never
 *    the dead build's history. Entities are PINNED and move to a new build by continue-as-new, which needs a task on
 *    their own build: this is for those whose build died before they moved.
 *
 * Every action is logged and counted (`lbaas_stranded_runs_total`, docs/spec.md#metrics).
 */
import type { Client } from '@temporalio/client';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { workflowTypes, VISIBILITY_PAGE_SIZE } from '../contract';
import { DEFAULT_DEAD_AFTER_MS, STRANDED_SWEEP_MS } from '../common/pollers';
import { versionText } from './versioning';

/** Below this a live but idle build could be taken for dead (see DEFAULT_DEAD_AFTER_MS). */
export const MIN_DEAD_AFTER_MS = 75_000;
/** Runs handled per sweep at most; the rest wait for the next sweep. */
const MAX_RUNS_PER_SWEEP = 1_000;
/** Terminations and resets in flight at once. */
const CONCURRENCY = 8;

/**
 * Passes, children before their parents: a fresh parent's child of the same id would otherwise wait for the stranded
 * child (reconcile-service.ts waits for a running child of its id). A pass a controller started is started again by
 * the controller; the others by their Schedule or operator.
 */
export const PASS_TYPES: readonly string[] = [
  workflowTypes.reconcileLoadBalancer,
  workflowTypes.reconcilePoolDelta,
  workflowTypes.planService,
  workflowTypes.reconcileService,
  workflowTypes.importServices,
  workflowTypes.discoverCluster,
  workflowTypes.allocateServiceVips,
  workflowTypes.releaseServiceVips,
  workflowTypes.fullResync,
];
/**
 * The long-lived entities, and a pool's delivery round: reset onto the current build instead of ended (their state
 * is in their input). A round ended would leave its revision undelivered to the services it had not reached yet
 * (the pool does not wait for it); reset, it runs again from its input's page (signals carry the revision, so a
 * service signalled twice takes it once).
 */
export const ENTITY_TYPES: readonly string[] = [workflowTypes.serviceController, workflowTypes.serverPool, workflowTypes.poolRound];

const NOT_FOUND = 5;
const WORKFLOW_TASK_COMPLETED = temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED;

export type StrandedAction = 'terminated' | 'reset' | 'failed';

export interface SweeperOptions {
  client: Pick<Client, 'workflow' | 'workflowService'>;
  namespace: string;
  taskQueue: string;
  /** The Version this worker polls as. */
  deployment: WorkerDeploymentVersion;
  deadAfterMs?: number;
  /**
   * Takes deadAfterMs as it is even below MIN_DEAD_AFTER_MS. Only for a test whose other builds' workers it has
   * killed itself (LBAAS_TEST_STRANDED_TIMING, worker/start.ts): with a live idle worker of another build about, so
   * short a time would take that build for dead.
   */
  belowMinimum?: boolean;
  intervalMs?: number;
  log: (level: 'INFO' | 'WARN', line: string) => void;
  /** Called once per run acted on (worker/metrics.ts counts them). */
  onAction?: (workflowType: string, action: StrandedAction) => void;
  /** Told at every sweep whether this worker's Version is current (worker/wake.ts wakes the entities when it is). */
  onCurrent?: (current: boolean) => void;
  now?: () => number;
}

export interface StrandedRun {
  workflowId: string;
  runId: string;
  type: string;
  /** `lbaas:<build id>`, as the TemporalWorkerDeploymentVersion search attribute writes it. */
  version: string;
}

export interface SweepReport {
  /** Why nothing was looked at ('not current': this worker's Version is not the Current Version). */
  skipped?: 'not current' | 'unsafe name';
  /** Visibility and other API calls the sweep made. */
  calls: { visibility: number; describe: number; actions: number };
  listed: number;
  /** Versions (search attribute form) found dead, with the time of their last poll (null: none listed). */
  dead: Record<string, number | null>;
  acted: { run: StrandedRun; action: StrandedAction; detail: string }[];
}

/** Last poll of each build of `deploymentName` among the pollers, in ms since the epoch. */
export function lastPolls(pollers: readonly temporal.api.taskqueue.v1.IPollerInfo[], deploymentName: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const p of pollers) {
    const o = p.deploymentOptions;
    if (!o?.buildId || o.deploymentName !== deploymentName || !p.lastAccessTime) continue;
    const at = Number(p.lastAccessTime.seconds ?? 0) * 1000 + Math.floor((p.lastAccessTime.nanos ?? 0) / 1e6);
    out.set(o.buildId, Math.max(out.get(o.buildId) ?? 0, at));
  }
  return out;
}

/**
 * Whether a Version is dead: listed with a last poll older than `deadAfterMs`, or unlisted since at least that long
 * ago by the sweeper's own observation (`unlistedSince`). `since` says from when nothing polled (null: unknown).
 */
export function judgeVersion(o: { lastPoll: number | undefined; unlistedSince: number | undefined; now: number; deadAfterMs: number }): { dead: boolean; since: number | null } {
  if (o.lastPoll !== undefined) return { dead: o.now - o.lastPoll > o.deadAfterMs, since: o.lastPoll };
  return { dead: o.unlistedSince !== undefined && o.now - o.unlistedSince >= o.deadAfterMs, since: null };
}

/** `lbaas:<build>` → the build id; the part after the Deployment name and its colon. */
function buildOf(searchValue: string, deploymentName: string): string {
  return searchValue.startsWith(`${deploymentName}:`) ? searchValue.slice(deploymentName.length + 1) : searchValue;
}

/** Names that can be written into a visibility query between single quotes as they are. */
const SAFE_NAME = /^[^'"\\]+$/;

export class StrandedRunSweeper {
  readonly #o: SweeperOptions;
  readonly #deadAfterMs: number;
  readonly #now: () => number;
  /** When the sweeper first saw a Version with pinned runs but no poller listed at all. */
  readonly #unlistedSince = new Map<string, number>();
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<unknown> | null = null;
  #stopped = false;
  #warnedUnsafe = false;

  constructor(o: SweeperOptions) {
    this.#o = o;
    const deadAfterMs = o.deadAfterMs ?? DEFAULT_DEAD_AFTER_MS;
    this.#deadAfterMs = o.belowMinimum ? deadAfterMs : Math.max(MIN_DEAD_AFTER_MS, deadAfterMs);
    this.#now = o.now ?? Date.now;
  }

  /** Sweeps every interval (jittered) until stop(); a failed sweep is logged and the next one runs as usual. */
  start(): void {
    const interval = this.#o.intervalMs ?? STRANDED_SWEEP_MS;
    const next = () => {
      if (this.#stopped) return;
      this.#timer = setTimeout(() => {
        this.#running = this.sweep()
          .catch((err: unknown) => this.#o.log('WARN', `lbaas worker: stranded-run sweep failed (retried in ${Math.round(interval / 1000)} s): ${(err as Error).message}`))
          .finally(() => {
            this.#running = null;
            next();
          });
      }, interval * (0.8 + 0.4 * Math.random()));
      this.#timer.unref();
    };
    next();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#running;
  }

  /** One sweep (what start() runs each interval). */
  async sweep(): Promise<SweepReport> {
    const { client, namespace, taskQueue, deployment } = this.#o;
    const service = client.workflowService;
    const report: SweepReport = { calls: { visibility: 0, describe: 0, actions: 0 }, listed: 0, dead: {}, acted: [] };
    if (![taskQueue, deployment.deploymentName, deployment.buildId].every((n) => SAFE_NAME.test(n))) {
      if (!this.#warnedUnsafe) this.#o.log('WARN', `lbaas worker: stranded runs are not swept: the task queue or Version contains a quote or backslash (${taskQueue}, ${versionText(deployment)})`);
      this.#warnedUnsafe = true;
      return { ...report, skipped: 'unsafe name' };
    }
    report.calls.describe++;
    const d = await service.describeWorkerDeployment({ namespace, deploymentName: deployment.deploymentName }).catch((err: { code?: number }) => {
      if (err.code === NOT_FOUND) return null;
      throw err;
    });
    const isCurrent = d?.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId === deployment.buildId;
    this.#o.onCurrent?.(isCurrent);
    if (!isCurrent) return { ...report, skipped: 'not current' };

    const current = `${deployment.deploymentName}:${deployment.buildId}`;
    const query =
      `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running' AND TemporalWorkflowVersioningBehavior = 'Pinned'` +
      ` AND TemporalWorkerDeployment = '${deployment.deploymentName}' AND TemporalWorkerDeploymentVersion != '${current}'`;
    const runs: StrandedRun[] = [];
    report.calls.visibility++;
    for await (const w of client.workflow.list({ query, pageSize: VISIBILITY_PAGE_SIZE })) {
      const version = w.searchAttributes.TemporalWorkerDeploymentVersion?.[0];
      if (typeof version === 'string' && version !== current) runs.push({ workflowId: w.workflowId, runId: w.runId, type: w.type, version });
      if (runs.length >= MAX_RUNS_PER_SWEEP) break;
    }
    report.listed = runs.length;
    const versions = new Set(runs.map((r) => r.version));
    for (const v of this.#unlistedSince.keys()) if (!versions.has(v)) this.#unlistedSince.delete(v);
    if (runs.length === 0) return report;

    // Pollers of both queues: a worker whose workflow slots are all busy still polls for activities, and the reverse.
    const polls = new Map<string, number>();
    for (const taskQueueType of [temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY]) {
      report.calls.describe++;
      const tq = await service.describeTaskQueue({ namespace, taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL }, taskQueueType });
      for (const [build, at] of lastPolls(tq.pollers ?? [], deployment.deploymentName)) polls.set(build, Math.max(polls.get(build) ?? 0, at));
    }
    const now = this.#now();
    const dead = new Map<string, number | null>();
    for (const v of versions) {
      const lastPoll = polls.get(buildOf(v, deployment.deploymentName));
      if (lastPoll === undefined && !this.#unlistedSince.has(v)) this.#unlistedSince.set(v, now);
      if (lastPoll !== undefined) this.#unlistedSince.delete(v);
      const j = judgeVersion({ lastPoll, unlistedSince: this.#unlistedSince.get(v), now, deadAfterMs: this.#deadAfterMs });
      if (j.dead) dead.set(v, j.since);
    }
    report.dead = Object.fromEntries(dead);
    const order = (t: string) => (PASS_TYPES.includes(t) ? PASS_TYPES.indexOf(t) : PASS_TYPES.length);
    const todo = runs.filter((r) => dead.has(r.version)).sort((a, b) => order(a.type) - order(b.type));
    // Children before parents: each type's runs finish before the next type's begin.
    for (const type of [...new Set(todo.map((r) => r.type))]) {
      const ofType = todo.filter((r) => r.type === type);
      for (let i = 0; i < ofType.length; i += CONCURRENCY) {
        await Promise.all(ofType.slice(i, i + CONCURRENCY).map((run) => this.#act(run, dead.get(run.version) ?? null, report)));
      }
    }
    return report;
  }

  async #act(run: StrandedRun, since: number | null, report: SweepReport): Promise<void> {
    const { deploymentName } = this.#o.deployment;
    const deadBuild = `${deploymentName}.${buildOf(run.version, deploymentName)}`;
    const reason = `stranded on build ${deadBuild}: ${since === null ? `no worker of it has polled for over ${Math.round(this.#deadAfterMs / 1000)} s` : `no worker has polled it since ${new Date(since).toISOString()}`}`;
    const record = (action: StrandedAction, detail: string) => {
      report.acted.push({ run, action, detail });
      this.#o.onAction?.(run.type, action);
      this.#o.log(action === 'failed' ? 'WARN' : 'INFO', `lbaas worker: ${run.type} ${run.workflowId} (run ${run.runId}) ${detail}`);
    };
    try {
      report.calls.actions++;
      if (PASS_TYPES.includes(run.type)) {
        await this.#o.client.workflow.getHandle(run.workflowId, run.runId).terminate(reason);
        record('terminated', `terminated: ${reason}`);
      } else if (ENTITY_TYPES.includes(run.type)) {
        const newRun = await this.#resetOntoCurrent(run, reason, report);
        record('reset', `reset onto ${versionText(this.#o.deployment)} as run ${newRun}: ${reason}`);
      } else {
        record('failed', `left alone: ${reason}, and the sweeper knows no fresh start for a ${run.type}`);
      }
    } catch (err) {
      const e = err as { code?: number; name?: string; message?: string };
      // Another sweeper (or the run itself) ended it first: nothing to do, nothing to count.
      if (e.code === NOT_FOUND || e.name === 'WorkflowNotFoundError') return;
      record('failed', `could not be moved off ${deadBuild}: ${e.message ?? String(err)}`);
    }
  }

  /**
   * Resets an entity's run to its first workflow task onto the current build. The request id is the stranded run's
   * own, so that two sweepers resetting it at once make one new run.
   */
  async #resetOntoCurrent(run: StrandedRun, reason: string, report: SweepReport): Promise<string> {
    const { client, namespace, deployment } = this.#o;
    report.calls.describe++;
    const first = await client.workflowService.getWorkflowExecutionHistory({ namespace, execution: { workflowId: run.workflowId, runId: run.runId }, maximumPageSize: 20 });
    const task = (first.history?.events ?? []).find((e) => e.eventType === WORKFLOW_TASK_COMPLETED);
    if (!task?.eventId) throw new Error('its first workflow task has not completed (nothing to reset to)');
    const r = await client.workflowService.resetWorkflowExecution({
      namespace,
      workflowExecution: { workflowId: run.workflowId, runId: run.runId },
      reason,
      requestId: `lbaas-stranded-reset-${run.runId}`,
      workflowTaskFinishEventId: task.eventId,
      resetReapplyType: temporal.api.enums.v1.ResetReapplyType.RESET_REAPPLY_TYPE_ALL_ELIGIBLE,
      postResetOperations: [
        {
          updateWorkflowOptions: {
            workflowExecutionOptions: {
              versioningOverride: {
                pinned: { behavior: temporal.api.workflow.v1.VersioningOverride.PinnedOverrideBehavior.PINNED_OVERRIDE_BEHAVIOR_PINNED, version: { ...deployment } },
              },
            },
            updateMask: { paths: ['versioning_override'] },
          },
        },
      ],
    });
    return r.runId ?? '(unknown)';
  }
}
