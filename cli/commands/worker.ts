/**
 * `lbaas worker`: a worker configured only by its environment (Temporal's TEMPORAL_* / temporal.toml settings, the
 * Engine from ANEXIA_ENGINE_URL and ANEXIA_TOKEN), running until SIGINT/SIGTERM, then stopping with the grace time for
 * running activities. On SIGTERM a worker whose Version is no longer current first serves the runs pinned to it
 * (worker/drain.ts); SIGINT stops at once.
 */
import v8 from 'node:v8';
import { installTracing } from '../../common/tracing';
import { CACHED_WORKFLOWS_PER_HEAP_MIB, DEFAULT_WORKFLOW_HEAP_MIB } from '../../worker/main';
import { Runtime } from '@temporalio/worker';
import { logSettings } from '../../worker/logging';
import { createMetrics, installRuntime } from '../../worker/metrics';
import { startWorker, workerEnv, type RunningWorker, type SetCurrentPolicy } from '../../worker/start';
import { WorkerHealth } from '../../worker/health';
import { startHealthServer, type HealthChecks, type HealthServer } from '../../common/health';
import { invalid } from '../../common/errors';
import { processHeapMiB } from '../../worker/heap';
import { workerIdentity } from '../relaunch';
import { versionText } from '../../worker/versioning';
import { drainVersion } from '../../worker/drain';
import type { CliIo } from '../io';

export async function worker(io: CliIo): Promise<void> {
  const env = workerEnv(io.env);
  // The limit this process runs with (bin/lbaas.js starts node with LBAAS_WORKFLOW_HEAP_MIB; an operator's own
  // --max-old-space-size wins); the cache is sized from it. Null: started some other way, without a limit.
  const processHeap = processHeapMiB(process.execArgv, io.env);
  const heapMiB = processHeap ?? env.workflowHeapMiB ?? DEFAULT_WORKFLOW_HEAP_MIB;
  const logging = logSettings(io.env);
  // Every setting is read before the Temporal runtime starts: a process with a runtime does not exit on an error.
  const tracing = installTracing(io.env, 'lbaas-worker');
  // The logger and the Prometheus exporter belong to the Temporal runtime, which must be installed before any connection.
  // SIGTERM is ours: the worker drains its Version first (worker/drain.ts); SIGINT still stops it at once.
  installRuntime({ metricsAddress: env.metricsAddress, logging, shutdownSignals: ['SIGINT', 'SIGQUIT', 'SIGUSR2'] });
  // In JSON every line goes through the runtime's logger; in text the operator's lines stay as they always were.
  const say = logging.format === 'json' ? (level: 'INFO' | 'WARN', line: string) => Runtime.instance().logger.log(level, line) : (_: string, line: string) => io.stderr(`${line}\n`);
  for (const warning of env.warnings) say('WARN', `lbaas worker: warning: ${warning}`);
  const metrics = env.metricsAddress ? createMetrics() : null;
  const identity = workerIdentity(io.env);
  const { temporal } = env;
  const health = new WorkerHealth({ namespace: temporal.namespace, taskQueue: temporal.taskQueue, identity });
  const healthServer = env.healthAddress ? await listenForHealth(env.healthAddress, health) : null;
  let running: RunningWorker;
  try {
    running = await startWorker({
    ...(tracing ? { tracing } : {}),
    temporal: env.temporal,
    engine: { ...env.engine, ...(metrics ? { onResponse: metrics.onEngineResponse } : {}) },
    ...(metrics ? { activities: { events: metrics.activityEvents } } : {}),
    ...(env.taskQueueActivitiesPerSecond ? { taskQueueActivitiesPerSecond: env.taskQueueActivitiesPerSecond } : {}),
    ...(env.workflowBundlePath ? { workflowBundle: { codePath: env.workflowBundlePath } } : {}),
    ...(env.maxCachedWorkflows ? { maxCachedWorkflows: env.maxCachedWorkflows } : {}),
      workflowHeapMiB: heapMiB,
      identity,
      deployment: env.deployment,
      setCurrent: env.setCurrent,
      strandedRuns: env.strandedAfterMs === null ? false : env.strandedTestTiming ? { ...env.strandedTestTiming, belowMinimum: true } : { deadAfterMs: env.strandedAfterMs },
      log: say,
      ...(metrics ? { onStranded: metrics.onStranded } : {}),
    });
  } catch (err) {
    await healthServer?.close();
    throw err;
  }
  if (healthServer) health.started(running);
  const onTerm = () => {
    const { worker } = running;
    if (worker.getState() !== 'RUNNING') return;
    if (env.drainTimeoutMs === 0) {
      worker.shutdown();
      return;
    }
    say('INFO', `lbaas worker: SIGTERM: stopping, after draining ${versionText(env.deployment)} if it is no longer the Current Version (at most ${env.drainTimeoutMs / 1000} s, LBAAS_DRAIN_TIMEOUT_SECONDS)`);
    void drainVersion({
      client: running.client,
      namespace: env.temporal.namespace,
      taskQueue: env.temporal.taskQueue,
      deployment: env.deployment,
      timeoutMs: env.drainTimeoutMs,
      log: say,
      abandoned: () => worker.getState() !== 'RUNNING',
    }).finally(() => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
    });
  };
  process.once('SIGTERM', onTerm);
  metrics?.watchPacer(running.engine.pacer);
  const { pacing } = env.engine;
  const current = currentLine(running, env.setCurrent);
  say(
    'INFO',
    `lbaas worker: task queue ${temporal.taskQueue} on ${temporal.connection.address} (namespace ${temporal.namespace})` +
      `, build ${versionText(env.deployment)} (${current.text}), Engine ${env.engine.baseUrl}` +
      (pacing.initialRequestsPerSecond === undefined
        ? `, Engine budget ${pacing.requestsPerSecond} requests/s (burst ${pacing.burst})`
        : `, Engine budget adaptive from ${pacing.initialRequestsPerSecond} up to ${pacing.requestsPerSecond} requests/s (burst ${pacing.burst})`) +
      `${env.taskQueueActivitiesPerSecond ? `, task queue ${env.taskQueueActivitiesPerSecond} activities/s` : ''}` +
      `, ${processHeap === null ? `V8 heap limit Node's default (${Math.round(v8.getHeapStatistics().heap_size_limit / 2 ** 20)} MiB: node was started without --max-old-space-size)` : `V8 heap limit ${processHeap} MiB (main and workflow threads)`}, ${env.maxCachedWorkflows ?? CACHED_WORKFLOWS_PER_HEAP_MIB * heapMiB} cached workflows${env.metricsAddress ? `, metrics on http://${env.metricsAddress}/metrics` : ''}` +
      `${tracing ? `, traces to ${new URL(tracing.settings.url).host} (${tracing.settings.protocol})` : ''}` +
      `${healthServer ? `, health on http://${healthServer.address}/healthz and /readyz` : ''}`,
  );
  if (current.warning) say('WARN', `lbaas worker: warning: ${current.warning}`);
  try {
    await running.running;
  } finally {
    health.stop();
    process.off('SIGTERM', onTerm);
    await running.stop();
    await healthServer?.close();
    await tracing?.shutdown();
  }
}

