/**
 * The one place that turns settings into a running lbaas worker: the Temporal connections it needs (a native one for
 * polling, a client one for fullResync's visibility reads), the Engine client, and createLbaasWorker. `lbaas worker`,
 * `lbaas dev`, the test stack, the child-process worker of tests and benchmarks all start workers here, so they run
 * the worker an operator runs.
 */
import { existsSync, statSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import { NativeConnection, Runtime } from '@temporalio/worker';
import { DEFAULT_BASE_URL, EngineClient, type EngineClientOptions, type PacingOptions } from '../activities/engine';
import { invalid, unreachable } from '../common/errors';
import { parseListenAddress } from '../common/health';
import { clientConnectionOptions, temporalSettings, type TemporalSettings } from '../common/settings';
import { engineBudgetFromEnv } from './engine-settings';
import { MIN_WORKFLOW_HEAP_MIB } from './heap';
import { createLbaasWorker, type LbaasWorkerOptions } from './main';
import { DEFAULT_DRAIN_TIMEOUT_MS } from './drain';
import { DEFAULT_DEAD_AFTER_MS } from '../common/pollers';
import { MIN_DEAD_AFTER_MS, StrandedRunSweeper, type StrandedAction } from './stranded';
import { defaultDeploymentVersion, deploymentVersionFromEnv, setCurrentVersion, type SetCurrentResult } from './versioning';
import { EntityWaker, REWAKE_AFTER_MS } from './wake';

export interface StartWorkerOptions extends Omit<LbaasWorkerOptions, 'connection' | 'namespace' | 'taskQueue' | 'engine' | 'temporalClient'> {
  temporal: TemporalSettings;
  /** Options for an Engine client of the worker's own, or a client the caller keeps (and closes). */
  engine: EngineClientOptions | EngineClient;
  /** Connections the caller keeps open (and closes); the worker opens and closes its own otherwise. */
  connections?: { native: NativeConnection; client: Client };
  /**
   * Make the worker's Version its Deployment's Current Version once it polls (worker/versioning.ts), so that tasks
   * reach it: `true` whatever is current, `'if-none'` only while no Version is current (a first install), `false`
   * never. Default true: `lbaas dev`, the local cluster, the tests and the benchmarks run one build at a time.
   * `lbaas worker` passes LBAAS_SET_CURRENT_VERSION (default `if-none`): once a Version is current, which build runs
   * new work is the operator's decision (docs/operations.md#upgrading-lbaas).
   */
  setCurrent?: SetCurrentPolicy;
  /**
   * The stranded-run sweep (worker/stranded.ts): on by default, `false` turns it off. `deadAfterMs`: how long a
   * Version goes without a poll before the runs pinned to it count as stranded (LBAAS_STRANDED_AFTER_SECONDS).
   */
  strandedRuns?: false | { deadAfterMs?: number; intervalMs?: number; belowMinimum?: boolean };
  /** Where the worker's own lines go (the sweep's actions); the Temporal runtime's logger when absent. */
  log?: (level: 'INFO' | 'WARN', line: string) => void;
  /** Counts the sweep's actions (worker/metrics.ts). */
  onStranded?: (workflowType: string, action: StrandedAction) => void;
}

export interface RunningWorker {
  worker: Awaited<ReturnType<typeof createLbaasWorker>>;
  /** A client on the worker's namespace (for callers that also start workflows or schedules). */
  client: Client;
  engine: EngineClient;
  /** The Worker Deployment Version the worker polls as. */
  deployment: WorkerDeploymentVersion;
  /**
   * What making the Version current did (worker/versioning.ts); null when not asked to. With `'if-none'` an error
   * of the server does not stop the worker: it is returned as `{ result: 'failed', error }` for the worker to log.
   */
  current: SetCurrentResult | { result: 'failed'; error: string } | null;
  /** The stranded-run sweep, running while the worker runs (null: turned off). */
  sweeper: StrandedRunSweeper | null;
  /** Settles when the worker has stopped polling and drained. */
  running: Promise<void>;
  /** Asks the worker to stop (idempotent), waits for it, and closes what the worker opened. */
  stop(): Promise<void>;
}

/** Connects, builds and starts the worker. A Temporal server that cannot be reached is `unreachable` (exit 4). */
export async function startWorker(o: StartWorkerOptions): Promise<RunningWorker> {
  const { temporal, engine: engineOption, connections, setCurrent, strandedRuns, log, onStranded, ...workerOptions } = o;
  const deployment = o.deployment ?? defaultDeploymentVersion();
  const closes: (() => Promise<void>)[] = [];
  const closeAll = async () => {
    for (const close of closes.reverse()) await close();
    closes.length = 0;
  };
  try {
    let engine: EngineClient;
    if (engineOption instanceof EngineClient) engine = engineOption;
    else {
      try {
        engine = new EngineClient(o.tracing ? { tracer: o.tracing.tracer, ...engineOption } : engineOption);
      } catch (err) {
        throw invalid(`ANEXIA_ENGINE_URL: ${(err as Error).message}`);
      }
      closes.push(() => engine.close());
    }
    let native = connections?.native;
    let client = connections?.client;
    if (!native || !client) {
      try {
        const nc = await NativeConnection.connect(temporal.connection);
        closes.push(() => nc.close());
        native = nc;
      } catch (err) {
        throw unreachable(`Temporal at ${temporal.connection.address}: ${(err as Error).message}`);
      }
      const cc = await Connection.connect(clientConnectionOptions(temporal));
      closes.push(() => cc.close());
      client = new Client({ connection: cc, namespace: temporal.namespace, ...(o.tracing ? { interceptors: { workflow: o.tracing.clientInterceptors() } } : {}) });
    }
    const worker = await createLbaasWorker({
      ...workerOptions,
      deployment,
      connection: native,
      namespace: temporal.namespace,
      taskQueue: temporal.taskQueue,
      engine,
      temporalClient: client,
    });
    const running = worker.run();
    // A failed run is reported by whoever awaits `running` or `stop()`; this keeps it from being unhandled meanwhile.
    running.catch(() => {});
    const say = log ?? ((level: 'INFO' | 'WARN', line: string) => Runtime.instance().logger.log(level, line));
    // Wakes the controllers and pools on other builds whenever this build becomes current (worker/wake.ts).
    const waker = new EntityWaker({ client, taskQueue: temporal.taskQueue, deployment, log: say });
    const sweeper =
      strandedRuns === false
        ? null
        : new StrandedRunSweeper({
            client,
            namespace: temporal.namespace,
            taskQueue: temporal.taskQueue,
            deployment,
            ...(strandedRuns ?? {}),
            log: say,
            ...(onStranded ? { onAction: onStranded } : {}),
            onCurrent: (current) => (current ? void waker.current() : waker.notCurrent()),
          });
    sweeper?.start();
    // A worker that stops (on a signal, or failing) stops sweeping: its connections are about to close.
    running.finally(() => sweeper?.stop()).catch(() => {});
    const stopWorker = async () => {
      // The SDK already begins the shutdown on SIGINT/SIGTERM; asking again would throw.
      if (worker.getState() === 'RUNNING') worker.shutdown();
      try {
        await running;
      } finally {
        await sweeper?.stop();
        await waker.settled();
        await closeAll();
      }
    };
    const policy = setCurrent ?? true;
    let current: RunningWorker['current'] = null;
    if (policy !== false) {
      const onlyIfNone = policy === 'if-none' ? { onlyIfNone: { taskQueue: temporal.taskQueue } } : {};
      try {
        current = await setCurrentVersion(client, temporal.namespace, deployment, { ...onlyIfNone, ...(o.identity ? { identity: o.identity } : {}) });
      } catch (err) {
        // A worker that was not told to switch keeps running (the server may not allow this identity to switch):
        // its start-up line says why its build may receive nothing.
        if (policy === 'if-none') current = { result: 'failed', error: (err as Error).message };
        else {
          await stopWorker().catch(() => {});
          throw err;
        }
      }
      // In the background: the worker serves while the entities on other builds are woken; once more a few seconds
      // later for those whose task came before the server's routing knew the new target (EntityWaker), and from then
      // on at every sweep while any is left.
      // Only when this build is current now (a worker at `if-none` may have found another build current).
      if (current?.result === 'set' || current?.result === 'already') {
        void waker.current().then((r) => {
          if (r && r.listed > 0) setTimeout(() => void waker.current(), REWAKE_AFTER_MS).unref();
        });
      }
    }
    return {
      worker,
      client,
      engine,
      deployment,
      current,
      sweeper,
      running,
      stop: stopWorker,
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

/** What `lbaas worker` reads from its environment, beyond Temporal's own settings. */
export interface WorkerEnv {
  temporal: TemporalSettings;
  /** The Engine, and this worker's request budget (engine-settings.ts). */
  engine: { baseUrl: string; token: string; pacing: PacingOptions };
  /** LBAAS_TASK_QUEUE_ACTIVITIES_PER_SECOND: the activity rate shared by every worker of the task queue. */
  taskQueueActivitiesPerSecond?: number;
  /** For the operator: deprecated variables in use. */
  warnings: string[];
  /** LBAAS_METRICS_ADDRESS: `host:port` of the Prometheus endpoint. */
  metricsAddress?: string;
  /** LBAAS_HEALTH_ADDRESS: where /healthz and /readyz are served (worker/health.ts); off when absent. */
  healthAddress?: { host: string; port: number };
  /**
   * LBAAS_WORKFLOW_BUNDLE: a workflow bundle file built beforehand from this same build (bundleWorkflowCode, as
   * scripts/test.js does), loaded instead of bundling the workflows at start: bundling costs a few CPU-seconds per
   * worker start. A bundle of other code would run other workflow code, so it must come from the same build.
   */
  workflowBundlePath?: string;
  /** LBAAS_MAX_CACHED_WORKFLOWS: workflow runs the worker keeps cached (worker/main.ts). */
  maxCachedWorkflows?: number;
  /** LBAAS_WORKFLOW_HEAP_MIB: the V8 heap limit `lbaas worker` starts node with (worker/heap.ts). */
  workflowHeapMiB?: number;
  /** LBAAS_DEPLOYMENT_NAME and LBAAS_BUILD_ID: the Worker Deployment Version the worker polls as (worker/versioning.ts). */
  deployment: WorkerDeploymentVersion;
  /**
   * LBAAS_SET_CURRENT_VERSION: `if-none` (default) makes that Version current once the worker polls if no Version is
   * current (a first install); `true` whatever is current; `false` never.
   */
  setCurrent: SetCurrentPolicy;
  /**
   * LBAAS_STRANDED_AFTER_SECONDS (default 90, at least 75, `off` turns the sweep off): how long a Version goes without
   * a poll before a worker of the Current Version ends or resets the runs pinned to it (worker/stranded.ts).
   */
  strandedAfterMs: number | null;
  /**
   * LBAAS_TEST_STRANDED_TIMING (`<dead after>/<interval>` in seconds, e.g. `10/2`), for tests only: the sweep
   * judges a build dead after that many seconds without a poll, below the minimum of LBAAS_STRANDED_AFTER_SECONDS,
   * and sweeps at that interval. test/faults/stranded.test.ts, whose only other build is one whose worker it killed,
   * would otherwise wait 90 s and more for what it proves at any threshold.
   */
  strandedTestTiming?: { deadAfterMs: number; intervalMs: number };
  /**
   * LBAAS_DRAIN_TIMEOUT_SECONDS (default 300; 0: no drain): how long a worker whose Version is no longer current keeps
   * serving after SIGTERM while runs pinned to its Version are open (worker/drain.ts).
   */
  drainTimeoutMs: number;
}

/** Reads and checks the worker's settings; a bad value is `invalid` (exit 2), naming the variable. */
export function workerEnv(env: NodeJS.ProcessEnv): WorkerEnv {
  const token = env.ANEXIA_TOKEN;
  if (!token) throw invalid('ANEXIA_TOKEN: required (the Engine API token; it is read by workers only)');
  const budget = engineBudgetFromEnv(env);
  return {
    temporal: temporalSettings(env),
    engine: { baseUrl: env.ANEXIA_ENGINE_URL || DEFAULT_BASE_URL, token, pacing: budget.pacing },
    ...(budget.taskQueueActivitiesPerSecond ? { taskQueueActivitiesPerSecond: budget.taskQueueActivitiesPerSecond } : {}),
    warnings: budget.warnings,
    ...(env.LBAAS_METRICS_ADDRESS ? { metricsAddress: env.LBAAS_METRICS_ADDRESS } : {}),
    ...(env.LBAAS_HEALTH_ADDRESS ? { healthAddress: parseListenAddress(env.LBAAS_HEALTH_ADDRESS, 'LBAAS_HEALTH_ADDRESS') } : {}),
    ...(env.LBAAS_WORKFLOW_BUNDLE ? { workflowBundlePath: bundleFile(env.LBAAS_WORKFLOW_BUNDLE) } : {}),
    ...cachedWorkflows(env),
    ...workflowHeap(env),
    deployment: deploymentVersionFromEnv(env),
    setCurrent: setCurrentPolicy(env.LBAAS_SET_CURRENT_VERSION),
    strandedAfterMs: strandedAfter(env),
    ...strandedTestTiming(env),
    drainTimeoutMs: drainTimeout(env),
  };
}

function strandedAfter(env: NodeJS.ProcessEnv): number | null {
  const raw = env.LBAAS_STRANDED_AFTER_SECONDS?.trim();
  if (raw === undefined || raw === '') return DEFAULT_DEAD_AFTER_MS;
  if (raw === 'off') return null;
  const n = Number(raw);
  const min = MIN_DEAD_AFTER_MS / 1000;
  // A live but idle worker's last poll can be a minute old: below the minimum a live build could be taken for dead.
  if (!Number.isInteger(n) || n < min) throw invalid(`LBAAS_STRANDED_AFTER_SECONDS: must be an integer of at least ${min} (seconds) or off, got "${raw}"`);
  return n * 1000;
}

function strandedTestTiming(env: NodeJS.ProcessEnv): Pick<WorkerEnv, 'strandedTestTiming'> {
  const raw = env.LBAAS_TEST_STRANDED_TIMING?.trim();
  if (raw === undefined || raw === '') return {};
  const m = /^(\d+)\/(\d+)$/.exec(raw);
  if (!m || Number(m[1]) < 1 || Number(m[2]) < 1) throw invalid(`LBAAS_TEST_STRANDED_TIMING: must be <dead after>/<interval>, both whole seconds of at least 1 (a test setting), got "${raw}"`);
  return { strandedTestTiming: { deadAfterMs: Number(m[1]) * 1000, intervalMs: Number(m[2]) * 1000 } };
}

function drainTimeout(env: NodeJS.ProcessEnv): number {
  const raw = env.LBAAS_DRAIN_TIMEOUT_SECONDS?.trim();
  if (raw === undefined || raw === '') return DEFAULT_DRAIN_TIMEOUT_MS;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw invalid(`LBAAS_DRAIN_TIMEOUT_SECONDS: must be an integer of at least 0 (seconds; 0: no drain), got "${raw}"`);
  return n * 1000;
}

/** When a worker makes its own Version current: `true` always, `'if-none'` while none is, `false` never. */
export type SetCurrentPolicy = boolean | 'if-none';

function setCurrentPolicy(raw: string | undefined): SetCurrentPolicy {
  if (raw === undefined || raw === '' || raw === 'if-none') return 'if-none';
  if (raw === 'false' || raw === '0') return false;
  if (raw === 'true' || raw === '1') return true;
  throw invalid(`LBAAS_SET_CURRENT_VERSION: must be true, false or if-none, got "${raw}"`);
}

function workflowHeap(env: NodeJS.ProcessEnv): { workflowHeapMiB?: number } {
  const raw = env.LBAAS_WORKFLOW_HEAP_MIB;
  if (raw === undefined || raw === '') return {};
  const n = Number(raw);
  if (!Number.isInteger(n) || n < MIN_WORKFLOW_HEAP_MIB) throw invalid(`LBAAS_WORKFLOW_HEAP_MIB: must be an integer of at least ${MIN_WORKFLOW_HEAP_MIB} (MiB), got "${raw}"`);
  return { workflowHeapMiB: n };
}

function cachedWorkflows(env: NodeJS.ProcessEnv): { maxCachedWorkflows?: number } {
  const raw = env.LBAAS_MAX_CACHED_WORKFLOWS;
  if (raw === undefined || raw === '') return {};
  const n = Number(raw);
  // The SDK needs room for at least two runs (one in a task, one waiting); 0 (no cache) would replay every task.
  if (!Number.isInteger(n) || n < 2) throw invalid(`LBAAS_MAX_CACHED_WORKFLOWS: must be an integer of at least 2, got "${raw}"`);
  return { maxCachedWorkflows: n };
}

function bundleFile(file: string): string {
  if (!existsSync(file) || !statSync(file).isFile()) throw invalid(`LBAAS_WORKFLOW_BUNDLE: ${file} is not a file`);
  return file;
}
