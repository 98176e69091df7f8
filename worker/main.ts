/**
 * The lbaas worker as Temporal sees it: the workflows, the activities built around one Engine client, and the
 * worker's limits. start.ts opens the connections it needs; everything that runs a worker goes through there.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import { Runtime, Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivitiesOptions } from '../activities';
import { createControlActivities } from '../activities/control';
import { createPoolActivities } from '../activities/pools';
import { createImportActivities } from '../activities/import';
import type { EngineClient } from '../activities/engine';
import type { Tracing } from '../common/tracing';
import { reportRateLimits } from '../activities/heartbeat';
import { DEFAULT_WORKFLOW_HEAP_MIB } from './heap';
import { defaultDeploymentVersion } from './versioning';
import type * as WorkerTracing from './tracing';

/**
 * Activity slots. Most activities spend their time waiting on the Engine (readiness polls sleep between GETs), so
 * a worker can hold many at once; 200 keeps memory bounded while 20+ services converge in parallel.
 */
const DEFAULT_MAX_CONCURRENT_ACTIVITIES = 200;
/** Running activities get this long to finish when the worker is asked to stop, before they are cancelled. */
export const DEFAULT_SHUTDOWN_GRACE = '30s';

export const workflowsPath = path.join(__dirname, '..', 'workflows', 'index.js');

/** The heap limit of the worker's process and its workflow thread: set where the process starts (heap.ts). */
export { DEFAULT_WORKFLOW_HEAP_MIB };
/**
 * Cached runs per MiB of workflow heap when LBAAS_MAX_CACHED_WORKFLOWS is not set: 1,344 at the default 448 MiB. A
 * cached run of ours holds about 0.1-0.2 MiB (the delete's runs the most: with 2,048 cached the workflow thread had
 * 462 MiB in use while a 1000-service fleet was deleted), so 3 per MiB leaves the heap room to collect in; a no-op
 * resync of 1000 controllers took the same time with 1,344 as with 2,048 (docs/scaling.md). The SDK's own default
 * (about 2,300) follows the main thread's limit instead.
 */
export const CACHED_WORKFLOWS_PER_HEAP_MIB = 3;

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
  /**
   * Workflow runs kept in the worker's cache (LBAAS_MAX_CACHED_WORKFLOWS): the bound on the worker's memory when
   * many services converge at once, paid for in replays of runs evicted before their next task.
   * CACHED_WORKFLOWS_PER_HEAP_MIB per MiB of workflow heap when absent: docs/scaling.md has the measured trade-off.
   */
  maxCachedWorkflows?: number;
  /**
   * The workflow thread's heap limit in MiB, which sizes the cache when maxCachedWorkflows is absent;
   * DEFAULT_WORKFLOW_HEAP_MIB when absent. The limit itself is the process's `--max-old-space-size` (heap.ts).
   */
  workflowHeapMiB?: number;
  shutdownGraceTime?: WorkerOptions['shutdownGraceTime'];
  identity?: string;
  /**
   * The Worker Deployment Version this worker polls as (worker/versioning.ts): LBAAS_DEPLOYMENT_NAME and
   * LBAAS_BUILD_ID for `lbaas worker`; `lbaas` and this build's id when absent.
   */
  deployment?: WorkerDeploymentVersion;
  /** Temporal's OpenTelemetry interceptors and the workflow span sink (worker/tracing.ts); none when absent. */
  tracing?: Tracing;
}

/** In a bundle built with Temporal's OpenTelemetry workflow interceptors (worker/tracing.ts WORKFLOW_TRACING_MODULES). */
const TRACING_BUNDLE_MARKER = 'OpenTelemetryInboundInterceptor';

/**
 * A prebuilt bundle decides whether workflows make spans. One with the interceptors hands its spans to the `exporter`
 * sink: without tracing that sink discards them (an unregistered sink would log an error per span). One without them
 * makes none: with tracing that is said once at start, as activity and Engine spans still come.
 */
