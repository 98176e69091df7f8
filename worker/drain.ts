/**
 * The drain of `lbaas worker` on SIGTERM (docs/operations.md#upgrading-lbaas). A Kubernetes rolling update signals
 * the old build's pods once the new ones run; the passes pinned to the old build can only finish on a worker of that
 * build, so a worker whose Version is no longer current keeps serving until no run pinned to its Version is open,
 * bounded by LBAAS_DRAIN_TIMEOUT_SECONDS, and only then stops as it always did (running activities get the shutdown
 * grace time). A worker whose Version is still current or ramping (a plain scale-down, or a restart) stops at once:
 * the other workers of its build take its work. What the drain leaves behind when it times out is what the
 * stranded-run sweep of the new build handles (worker/stranded.ts).
 */
import type { Client } from '@temporalio/client';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import { versionText } from './versioning';

/** Default LBAAS_DRAIN_TIMEOUT_SECONDS: passes take seconds to minutes; the Helm chart gives the pod this plus 60 s. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 300_000;
/** How often the drain counts the runs still pinned to the worker's Version. */
const CHECK_EVERY_MS = 5_000;
/** How often it says what it waits for. */
const REPORT_EVERY_MS = 15_000;
/** Workflow ids named in each report line. */
const NAMED = 3;
const NOT_FOUND = 5;

export interface DrainOptions {
  client: Pick<Client, 'workflow' | 'workflowService'>;
  namespace: string;
  taskQueue: string;
  deployment: WorkerDeploymentVersion;
  timeoutMs: number;
  log: (level: 'INFO' | 'WARN', line: string) => void;
  /** True when the wait should end early (the worker was stopped some other way, e.g. SIGINT). */
  abandoned?: () => boolean;
  checkEveryMs?: number;
  reportEveryMs?: number;
}

export type DrainOutcome = 'still current' | 'drained' | 'timed out' | 'abandoned';

/** Waits as the file comment says; resolves to why the wait ended. Errors of a check are logged and checked again. */
export async function drainVersion(o: DrainOptions): Promise<DrainOutcome> {
  const version = versionText(o.deployment);
  const start = Date.now();
  const deadline = start + o.timeoutMs;
  const query =
    `TaskQueue = '${o.taskQueue}' AND ExecutionStatus = 'Running' AND TemporalWorkflowVersioningBehavior = 'Pinned'` +
    ` AND TemporalWorkerDeploymentVersion = '${o.deployment.deploymentName}:${o.deployment.buildId}'`;
  let lastReport = 0;
  let routing: { current: string | null; ramping: string | null } | null = null;
  for (;;) {
    if (o.abandoned?.()) return 'abandoned';
    try {
      routing = await routingOf(o);
      if (routing.current === o.deployment.buildId || routing.ramping === o.deployment.buildId) {
        o.log('INFO', `lbaas worker: stopping now: ${version} is the ${routing.current === o.deployment.buildId ? 'Current' : 'Ramping'} Version, so its other workers take its work`);
        return 'still current';
      }
      const { count } = await o.client.workflow.count(query);
      if (count === 0) {
        o.log('INFO', `lbaas worker: ${version} is drained: no workflow pinned to it runs; stopping after ${Math.round((Date.now() - start) / 1000)} s of drain`);
        return 'drained';
      }
      if (Date.now() - lastReport >= (o.reportEveryMs ?? REPORT_EVERY_MS)) {
        lastReport = Date.now();
        const ids: string[] = [];
        for await (const w of o.client.workflow.list({ query, pageSize: NAMED })) {
          ids.push(w.workflowId);
          if (ids.length >= NAMED) break;
        }
        const left = Math.max(0, Math.round((deadline - Date.now()) / 1000));
        const current = routing.current ? versionText({ deploymentName: o.deployment.deploymentName, buildId: routing.current }) : 'none';
        o.log(
          'INFO',
          `lbaas worker: draining ${version} (the Current Version is ${current}): waiting for ${count} workflow${count === 1 ? '' : 's'} pinned to it (${ids.join(', ')}${count > ids.length ? ', ...' : ''}) to finish; stopping anyway in ${left} s (LBAAS_DRAIN_TIMEOUT_SECONDS)`,
        );
      }
    } catch (err) {
      o.log('WARN', `lbaas worker: draining ${version}: could not check what still runs on it (checked again in ${Math.round((o.checkEveryMs ?? CHECK_EVERY_MS) / 1000)} s): ${(err as Error).message}`);
    }
    if (Date.now() >= deadline) {
      o.log('WARN', `lbaas worker: stopping with workflows still pinned to ${version}: LBAAS_DRAIN_TIMEOUT_SECONDS (${Math.round(o.timeoutMs / 1000)} s) ran out; the Current Version's workers end or move them once no worker of ${version} polls (docs/operations.md#upgrading-lbaas)`);
      return 'timed out';
    }
    await sleepUnless(Math.min(o.checkEveryMs ?? CHECK_EVERY_MS, Math.max(0, deadline - Date.now())), o.abandoned);
  }
}

async function routingOf(o: DrainOptions): Promise<{ current: string | null; ramping: string | null }> {
  try {
    const d = await o.client.workflowService.describeWorkerDeployment({ namespace: o.namespace, deploymentName: o.deployment.deploymentName });
    const r = d.workerDeploymentInfo?.routingConfig;
    return { current: r?.currentDeploymentVersion?.buildId || null, ramping: r?.rampingDeploymentVersion?.buildId || null };
  } catch (err) {
    if ((err as { code?: number }).code === NOT_FOUND) return { current: null, ramping: null };
    throw err;
  }
}

/** Sleeps `ms`, waking early (checked every 250 ms) once `abandoned` says so. */
async function sleepUnless(ms: number, abandoned?: () => boolean): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (abandoned?.()) return;
    await new Promise((r) => setTimeout(r, Math.min(250, end - Date.now())));
  }
}
