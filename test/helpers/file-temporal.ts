/**
 * The Temporal setup of a test file that starts its own workers rather than a whole stack (stack.ts startStack): the
 * file's dev server and namespace, one client for all its tests, and what those tests start, stopped after the last
 * one. Also the two kinds of worker such files start: in-process workers of a Worker Deployment Version that reach
 * no Engine, and `lbaas worker` processes of builds of a Deployment of the file's own.
 */
import { randomUUID } from 'node:crypto';
import { after, before } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import { startSimulator, type RunningSimulator } from '../../simulator';
import { startWorker, type RunningWorker } from '../../worker/start';
import { spawnWorker, type WorkerProcess, type WorkerProcessOptions } from './ops-process';
import { TrackedLbaas } from './ops-services';
import { stopTemporalServer, temporalServer, TEST_TOKEN, workflowBundle } from './stack';
import { until } from './workflows';

/** An Engine address nothing listens on: the workers of these files are never meant to reach one. */
export const NO_ENGINE = 'http://127.0.0.1:9';

export interface FileTemporal {
  readonly address: string;
  readonly namespace: string;
  readonly connection: Connection;
  readonly client: Client;
  /** Runs `fn` after the file's last test, before the connection closes; the latest registered runs first. */
  cleanup(fn: () => unknown): void;
  /**
   * An in-process worker on `taskQueue` polling as `deployment`, making it current only if `setCurrent`; no Engine
   * behind it. Stopped after the last test.
   */
  versionedWorker(taskQueue: string, deployment: WorkerDeploymentVersion, setCurrent: boolean): Promise<RunningWorker>;
  /** Waits until the server lists a poller of `taskQueue`'s workflow tasks (DescribeTaskQueue). */
  untilPolled(taskQueue: string): Promise<unknown>;
  /** An `lbaas worker` process (ops-process.ts spawnWorker) on this file's server and namespace; killed after the last test. */
  workerProcess(o: Omit<WorkerProcessOptions, 'temporalAddress' | 'namespace' | 'token' | 'engineUrl'> & { engineUrl?: string }): WorkerProcess;
}

/**
 * Registers the file's `before` and `after`; the fields are there once `before` has run. `setup` runs in that same
 * `before`, after the connection: Node 20 does not wait for one top-level `before` of a file before the next.
 */
export function fileTemporal(setup?: (t: FileTemporal) => Promise<void>): FileTemporal {
  const cleanups: (() => unknown)[] = [];
  let s: { address: string; namespace: string; connection: Connection; client: Client } | null = null;
  const get = () => {
    if (!s) throw new Error('fileTemporal: used before its before() hook ran');
    return s;
  };
  const t: FileTemporal = {
    get address() {
      return get().address;
    },
    get namespace() {
      return get().namespace;
    },
    get connection() {
      return get().connection;
    },
    get client() {
      return get().client;
    },
    cleanup: (fn) => void cleanups.push(fn),
    async versionedWorker(taskQueue, deployment, setCurrent) {
      const w = await startWorker({
        temporal: { connection: { address: t.address }, namespace: t.namespace, taskQueue },
        engine: { baseUrl: NO_ENGINE, token: TEST_TOKEN },
        workflowBundle: await workflowBundle(),
        shutdownGraceTime: '1s',
        deployment,
        setCurrent,
      });
      t.cleanup(() => w.stop());
      return w;
    },
    untilPolled: (taskQueue) =>
      until(
        `a poller of ${taskQueue} listed`,
        async () => ((await t.client.workflowService.describeTaskQueue({ namespace: t.namespace, taskQueue: { name: taskQueue }, taskQueueType: 1 })).pollers ?? []).length > 0,
        20_000,
        100,
      ),
    workerProcess(o) {
      const w = spawnWorker({ engineUrl: NO_ENGINE, ...o, temporalAddress: t.address, namespace: t.namespace, token: TEST_TOKEN });
      t.cleanup(() => w.kill());
      return w;
    },
  };
  before(async () => {
    const srv = await temporalServer();
    const connection = await Connection.connect({ address: srv.address });
    s = { address: srv.address, namespace: srv.namespace, connection, client: new Client({ connection, namespace: srv.namespace }) };
    await setup?.(t);
  });
  after(async () => {
    // Every cleanup runs, each after the ones registered later: a failed one must not leave the server behind.
    const errors: unknown[] = [];
    for (const fn of cleanups.reverse()) await Promise.resolve().then(fn).catch((err: unknown) => errors.push(err));
    await s?.connection.close();
    await stopTemporalServer();
    if (errors.length > 0) throw new AggregateError(errors, `fileTemporal: ${errors.length} cleanups failed`);
  });
  return t;
}

