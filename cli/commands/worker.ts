/**
 * `lbaas worker`: a worker configured only by its environment (Temporal's TEMPORAL_* / temporal.toml settings, the
 * Engine from ANEXIA_ENGINE_URL and ANEXIA_TOKEN), running until SIGINT/SIGTERM, then draining for the grace time.
 */
import { installTracing } from '../../common/tracing';
import { CACHED_WORKFLOWS_PER_HEAP_MIB, DEFAULT_WORKFLOW_HEAP_MIB } from '../../worker/main';
import { createMetrics, installMetrics } from '../../worker/metrics';
import { startWorker, workerEnv } from '../../worker/start';
import type { CliIo } from '../io';

export async function worker(io: CliIo): Promise<void> {
  const env = workerEnv(io.env);
  for (const warning of env.warnings) io.stderr(`lbaas worker: warning: ${warning}\n`);
  // The Prometheus exporter belongs to the Temporal runtime, which must be installed before any connection.
  if (env.metricsAddress) installMetrics(env.metricsAddress);
  const metrics = env.metricsAddress ? createMetrics() : null;
  const tracing = installTracing(io.env, 'lbaas-worker');
  const running = await startWorker({
    ...(tracing ? { tracing } : {}),
    temporal: env.temporal,
    engine: { ...env.engine, ...(metrics ? { onResponse: metrics.onEngineResponse } : {}) },
    ...(metrics ? { activities: { events: metrics.activityEvents } } : {}),
    ...(env.taskQueueActivitiesPerSecond ? { taskQueueActivitiesPerSecond: env.taskQueueActivitiesPerSecond } : {}),
    ...(env.workflowBundlePath ? { workflowBundle: { codePath: env.workflowBundlePath } } : {}),
    ...(env.maxCachedWorkflows ? { maxCachedWorkflows: env.maxCachedWorkflows } : {}),
    ...(env.workflowHeapMiB ? { workflowHeapMiB: env.workflowHeapMiB } : {}),
  });
  metrics?.watchPacer(running.engine.pacer);
  const heapMiB = env.workflowHeapMiB ?? DEFAULT_WORKFLOW_HEAP_MIB;
  const { pacing } = env.engine;
  const { temporal } = env;
  io.stderr(
    `lbaas worker: task queue ${temporal.taskQueue} on ${temporal.connection.address} (namespace ${temporal.namespace}), Engine ${env.engine.baseUrl}` +
      `, Engine budget ${pacing.requestsPerSecond} requests/s (burst ${pacing.burst})` +
      `${env.taskQueueActivitiesPerSecond ? `, task queue ${env.taskQueueActivitiesPerSecond} activities/s` : ''}` +
      `, workflow heap ${heapMiB} MiB, ${env.maxCachedWorkflows ?? CACHED_WORKFLOWS_PER_HEAP_MIB * heapMiB} cached workflows${env.metricsAddress ? `, metrics on http://${env.metricsAddress}/metrics` : ''}` +
      `${tracing ? `, traces to ${new URL(tracing.settings.url).host} (${tracing.settings.protocol})` : ''}\n`,
  );
  try {
    await running.running;
  } finally {
    await running.stop();
    await tracing?.shutdown();
  }
}
