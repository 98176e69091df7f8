/**
 * Why a workflow's task is not picked up. Temporal queues a workflow task until a worker of the right Version polls
 * for it, and says nothing to the client meanwhile: an `lbaas apply --wait` or a Service in `lbaas kube` would wait
 * in silence. diagnosePickup reads what the server knows (the workflow's pending task and versioning info, the task
 * queue's pollers with their Versions, the Worker Deployment's Current Version) and names what is missing and the
 * fix. It follows the workflow's pending children (a controller waits on its pass, the pass on its load balancers),
 * and looks at activity tasks as well as workflow tasks. PickupWatch repeats it for as long as a caller waits.
 *
 * Measured on Temporal 1.29.1 (the dev server of CLI 1.5.1): a workflow started with no worker, or with only workers
 * of Versions that are not current, shows `pendingWorkflowTask` in state SCHEDULED and no `versioningInfo`; the
 * Deployment's routing config says `currentVersion: "__unversioned__"` and has no `currentDeploymentVersion` until a
 * Version is made current; a Deployment no worker ever polled is NOT_FOUND. Pollers stay listed for minutes after a
 * worker is gone, so a poller counts as live only while its last poll is recent (LIVE_POLLER_MS). The same holds on
 * Temporal 1.32.2 (test/workflow/pickup.test.ts runs on it), which also refuses to pin a run to a Version its task
 * queue has never seen.
 */
import type { Client } from '@temporalio/client';
import { DEFAULT_TASK_QUEUE } from '../common/settings';
import { DEFAULT_DEAD_AFTER_MS, isLivePoller, STRANDED_SWEEP_MS, LIVE_POLLER_MS, timestampMs } from '../common/pollers';

/**
 * What keeps a task from being picked up:
 * - `no-worker`: no worker polls the task queue;
 * - `no-current-version`: workers poll, all as Versions of a Worker Deployment, and none of those is current, so new
 *   and AUTO_UPGRADE workflows go nowhere;
 * - `version-not-polled`: the task belongs to one Version (the run is pinned to it, or it is the Current Version) and
 *   no worker of that Version polls, while others do;
 * - `workers-busy`: workers of the right Version poll, yet the task has not started (busy workers, a backlog).
 */
export type PickupReason = 'no-worker' | 'no-current-version' | 'version-not-polled' | 'workers-busy';

/** Reasons under which nothing can pick the task up until the operator acts (workers-busy may resolve by itself). */
export const BLOCKING_REASONS: readonly PickupReason[] = ['no-worker', 'no-current-version', 'version-not-polled'];

export interface PickupDiagnosis {
  reason: PickupReason;
  /** The workflow whose task waits: the one asked about, or one of its pending children. */
  workflowId: string;
  runId: string;
  /** Workflow task or activity task. */
  task: 'workflow' | 'activity';
  taskQueue: string;
  /** How long the task has waited (since it was first scheduled; for an activity, since its current attempt was due). */
  waitingMs: number;
  /** The Version the task is for, when it is for one (a pinned run's, or the Current Version). */
  version: { deploymentName: string; buildId: string } | null;
  /** True when the run is pinned to `version` (it will not move to another build by itself). */
  pinned: boolean;
  /** Build ids of the Deployment's Versions whose workers poll the task queue now, sorted. */
  pollingBuilds: string[];
  /**
   * For a run pinned to a build nobody polls: the Current Version when its workers poll. `lbaas worker` of that Version
   * takes such a run over once its build has not polled for a while (worker/stranded.ts), so the wait ends by itself.
   */
  currentPolling?: { deploymentName: string; buildId: string };
  /** How long ago the latest live poll reached the server (null: no live poller). */
  lastPollAgoMs: number | null;
  /** What to do, as a command or an action. */
  fix: string;
  /** One line: what waits, since when, why, and the fix. */
  message: string;
}

export interface PickupQuery {
  namespace: string;
  /** The task queue the workflow was started on; each workflow's own (from the server) is used when known. */
  taskQueue: string;
  workflowId: string;
  runId?: string;
  /** Tasks that have waited less than this are not reported. Default 0. */
  minWaitMs?: number;
  /** Pending children are followed this deep. Default 3 (controller, pass, load balancer). */
  depth?: number;
  /** For tests: the current time. */
  now?: number;
}

