/**
 * The wake-up of the long-lived entities when a build becomes the Current Version (docs/architecture.md, "Versions
 * and patches"). serviceController and serverPool runs are PINNED to the build that started them and move to a new
 * build by continue-as-new, which they can only decide in a workflow task: an idle entity gets none until something
 * happens to it. So a worker that sees its own build current (right after it made it current, worker/start.ts, or in
 * its sweep loop, worker/stranded.ts) lists the running entities of its task queue on any other Version of its
 * Deployment and sends each the `wake` signal (contract/messages.ts), whose handler does nothing: the task it brings
 * runs on the entity's own build, which sees `targetWorkerDeploymentVersionChanged` and moves once idle.
 *
 * Signals go to the listed run (its run id), so a run that already moved is not signalled again (its successor is on
 * the new build and no longer listed). Several workers of the new build waking at once is harmless: a second signal
 * to a run brings one more no-op task at most. Paced (default 50 signals/s) so that a fleet of thousands does not
 * hit the server, and the old build's workers, with one burst.
 */
import type { Client } from '@temporalio/client';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import { wakeSignal, workflowTypes, SCHEMA_VERSION, VISIBILITY_PAGE_SIZE } from '../contract';
// The pool's `wake` (poolWakeSignal) has the same name and payload: one definition serves both types here.
import { versionText } from './versioning';

/** Wake signals per second at most, per worker. */
export const WAKE_PER_SECOND = 50;
/** The second wake after a worker made its build current (EntityWaker says why there is one). */
export const REWAKE_AFTER_MS = 5_000;
/** Signals in flight at once. */
const CONCURRENCY = 8;
const NOT_FOUND = 5;
/** Names that can be written into a visibility query between single quotes as they are. */
const SAFE_NAME = /^[^'"\\]+$/;

export interface WakeOptions {
  client: Pick<Client, 'workflow'>;
  taskQueue: string;
  deployment: WorkerDeploymentVersion;
  perSecond?: number;
  log: (level: 'INFO' | 'WARN', line: string) => void;
}

export interface WakeReport {
  listed: number;
  signalled: number;
  /** Runs that ended (moved or finished) between the list and their signal. */
  gone: number;
  failed: number;
  ms: number;
}

/** The visibility query of the entities not on `deployment` (exported for the test that checks it against the server). */
export function entitiesElsewhere(taskQueue: string, d: WorkerDeploymentVersion): string {
  return (
    `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running' AND WorkflowType IN ('${workflowTypes.serviceController}', '${workflowTypes.serverPool}')` +
    ` AND TemporalWorkerDeployment = '${d.deploymentName}' AND TemporalWorkerDeploymentVersion != '${d.deploymentName}:${d.buildId}'`
  );
}

/** Wakes every running entity on another Version of the Deployment, as the file comment says. */
export async function wakeEntities(o: WakeOptions): Promise<WakeReport> {
  const started = Date.now();
  const report: WakeReport = { listed: 0, signalled: 0, gone: 0, failed: 0, ms: 0 };
  if (![o.taskQueue, o.deployment.deploymentName, o.deployment.buildId].every((n) => SAFE_NAME.test(n))) return report;
  const runs: { workflowId: string; runId: string }[] = [];
  for await (const w of o.client.workflow.list({ query: entitiesElsewhere(o.taskQueue, o.deployment), pageSize: VISIBILITY_PAGE_SIZE })) runs.push({ workflowId: w.workflowId, runId: w.runId });
  report.listed = runs.length;
  if (runs.length === 0) return { ...report, ms: Date.now() - started };
  o.log('INFO', `lbaas worker: ${versionText(o.deployment)} is current: waking ${runs.length} controllers and pools on other builds, so that they move to it (at most ${o.perSecond ?? WAKE_PER_SECOND}/s)`);
  const gapMs = 1000 / (o.perSecond ?? WAKE_PER_SECOND);
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      const run = runs[i];
      if (!run) return;
      // Signal i leaves no earlier than i gaps after the start: the pace holds whatever the signals' latency.
      const wait = started + i * gapMs - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      try {
        await o.client.workflow.getHandle(run.workflowId, run.runId).signal(wakeSignal, { v: SCHEMA_VERSION });
        report.signalled++;
      } catch (err) {
        const e = err as { code?: number; name?: string; message?: string };
        if (e.code === NOT_FOUND || e.name === 'WorkflowNotFoundError') report.gone++;
        else {
          report.failed++;
          if (report.failed <= 3) o.log('WARN', `lbaas worker: could not wake ${run.workflowId} (run ${run.runId}): ${e.message ?? String(err)}; it moves at its next task anyway`);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  report.ms = Date.now() - started;
  o.log('INFO', `lbaas worker: woke ${report.signalled} of ${report.listed} controllers and pools in ${(report.ms / 1000).toFixed(1)} s (${report.gone} had already moved or ended${report.failed ? `, ${report.failed} failed` : ''})`);
  return report;
}

/**
 * When to wake: start.ts calls current() after setCurrentVersion, the sweep loop at every sweep that sees the build
 * current (about every 30 s), notCurrent() when it sees it not current. A wake runs the first time, and again at every
 * call for as long as the last one still listed entities on other builds: a run woken in the first seconds after the
 * switch can get its task before the server's routing says the target changed (it then sees no change and stays),
 * and one that was busy (a pass, a wait) moves only later. Once a wake lists nothing, it stops until the build is
 * seen not current and current again (a rollback and a new roll-forward).
 */
export class EntityWaker {
  #armed = true;
  #running: Promise<WakeReport | null> | null = null;
  constructor(private readonly o: WakeOptions) {}

  current(): Promise<WakeReport | null> {
    if (this.#running) return this.#running;
    if (!this.#armed) return Promise.resolve(null);
    this.#armed = false;
    this.#running = wakeEntities(this.o)
      .then((r) => {
        if (r.listed > 0) this.#armed = true;
        return r;
      })
      .catch((err: unknown) => {
        this.#armed = true;
        this.o.log('WARN', `lbaas worker: waking the controllers and pools on other builds failed (tried again at the next sweep): ${(err as Error).message}`);
        return null;
      })
      .finally(() => {
        this.#running = null;
      });
    return this.#running;
  }

  notCurrent(): void {
    this.#armed = true;
  }

  /** Waits for a wake in progress (the worker's stop). */
  async settled(): Promise<void> {
    await this.#running;
  }
}
