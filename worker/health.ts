/**
 * What `lbaas worker`'s /healthz and /readyz say (common/health.ts, docs/operations.md#health-endpoints). Live: the
 * process runs and its Worker has not failed. Ready: the Worker is RUNNING, the server lists its poller on the task
 * queue for workflow and for activity tasks (its polls arrive, so it is connected), and the server knows its Version
 * (DescribeWorkerDeploymentVersion answers for it).
 *
 * The server is asked in the background every READY_CHECK_MS and a probe gets the last answer at once: a probe's
 * timeout is short (Kubernetes' default is 1 s), while a describe on a busy server took more than 5 s once on the dev
 * server of a loaded machine. The Worker's own state is read at every probe, so a stopping worker is unready at once.
 */
import type { HealthChecks } from '../common/health';
import { isLivePoller } from '../common/pollers';
import type { RunningWorker } from './start';
import { versionText } from './versioning';

const GRPC_NOT_FOUND = 5;
/** How often the background check asks the server. */
export const READY_CHECK_MS = 5_000;

export interface WorkerHealthOptions {
  namespace: string;
  taskQueue: string;
  identity: string;
  checkMs?: number;
}

export class WorkerHealth implements HealthChecks {
  #running: RunningWorker | null = null;
  #failed: string | null = null;
  /** The server's side of readiness, as last checked. */
  #serverSays: string | null = 'starting: the worker has not polled yet';
  #versionKnown = false;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(readonly o: WorkerHealthOptions) {}

  /** The worker started: checks begin, and a failed run makes the process unhealthy. */
  started(running: RunningWorker): void {
    this.#running = running;
    running.running.catch((err: unknown) => (this.#failed = (err as Error).message ?? String(err)));
    const loop = async () => {
      await this.check();
      if (!this.#stopped) this.#timer = setTimeout(() => void loop(), this.o.checkMs ?? READY_CHECK_MS).unref();
    };
    void loop();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  live(): string | null {
    if (this.#failed !== null) return `worker failed: ${this.#failed}`;
    return this.#running?.worker.getState() === 'FAILED' ? 'worker failed' : null;
  }

  ready(): string | null {
    const r = this.#running;
    if (!r) return 'starting: connecting to Temporal and starting the worker';
    const state = r.worker.getState();
    if (state !== 'RUNNING') return `worker is ${state.toLowerCase()}, not running`;
    return this.#serverSays;
  }

  /** Asks the server once (also called by the background loop). */
  async check(): Promise<string | null> {
    const r = this.#running;
    if (!r) return this.ready();
    try {
      this.#serverSays = await this.#ask(r);
    } catch (err) {
      this.#serverSays = `cannot ask Temporal: ${(err as Error).message ?? String(err)}`;
    }
    return this.ready();
  }

  async #ask(r: RunningWorker): Promise<string | null> {
    const { namespace, taskQueue, identity } = this.o;
    const service = r.client.workflowService;
    const now = Date.now();
    const [wf, act] = await Promise.all([1, 2].map((taskQueueType) => service.describeTaskQueue({ namespace, taskQueue: { name: taskQueue }, taskQueueType })));
    const polls = (answer: typeof wf) => (answer?.pollers ?? []).some((p) => p.identity === identity && isLivePoller(p.lastAccessTime, now));
    const missing = [polls(wf) ? null : 'workflow', polls(act) ? null : 'activity'].filter((x) => x !== null);
    if (missing.length > 0) return `not polling task queue ${taskQueue} yet (the server lists no poller with identity ${identity} for ${missing.join(' or ')} tasks)`;
    // A Version once known stays known while its workers poll.
    if (!this.#versionKnown) {
      try {
        await service.describeWorkerDeploymentVersion({ namespace, deploymentVersion: r.deployment });
        this.#versionKnown = true;
      } catch (err) {
        if ((err as { code?: number }).code === GRPC_NOT_FOUND) return `the server does not know Version ${versionText(r.deployment)} yet`;
        throw err;
      }
    }
    return null;
  }
}