type Service = Pick<Client, 'workflowService'>['workflowService'];
/** Anything with Temporal's WorkflowService: a Client, or a Connection's `workflowService` wrapped as `{ workflowService }`. */
export type PickupClient = Pick<Client, 'workflowService'>;
type VersionRef = { deploymentName: string; buildId: string };

export { LIVE_POLLER_MS, timestampMs };

/** Protocol enum values; the client decodes them as numbers, JSON tooling as their names. */
const SCHEDULED_WORKFLOW_TASK = [1, 'PENDING_WORKFLOW_TASK_STATE_SCHEDULED'];
const SCHEDULED_ACTIVITY = [1, 'PENDING_ACTIVITY_STATE_SCHEDULED'];
const PINNED = [1, 'VERSIONING_BEHAVIOR_PINNED'];
const VERSIONED_MODE = [2, 'WORKER_VERSIONING_MODE_VERSIONED'];
const WORKFLOW_QUEUE = 1;
const ACTIVITY_QUEUE = 2;
const GRPC_NOT_FOUND = 5;
/** The Deployment of a worker given none (worker/versioning.ts), for the fix when nothing else names one. */
const DEFAULT_DEPLOYMENT_NAME = 'lbaas';
/** Temporal's name for "no Version": the unversioned workers. */
const UNVERSIONED = '__unversioned__';

/**
 * The first task of `q.workflowId` (or of one of its pending children) that has waited at least `minWaitMs` without a
 * worker taking it, and why; null when every task is taken or too young, or the workflow does not exist or has closed.
 */
export async function diagnosePickup(client: PickupClient, q: PickupQuery): Promise<PickupDiagnosis | null> {
  const service = client.workflowService;
  const now = q.now ?? Date.now();
  const seen = new Set<string>();
  const walk = async (workflowId: string, runId: string | undefined, depth: number): Promise<PickupDiagnosis | null> => {
    if (seen.has(workflowId)) return null;
    seen.add(workflowId);
    let d: Awaited<ReturnType<Service['describeWorkflowExecution']>>;
    try {
      d = await service.describeWorkflowExecution({ namespace: q.namespace, execution: { workflowId, ...(runId ? { runId } : {}) } });
    } catch (err) {
      if ((err as { code?: number }).code === GRPC_NOT_FOUND) return null;
      throw err;
    }
    const info = d.workflowExecutionInfo;
    if (!info || info.closeTime) return null;
    const taskQueue = info.taskQueue || q.taskQueue;
    const run = info.execution?.runId ?? runId ?? '';
    const waiting: { task: 'workflow' | 'activity'; since: number; taskQueue: string }[] = [];
    const wft = d.pendingWorkflowTask;
    if (wft && SCHEDULED_WORKFLOW_TASK.includes(wft.state as never)) {
      const since = timestampMs(wft.originalScheduledTime) ?? timestampMs(wft.scheduledTime);
      if (since !== null) waiting.push({ task: 'workflow', since, taskQueue });
    }
    for (const a of d.pendingActivities ?? []) {
      if (!SCHEDULED_ACTIVITY.includes(a.state as never)) continue;
      // An attempt waiting for its retry is not late until its retry is due.
      const since = timestampMs(a.nextAttemptScheduleTime) ?? timestampMs(a.scheduledTime);
      if (since !== null) waiting.push({ task: 'activity', since, taskQueue: a.activityOptions?.taskQueue?.name || taskQueue });
    }
    const due = waiting.filter((w) => now - w.since >= (q.minWaitMs ?? 0)).sort((a, b) => a.since - b.since);
    for (const w of due) {
      const found = await explain(service, q.namespace, w.taskQueue, info.versioningInfo ?? null, w.task, now);
      if (found.reason === 'workers-busy' && w.task === 'activity') continue; // Rate limits hold activities back by design.
      return finish({ ...found, workflowId, runId: run, task: w.task, taskQueue: w.taskQueue, waitingMs: now - w.since });
    }
    if (depth <= 0) return null;
    for (const child of d.pendingChildren ?? []) {
      if (!child.workflowId) continue;
      const found = await walk(child.workflowId, child.runId || undefined, depth - 1);
      if (found) return found;
    }
    return null;
  };
  return walk(q.workflowId, q.runId, q.depth ?? 3);
}

