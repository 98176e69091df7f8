/**
 * `lbaas worker`: a worker configured only by its environment (Temporal's TEMPORAL_* / temporal.toml settings, the
 * Engine from ANEXIA_ENGINE_URL and ANEXIA_TOKEN), running until SIGINT/SIGTERM, then draining for the grace time.
 */
import { installTracing } from '../../common/tracing';
import { CACHED_WORKFLOWS_PER_HEAP_MIB, DEFAULT_WORKFLOW_HEAP_MIB } from '../../worker/main';
import { Runtime } from '@temporalio/worker';
import { logSettings } from '../../worker/logging';
import { createMetrics, installRuntime } from '../../worker/metrics';
import { startWorker, workerEnv } from '../../worker/start';
import type { CliIo } from '../io';

export async function worker(io: CliIo): Promise<void> {
  const env = workerEnv(io.env);
  const logging = logSettings(io.env);
  // Every setting is read before the Temporal runtime starts: a process with a runtime does not exit on an error.
  const tracing = installTracing(io.env, 'lbaas-worker');
  // The logger and the Prometheus exporter belong to the Temporal runtime, which must be installed before any connection.
  installRuntime({ metricsAddress: env.metricsAddress, logging });
  // In JSON every line goes through the runtime's logger; in text the operator's lines stay as they always were.
  const say = logging.format === 'json' ? (level: 'INFO' | 'WARN', line: string) => Runtime.instance().logger.log(level, line) : (_: string, line: string) => io.stderr(`${line}\n`);
  for (const warning of env.warnings) say('WARN', `lbaas worker: warning: ${warning}`);
  const metrics = env.metricsAddress ? createMetrics() : null;
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
  say(
    'INFO',
    `lbaas worker: task queue ${temporal.taskQueue} on ${temporal.connection.address} (namespace ${temporal.namespace}), Engine ${env.engine.baseUrl}` +
      `, Engine budget ${pacing.requestsPerSecond} requests/s (burst ${pacing.burst})` +
      `${env.taskQueueActivitiesPerSecond ? `, task queue ${env.taskQueueActivitiesPerSecond} activities/s` : ''}` +
      `, workflow heap ${heapMiB} MiB, ${env.maxCachedWorkflows ?? CACHED_WORKFLOWS_PER_HEAP_MIB * heapMiB} cached workflows${env.metricsAddress ? `, metrics on http://${env.metricsAddress}/metrics` : ''}` +
      `${tracing ? `, traces to ${new URL(tracing.settings.url).host} (${tracing.settings.protocol})` : ''}`,
  );
  try {
    await running.running;
  } finally {
    await running.stop();
    await tracing?.shutdown();
  }
}