async function listenForHealth(listen: { host: string; port: number }, checks: HealthChecks): Promise<HealthServer> {
  try {
    return await startHealthServer(listen, checks);
  } catch (err) {
    throw invalid(`LBAAS_HEALTH_ADDRESS: cannot listen on ${listen.host}:${listen.port}: ${(err as Error).message}`);
  }
}

/**
 * Whether this worker's build is current, for its start-up line, and a warning with the fix when its build receives
 * no new work because of it.
 */
export function currentLine(r: Pick<RunningWorker, 'current' | 'deployment'>, policy: SetCurrentPolicy): { text: string; warning?: string } {
  const mine = r.deployment;
  const c = r.current;
  const setCurrent = `temporal worker deployment set-current-version --deployment-name ${mine.deploymentName} --build-id ${mine.buildId}`;
  if (c === null) return { text: 'current left as it is: LBAAS_SET_CURRENT_VERSION=false' };
  switch (c.result) {
    case 'set':
      return { text: policy === 'if-none' ? 'made current: no Version was current' : 'made current: LBAAS_SET_CURRENT_VERSION=true' };
    case 'already':
      return { text: 'current' };
    case 'other-current':
      return {
        text: `not current: ${versionText(c.current)} is`,
        warning: `build ${mine.buildId} receives only workflows pinned to it while ${versionText(c.current)} is the Current Version; to make it current: ${setCurrent} (docs/operations.md#upgrading-lbaas)`,
      };
    case 'unversioned-workers':
      return {
        text: 'not current: unversioned workers poll',
        warning: `build ${mine.buildId} receives nothing while workers without Worker Versioning poll task queue ${c.taskQueue} and no Version is current; after draining them: ${setCurrent} (docs/operations.md#from-a-release-without-worker-versioning)`,
      };
    case 'failed':
      return { text: 'current unknown', warning: `could not check whether a Version is current: ${c.error}; if none is, this worker receives nothing until: ${setCurrent}` };
  }
}