type VersioningInfo = {
  behavior?: unknown;
  deploymentVersion?: { deploymentName?: string | null; buildId?: string | null } | null;
  version?: string | null;
  versioningOverride?: {
    pinned?: { version?: { deploymentName?: string | null; buildId?: string | null } | null } | null;
    behavior?: unknown;
    pinnedVersion?: string | null;
  } | null;
};

type Explained = Pick<PickupDiagnosis, 'reason' | 'version' | 'pinned' | 'pollingBuilds' | 'lastPollAgoMs' | 'currentPolling'> & { deploymentName: string | null };

function ref(v: { deploymentName?: string | null; buildId?: string | null } | null | undefined): VersionRef | null {
  return v?.deploymentName && v.buildId && v.buildId !== UNVERSIONED ? { deploymentName: v.deploymentName, buildId: v.buildId } : null;
}

/** `lbaas.1.0` (deprecated string form, `<deployment>.<build id>`) as a Version. */
function parseVersion(s: string | null | undefined): VersionRef | null {
  if (!s || s === UNVERSIONED) return null;
  const dot = s.indexOf('.');
  return dot > 0 ? { deploymentName: s.slice(0, dot), buildId: s.slice(dot + 1) } : null;
}

/** The Version a run of this versioning info is pinned to, if any. */
function pinnedVersion(vi: VersioningInfo | null): VersionRef | null {
  const o = vi?.versioningOverride;
  const overridden = ref(o?.pinned?.version) ?? (o && PINNED.includes(o.behavior as never) ? parseVersion(o.pinnedVersion) : null);
  if (overridden) return overridden;
  if (vi && PINNED.includes(vi.behavior as never)) return ref(vi.deploymentVersion) ?? parseVersion(vi.version);
  return null;
}

async function explain(service: Service, namespace: string, taskQueue: string, vi: VersioningInfo | null, task: 'workflow' | 'activity', now: number): Promise<Explained> {
  const r = await service.describeTaskQueue({ namespace, taskQueue: { name: taskQueue }, taskQueueType: task === 'workflow' ? WORKFLOW_QUEUE : ACTIVITY_QUEUE });
  const live = (r.pollers ?? []).filter((p) => isLivePoller(p.lastAccessTime, now));
  const versioned = live.map((p) => (VERSIONED_MODE.includes(p.deploymentOptions?.workerVersioningMode as never) ? ref(p.deploymentOptions) : null));
  const unversioned = versioned.filter((v) => v === null).length;
  const pinned = pinnedVersion(vi);
  const deploymentName = pinned?.deploymentName ?? ref(vi?.deploymentVersion)?.deploymentName ?? versioned.find((v) => v !== null)?.deploymentName ?? null;
  const pollingBuilds = [...new Set(versioned.filter((v): v is VersionRef => v !== null && v.deploymentName === deploymentName).map((v) => v.buildId))].sort();
  const lastPoll = Math.max(...live.map((p) => timestampMs(p.lastAccessTime) ?? now));
  const base = { deploymentName, pollingBuilds, lastPollAgoMs: live.length > 0 ? Math.max(0, now - lastPoll) : null };
  if (pinned) {
    if (pollingBuilds.includes(pinned.buildId)) return { ...base, reason: 'workers-busy', version: pinned, pinned: true };
    if (live.length === 0) return { ...base, reason: 'no-worker', version: pinned, pinned: true };
    const current = await currentVersion({ workflowService: service }, namespace, pinned.deploymentName);
    const currentPolling = current && current.buildId !== pinned.buildId && pollingBuilds.includes(current.buildId) ? { currentPolling: current } : {};
    return { ...base, reason: 'version-not-polled', version: pinned, pinned: true, ...currentPolling };
  }
  if (live.length === 0) return { ...base, reason: 'no-worker', version: null, pinned: false };
  const current = deploymentName ? await currentVersion({ workflowService: service }, namespace, deploymentName) : null;
  if (current === null) {
    // Without a Current Version the tasks go to unversioned workers.
    return { ...base, reason: unversioned > 0 ? 'workers-busy' : 'no-current-version', version: null, pinned: false };
  }
  return { ...base, reason: pollingBuilds.includes(current.buildId) ? 'workers-busy' : 'version-not-polled', version: current, pinned: false };
}