/**
 * A rollout between builds of this checkout: `lbaas worker` processes of a Worker Deployment of the file's own
 * (LBAAS_DEPLOYMENT_NAME, LBAAS_BUILD_ID), on a task queue of its own, against a simulator whose deploys take
 * 1.5-2.5 s so that a pass lasts long enough to stop its worker in the middle of it.
 */
export interface Rollout {
  readonly t: FileTemporal;
  readonly sim: RunningSimulator;
  readonly lbaas: TrackedLbaas;
  readonly taskQueue: string;
  readonly deploymentName: string;
  /** A worker of `buildId`; `setCurrent` as LBAAS_SET_CURRENT_VERSION. */
  worker(buildId: string, setCurrent: boolean, more?: Pick<WorkerProcessOptions, 'metricsAddress' | 'extraEnv'>): WorkerProcess;
  /** The build of the Deployment's Current Version (undefined while the Deployment is unknown or has none). */
  currentBuild(): Promise<string | undefined>;
  /** Waits until `buildId` is the Current Version. */
  untilCurrent(buildId: string): Promise<unknown>;
  /** Waits until the first pass of `uid` has created (and tagged) `n` objects: it is in the middle of its work. */
  untilTagged(uid: string, n: number): Promise<unknown>;
}

export function rollout(o: { name: string; seed: number }): Rollout {
  const taskQueue = `ops-${o.name}-${randomUUID()}`;
  const deploymentName = `${o.name}-${randomUUID().slice(0, 8)}`;
  let parts: { sim: RunningSimulator; lbaas: TrackedLbaas } | null = null;
  const get = () => {
    if (!parts) throw new Error('rollout: used before its before() hook ran');
    return parts;
  };
  const t = fileTemporal(async () => {
    const sim = await startSimulator({ port: 0, token: TEST_TOKEN, deployMs: { min: 1500, max: 2500 }, seed: o.seed });
    const lbaas = new TrackedLbaas(t.client, taskQueue);
    parts = { sim, lbaas };
    // After the last test the workers (registered later) are killed first, then the controllers end, then the simulator.
    t.cleanup(() => sim.close());
    t.cleanup(() => lbaas.cleanup());
  });
  const currentBuild = async () =>
    (await t.client.workflowService.describeWorkerDeployment({ namespace: t.namespace, deploymentName }).catch(() => undefined))?.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId ?? undefined;
  return {
    t,
    get sim() {
      return get().sim;
    },
    get lbaas() {
      return get().lbaas;
    },
    taskQueue,
    deploymentName,
    worker: (buildId, setCurrent, more = {}) =>
      t.workerProcess({ taskQueue, engineUrl: get().sim.url, setCurrent, ...more, extraEnv: { ...more.extraEnv, LBAAS_DEPLOYMENT_NAME: deploymentName, LBAAS_BUILD_ID: buildId } }),
    currentBuild,
    untilCurrent: (buildId) => until(`build ${buildId} current`, async () => (await currentBuild()) === buildId, 30_000, 100),
    untilTagged: (uid, n) => until(`${n} objects of ${uid} tagged`, () => get().sim.objects().filter((x) => x.tags.includes(`anxccm-svc-uid=${uid}`)).length >= n, 60_000, 20),
  };
}