function prebuiltBundleTracing(o: LbaasWorkerOptions): Pick<WorkerOptions, 'sinks'> {
  const bundle = o.workflowBundle;
  if (!bundle) return {};
  const code = 'code' in bundle ? bundle.code : readFileSync(bundle.codePath, 'utf8');
  const traced = code.includes(TRACING_BUNDLE_MARKER);
  if (o.tracing && !traced) {
    Runtime.instance().logger.warn('lbaas worker: warning: the workflow bundle was built without the OpenTelemetry workflow interceptors: no workflow spans (activity and Engine request spans still come)');
  }
  return !o.tracing && traced ? { sinks: { exporter: { export: { fn: () => undefined } } } } : {};
}

/**
 * How long one workflow activation may run before the SDK cuts it short (its `isolateExecutionTimeout`, 5 s by
 * default). Cutting it short is no clean task failure: Node's `vm` timeout fired while microtasks run can corrupt the
 * async hook stack and abort the whole worker process, every workflow and activity on it. Workflow code here has no
 * unbounded loop, so an activation over 5 s is a starved or replaying worker, not a stuck one; the server's workflow
 * task timeout (10 s) already fails such a task cleanly and retries it. A minute keeps the guard for a real loop
 * without turning a slow task into a crash loop (docs/operations.md, "Worker sizing").
 */
export const WORKFLOW_ISOLATE_TIMEOUT = '60s';

/** The longest a changed heartbeat detail waits before the worker sends it to the server. */
export const HEARTBEAT_THROTTLE = '2s';

export async function createLbaasWorker(o: LbaasWorkerOptions): Promise<Worker> {
  const heapMiB = o.workflowHeapMiB ?? DEFAULT_WORKFLOW_HEAP_MIB;
  reportRateLimits(o.engine.pacer);
  return Worker.create({
    connection: o.connection,
    namespace: o.namespace,
    taskQueue: o.taskQueue,
    ...(o.workflowBundle ? { workflowBundle: o.workflowBundle } : { workflowsPath }),
    activities: {
      ...createActivities(o.engine, o.activities),
      ...createControlActivities(o.temporalClient),
      ...createPoolActivities(o.temporalClient),
      ...createImportActivities(o.engine),
    },
    maxConcurrentActivityTaskExecutions: o.maxConcurrentActivityTaskExecutions ?? DEFAULT_MAX_CONCURRENT_ACTIVITIES,
    ...(o.taskQueueActivitiesPerSecond ? { maxTaskQueueActivitiesPerSecond: o.taskQueueActivitiesPerSecond } : {}),
    maxCachedWorkflows: o.maxCachedWorkflows ?? CACHED_WORKFLOWS_PER_HEAP_MIB * heapMiB,
    // What a running create group has done is in its heartbeat details (activities/realize.ts), which is where
    // `apply --wait` and the Web UI read it: details reach the server at most this long after a change (the SDK's
    // default, 80 % of the 15 s heartbeat timeout, left the live view 12 s behind).
    maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
    // Not in WorkerOptions' type (the SDK reads it from the options all the same, over its default): hence the spread;
    // test/ops/worker-isolate-timeout.test.ts checks the compiled value, so an SDK that stops reading it fails there.
    ...({ isolateExecutionTimeout: WORKFLOW_ISOLATE_TIMEOUT } as Partial<WorkerOptions>),
    shutdownGraceTime: o.shutdownGraceTime ?? DEFAULT_SHUTDOWN_GRACE,
    ...(o.identity ? { identity: o.identity } : {}),
    workerDeploymentOptions: {
      version: o.deployment ?? defaultDeploymentVersion(),
      useWorkerVersioning: true,
      // Applies only to a workflow type without a behavior of its own; every lbaas type has one (workflows/versioning.ts).
      // PINNED is the safe default: such a run finishes on the code that started it.
      defaultVersioningBehavior: 'PINNED',
    },
    ...prebuiltBundleTracing(o),
    // Required only with tracing on: a worker without it loads nothing of OpenTelemetry.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    ...(o.tracing ? (require('./tracing') as typeof WorkerTracing).workerTracingOptions(o.tracing, !o.workflowBundle) : {}),
  });
}