/** The Deployment's Current Version; null when it has none (or does not exist). */
export async function currentVersion(client: PickupClient, namespace: string, deploymentName: string): Promise<VersionRef | null> {
  try {
    const d = await client.workflowService.describeWorkerDeployment({ namespace, deploymentName });
    const rc = d.workerDeploymentInfo?.routingConfig;
    return ref(rc?.currentDeploymentVersion) ?? parseVersion(rc?.currentVersion);
  } catch (err) {
    if ((err as { code?: number }).code === GRPC_NOT_FOUND) return null;
    throw err;
  }
}

const seconds = (ms: number) => `${Math.round(ms / 1000)} s`;

function finish(e: Explained & Pick<PickupDiagnosis, 'workflowId' | 'runId' | 'task' | 'taskQueue' | 'waitingMs'>): PickupDiagnosis {
  const { deploymentName, ...d } = e;
  const deployment = d.version?.deploymentName ?? deploymentName ?? DEFAULT_DEPLOYMENT_NAME;
  const setCurrent = (build: string) => `temporal worker deployment set-current-version --deployment-name ${deployment} --build-id ${build}`;
  let why: string;
  let fix: string;
  switch (d.reason) {
    case 'no-worker':
      why = `no worker polls task queue ${d.taskQueue}`;
      fix = `start lbaas worker${d.version ? ` of build ${d.version.buildId}` : ''}`;
      if (d.version || d.taskQueue !== DEFAULT_TASK_QUEUE) {
        const env = [
          d.taskQueue === DEFAULT_TASK_QUEUE ? '' : `LBAAS_TASK_QUEUE=${d.taskQueue}`,
          d.version ? `LBAAS_BUILD_ID=${d.version.buildId}` : '',
          d.version && d.version.deploymentName !== DEFAULT_DEPLOYMENT_NAME ? `LBAAS_DEPLOYMENT_NAME=${d.version.deploymentName}` : '',
        ];
        fix += ` (${env.filter((e) => e !== '').join(' ')})`;
      }
      if (d.version) why += ` (the run is pinned to ${deployment}.${d.version.buildId})`;
      break;
    case 'no-current-version':
      why = `Worker Deployment ${deployment} has no Current Version, so its workers (builds ${d.pollingBuilds.join(', ')}) receive nothing`;
      fix = setCurrent(d.pollingBuilds[d.pollingBuilds.length - 1] ?? 'BUILD');
      break;
    case 'version-not-polled': {
      const v = d.version as VersionRef;
      why = `${d.pinned ? 'the run is pinned to' : 'the Current Version is'} ${deployment}.${v.buildId} and no worker of that build polls task queue ${d.taskQueue}${d.pollingBuilds.length > 0 ? ` (builds polling: ${d.pollingBuilds.join(', ')})` : ''}`;
      fix = `start a worker of build ${v.buildId} (LBAAS_BUILD_ID=${v.buildId})`;
      const polled = d.pollingBuilds[d.pollingBuilds.length - 1];
      if (!d.pinned && polled) fix += `, or make a polling build current: ${setCurrent(polled)}`;
      if (d.pinned && d.currentPolling) {
        fix +=
          `, or let lbaas workers of the Current Version ${d.currentPolling.buildId} take the run over: they do once nothing has polled ${v.buildId} ` +
          `for ${seconds(DEFAULT_DEAD_AFTER_MS)}, checking every ${seconds(STRANDED_SWEEP_MS)} (LBAAS_STRANDED_AFTER_SECONDS; an entity moves to their build, a pass is started again on it)`;
      }
      break;
    }
    case 'workers-busy':
      // A stopped worker stays listed: its last poll tells the two apart after LIVE_POLLER_MS.
      why =
        `workers of ${d.version ? `build ${d.version.buildId}` : 'the right build'} polled task queue ${d.taskQueue} ${seconds(d.lastPollAgoMs ?? 0)} ago but have not taken it ` +
        `(busy workers, a backlog, or workers stopped within the last ${seconds(LIVE_POLLER_MS)})`;
      fix = 'check that the workers run (their logs, CPU, lbaas_* metrics), or add workers';
      break;
  }
  const message = `${d.task} task of ${d.workflowId} not picked up for ${seconds(d.waitingMs)}: ${why}; fix: ${fix}`;
  return { ...d, fix, message };
}

