/**
 * The worker process: settings from the environment, one Engine client, the activities built around it, and a
 * Temporal worker on the lbaas task queue with a graceful shutdown.
 */
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivitiesOptions } from '../activities';
import { createControlActivities } from '../activities/control';
import { DEFAULT_BASE_URL, EngineClient } from '../activities/engine';
import type { CliIo } from '../client/cli';
import { invalid, unreachable } from '../client/errors';
import { clientConnectionOptions, temporalSettings } from '../client/settings';
import { engineBudgetFromEnv } from './engine-settings';
import { createMetrics, installMetrics } from './metrics';
import { noticeRateLimits } from './rate-limit-notice';

/**
 * Activity slots. Most activities spend their time waiting on the Engine (readiness polls sleep between GETs), so
 * a worker can hold many at once; 200 keeps memory bounded while 20+ services converge in parallel.
 */
export const DEFAULT_MAX_CONCURRENT_ACTIVITIES = 200;
/** Running activities get this long to finish when the worker is asked to stop, before they are cancelled. */
export const DEFAULT_SHUTDOWN_GRACE = '30s';

export const workflowsPath = path.join(__dirname, '..', 'workflows', 'index.js');

export interface LbaasWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  engine: EngineClient;
  /** For fullResync's visibility reads (listing controllers). */
  temporalClient: Client;
  activities?: ActivitiesOptions;
  /**
   * Temporal's activity starts per second for the whole task queue, shared by all its workers
   * (LBAAS_TASK_QUEUE_ACTIVITIES_PER_SECOND). Not an Engine request budget: that is the Engine client's pacer.
   */
  taskQueueActivitiesPerSecond?: number;
  /** A prebuilt bundle (tests build one per file); the workflows are bundled from source otherwise. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  maxConcurrentActivityTaskExecutions?: number;
  shutdownGraceTime?: WorkerOptions['shutdownGraceTime'];
  identity?: string;
}

export async function createLbaasWorker(o: LbaasWorkerOptions): Promise<Worker> {
  noticeRateLimits(o.engine.pacer, o.temporalClient);
  return Worker.create({
    connection: o.connection,
    namespace: o.namespace,
    taskQueue: o.taskQueue,
    ...(o.workflowBundle ? { workflowBundle: o.workflowBundle } : { workflowsPath }),
    activities: { ...createActivities(o.engine, o.activities), ...createControlActivities(o.temporalClient) },
    maxConcurrentActivityTaskExecutions: o.maxConcurrentActivityTaskExecutions ?? DEFAULT_MAX_CONCURRENT_ACTIVITIES,
    ...(o.taskQueueActivitiesPerSecond ? { maxTaskQueueActivitiesPerSecond: o.taskQueueActivitiesPerSecond } : {}),
    shutdownGraceTime: o.shutdownGraceTime ?? DEFAULT_SHUTDOWN_GRACE,
    ...(o.identity ? { identity: o.identity } : {}),
  });
}

/** `lbaas worker`: runs until SIGINT/SIGTERM, then drains for the grace time. */
export async function runWorkerFromEnv(io: CliIo): Promise<void> {
  const env = io.env;
  const token = env.ANEXIA_TOKEN;
  if (!token) throw invalid('ANEXIA_TOKEN: required (the Engine API token; it is read by workers only)');
  const baseUrl = env.ANEXIA_ENGINE_URL || DEFAULT_BASE_URL;
  const budget = engineBudgetFromEnv(env);
  for (const warning of budget.warnings) io.stderr(`lbaas worker: warning: ${warning}\n`);
  const activitiesPerSecond = budget.taskQueueActivitiesPerSecond;
  const metricsAddress = env.LBAAS_METRICS_ADDRESS;
  if (metricsAddress) installMetrics(metricsAddress);
  const metrics = metricsAddress ? createMetrics() : null;
  const settings = temporalSettings(env);

  let engine: EngineClient;
  try {
    engine = new EngineClient({ baseUrl, token, pacing: budget.pacing, ...(metrics ? { onResponse: metrics.onEngineResponse } : {}) });
  } catch (err) {
    throw invalid(`ANEXIA_ENGINE_URL: ${(err as Error).message}`);
  }
  metrics?.watchPacer(engine.pacer);
  let connection: NativeConnection;
  try {
    connection = await NativeConnection.connect(settings.connection);
  } catch (err) {
    throw unreachable(`Temporal at ${settings.connection.address}: ${(err as Error).message}`);
  }
  const clientConnection = await Connection.connect(clientConnectionOptions(settings));
  try {
    const worker = await createLbaasWorker({
      connection,
      namespace: settings.namespace,
      taskQueue: settings.taskQueue,
      engine,
      temporalClient: new Client({ connection: clientConnection, namespace: settings.namespace }),
      ...(metrics ? { activities: { events: metrics.activityEvents } } : {}),
      ...(activitiesPerSecond ? { taskQueueActivitiesPerSecond: activitiesPerSecond } : {}),
    });
    io.stderr(
      `lbaas worker: task queue ${settings.taskQueue} on ${settings.connection.address} (namespace ${settings.namespace}), Engine ${baseUrl}` +
        `, Engine budget ${budget.pacing.requestsPerSecond} requests/s (burst ${budget.pacing.burst})` +
        `${activitiesPerSecond ? `, task queue ${activitiesPerSecond} activities/s` : ''}${metricsAddress ? `, metrics on http://${metricsAddress}/metrics` : ''}\n`,
    );
    await worker.run();
  } finally {
    await clientConnection.close();
    await connection.close();
    await engine.close();
  }
}