export interface PickupWatchOptions {
  client: PickupClient;
  namespace: string;
  taskQueue: string;
  /** The workflow waited on (asked again at each check, so a caller may move to the next run or workflow). */
  target: () => { workflowId: string; runId?: string } | null;
  /** Called with each diagnosis due for reporting: the first once a task has waited `reportAfterMs`, then every `repeatMs` while it lasts. */
  report: (d: PickupDiagnosis) => void;
  /** Called when a reported problem is gone (the task was taken). */
  resolved?: () => void;
  /** Default PICKUP_REPORT_AFTER_MS. */
  reportAfterMs?: number;
  /** Default PICKUP_REPEAT_MS. */
  repeatMs?: number;
  /** Default PICKUP_CHECK_MS. */
  checkMs?: number;
}

/**
 * A task that has waited this long is reported: long past a healthy pickup (milliseconds) and past a worker's start
 * (its first poll and making its build current take about a second), so that the first report comes within 15 s of
 * the task being scheduled, checks included (with 15 s, a check falling just short made it 20 s; the CLI's own
 * no-worker check adds 3 s before its wait begins).
 */
export const PICKUP_REPORT_AFTER_MS = 10_000;
/** A problem that lasts is reported again this often. */
export const PICKUP_REPEAT_MS = 30_000;
/** How often a waiting caller checks. */
export const PICKUP_CHECK_MS = 5_000;

/**
 * Checks every `checkMs` while running; reports a diagnosis when one is found, again every `repeatMs` while one
 * persists (whatever its reason, which may change), and `resolved` once none is found after one was reported.
 * Errors of the checks are ignored (best effort: the wait itself reports real failures).
 */
export class PickupWatch {
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #lastReport = 0;
  #reported = false;
  #running: Promise<void> = Promise.resolve();

  constructor(readonly o: PickupWatchOptions) {}

  /**
   * Starts checking: first once a task scheduled right after the start (the caller's start or update) has waited
   * `reportAfterMs`, with a second of slack for the call to reach the server, then every `checkMs`.
   */
  start(): this {
    this.#schedule((this.o.reportAfterMs ?? PICKUP_REPORT_AFTER_MS) + 1_000);
    return this;
  }

  /** Stops checking; resolves once a check in flight has finished. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  #schedule(ms = this.o.checkMs ?? PICKUP_CHECK_MS): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#running = this.check().then(
        () => this.#schedule(),
        () => this.#schedule(),
      );
    }, ms);
    this.#timer.unref();
  }

  /** One check (also called by the timer). */
  async check(now = Date.now()): Promise<PickupDiagnosis | null> {
    const target = this.o.target();
    if (!target || this.#stopped) return null;
    let d: PickupDiagnosis | null;
    try {
      d = await diagnosePickup(this.o.client, { namespace: this.o.namespace, taskQueue: this.o.taskQueue, ...target, minWaitMs: this.o.reportAfterMs ?? PICKUP_REPORT_AFTER_MS, now });
    } catch {
      return null;
    }
    if (this.#stopped) return d;
    if (!d) {
      if (this.#reported) this.o.resolved?.();
      this.#reported = false;
      return null;
    }
    if (!this.#reported || now - this.#lastReport >= (this.o.repeatMs ?? PICKUP_REPEAT_MS)) {
      this.#reported = true;
      this.#lastReport = now;
      this.o.report(d);
    }
    return d;
  }
}
