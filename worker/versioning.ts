/**
 * Worker Versioning: every lbaas worker polls as one Version of a Worker Deployment (name LBAAS_DEPLOYMENT_NAME,
 * default `lbaas`; build id LBAAS_BUILD_ID, default the package version plus the commit dist/ was built from).
 * Temporal sends a workflow's tasks only to workers of the Version it runs on: PINNED workflows finish on the build
 * that started them, AUTO_UPGRADE ones move to the Deployment's Current Version at their next task
 * (docs/architecture.md#versions-and-patches). Which Version is current is the operator's decision
 * (docs/operations.md#upgrading-lbaas); `lbaas dev`, the tests and the benchmarks make their own build current.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import { invalid } from '../common/errors';
import { isLivePoller } from '../common/pollers';

export const DEFAULT_DEPLOYMENT_NAME = 'lbaas';
/**
 * Temporal's bound on each half of a Version (it builds workflow ids of both, within the 1,000-character id limit);
 * 200 leaves room and is far beyond any name a person types.
 */
const MAX_NAME_LENGTH = 200;
/** gRPC status codes with which Temporal answers for a Deployment or Version that no worker has polled as yet. */
const GRPC_NOT_FOUND = 5;
const GRPC_FAILED_PRECONDITION = 9;
const GRPC_RESOURCE_EXHAUSTED = 8;
const GRPC_ABORTED = 10;

interface BuildInfo {
  version: string;
  commit: string | null;
}

/** What scripts/build-info.js recorded at build time; the package version alone if that file is missing. */
export function buildInfo(distDir = path.join(__dirname, '..')): BuildInfo {
  try {
    const info = JSON.parse(readFileSync(path.join(distDir, 'build-info.json'), 'utf8')) as Partial<BuildInfo>;
    if (typeof info.version === 'string') return { version: info.version, commit: typeof info.commit === 'string' ? info.commit : null };
  } catch {
    // Fall through: a dist/ built without scripts/build-info.js.
  }
  const pkg = JSON.parse(readFileSync(path.join(distDir, '..', 'package.json'), 'utf8')) as { version: string };
  return { version: pkg.version, commit: null };
}

/**
 * `<version>+<first 12 characters of the commit>` (semver's build metadata), or the version alone outside git. Two
 * builds of different code from one commit (uncommitted changes) get the same id: set LBAAS_BUILD_ID for those.
 */
export function defaultBuildId(info: BuildInfo = buildInfo()): string {
  return info.commit ? `${info.version}+${info.commit.slice(0, 12)}` : info.version;
}

/** The Version of a worker given none: Deployment `lbaas`, this build's id. */
export function defaultDeploymentVersion(): WorkerDeploymentVersion {
  return { deploymentName: DEFAULT_DEPLOYMENT_NAME, buildId: defaultBuildId() };
}

/** The worker's Version from LBAAS_DEPLOYMENT_NAME and LBAAS_BUILD_ID; a bad value is `invalid` (exit 2), naming it. */
export function deploymentVersionFromEnv(env: NodeJS.ProcessEnv, info?: BuildInfo): WorkerDeploymentVersion {
  const deploymentName = env.LBAAS_DEPLOYMENT_NAME || DEFAULT_DEPLOYMENT_NAME;
  const buildId = env.LBAAS_BUILD_ID || defaultBuildId(info);
  checkName('LBAAS_DEPLOYMENT_NAME', deploymentName);
  // Temporal writes a Version as `<deployment>.<build id>` and `<deployment>:<build id>`: only the name must avoid both.
  if (/[.:]/.test(deploymentName)) throw invalid(`LBAAS_DEPLOYMENT_NAME: must not contain "." or ":", got "${deploymentName}"`);
  checkName('LBAAS_BUILD_ID', buildId);
  return { deploymentName, buildId };
}

function checkName(variable: string, value: string): void {
  if (value.length > MAX_NAME_LENGTH) throw invalid(`${variable}: at most ${MAX_NAME_LENGTH} characters, got ${value.length}`);
  // Temporal keeps names starting with "__" for itself (`__unversioned__`).
  if (value.startsWith('__')) throw invalid(`${variable}: must not start with "__", got "${value}"`);
  if (/\s/.test(value)) throw invalid(`${variable}: must not contain white space, got "${value}"`);
}

/** `lbaas.0.1.0+1dda8b2c3d4e`: how Temporal's CLI and Web UI show a Version. */
export function versionText(v: WorkerDeploymentVersion): string {
  return `${v.deploymentName}.${v.buildId}`;
}

export interface SetCurrentOptions {
  /** How long to wait for the Version's first poll to reach the server. Default 60 s. */
  timeoutMs?: number;
  identity?: string;
  /**
   * Make the Version current only while the Deployment has none (a first install): a Version made current meanwhile
   * by anyone else wins, and so do unversioned workers polling `taskQueue` (a release without Worker Versioning being
   * drained: docs/operations.md#from-a-release-without-worker-versioning). Default false: switch whatever is current.
   */
  onlyIfNone?: { taskQueue: string };
}

/**
 * What setCurrentVersion did: `set` (this Version is current now), `already` (it was), `other-current` (another Version
 * is current: kept, with `current` naming it), `unversioned-workers` (none is current and unversioned workers poll
 * the task queue: kept so).
 */
export type SetCurrentResult =
  | { result: 'set' | 'already' }
  | { result: 'other-current'; current: WorkerDeploymentVersion }
  | { result: 'unversioned-workers'; taskQueue: string };

/**
 * Makes `version` its Deployment's Current Version, so that new workflows and AUTO_UPGRADE ones go to it; does
 * nothing if it already is. Temporal knows a Version only once one of its workers has polled, so this retries while
 * the server answers that the Deployment or Version does not exist yet (a few hundred ms after the worker starts), and
 * while it is busy: workers of one build started together all ask at once, and the Deployment's own workflow on the
 * server answers some of them RESOURCE_EXHAUSTED ("consistent query buffer is full") or ABORTED (a concurrent change);
 * those retry after a growing, jittered pause (100 ms doubling to 2 s), and most then find the Version current.
 * Task queues that an older Current Version polled and this one does not are not waited for: an lbaas Deployment
 * serves one task queue, and the benchmarks run one Deployment over several.
 *
 * With `onlyIfNone`, the switch carries the conflict token of the describe that found no Current Version: workers of
 * two builds starting together on a fresh install both find none, one switch succeeds, the other is refused
 * (FAILED_PRECONDITION "conflict token mismatch", measured on Temporal 1.29.1; test/ops/first-install.test.ts passes on 1.32.2), describes again and finds the first
 * build current, so they never take turns.
 */
export async function setCurrentVersion(client: Pick<Client, 'workflowService'>, namespace: string, version: WorkerDeploymentVersion, o: SetCurrentOptions = {}): Promise<SetCurrentResult> {
  const service = client.workflowService;
  const deadline = Date.now() + (o.timeoutMs ?? 60_000);
  let busyRetries = 0;
  for (;;) {
    try {
      const d = await service.describeWorkerDeployment({ namespace, deploymentName: version.deploymentName });
      const current = d.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion;
      if (current?.buildId === version.buildId) return { result: 'already' };
      const someCurrent = current?.buildId && current.buildId !== UNVERSIONED ? { deploymentName: current.deploymentName || version.deploymentName, buildId: current.buildId } : null;
      if (o.onlyIfNone && someCurrent) return { result: 'other-current', current: someCurrent };
      if (o.onlyIfNone && (await unversionedPollers(client, namespace, o.onlyIfNone.taskQueue))) return { result: 'unversioned-workers', taskQueue: o.onlyIfNone.taskQueue };
      await service.setWorkerDeploymentCurrentVersion({
        namespace,
        deploymentName: version.deploymentName,
        buildId: version.buildId,
        ignoreMissingTaskQueues: true,
        ...(o.onlyIfNone ? { conflictToken: d.conflictToken } : {}),
        ...(o.identity ? { identity: o.identity } : {}),
      });
      return { result: 'set' };
    } catch (err) {
      const code = (err as { code?: number }).code;
      // FAILED_PRECONDITION is also the answer to a conflict token that no longer matches: describe again.
      const notYetKnown = code === GRPC_NOT_FOUND || code === GRPC_FAILED_PRECONDITION;
      const busy = code === GRPC_RESOURCE_EXHAUSTED || code === GRPC_ABORTED;
      if (!(notYetKnown || busy) || Date.now() > deadline) {
        throw new Error(`could not make ${versionText(version)} the Current Version in namespace ${namespace}: ${(err as Error).message}`, { cause: err });
      }
      busyRetries = busy ? busyRetries + 1 : 0;
      const pauseMs = busy ? Math.random() * Math.min(2_000, 100 * 2 ** busyRetries) : 100;
      await new Promise((r) => setTimeout(r, pauseMs));
    }
  }
}

/** Temporal's build id of "no Version": the Current Version of a Deployment none of whose Versions is current. */
const UNVERSIONED = '__unversioned__';
/** WORKER_VERSIONING_MODE_VERSIONED in Temporal's API. */
const VERSIONED_MODE = 2;

/** Whether a worker without Worker Versioning polls the task queue for workflow tasks. */
async function unversionedPollers(client: Pick<Client, 'workflowService'>, namespace: string, taskQueue: string): Promise<boolean> {
  const r = await client.workflowService.describeTaskQueue({ namespace, taskQueue: { name: taskQueue }, taskQueueType: 1 });
  const now = Date.now();
  return (r.pollers ?? []).some((p) => isLivePoller(p.lastAccessTime, now) && p.deploymentOptions?.workerVersioningMode !== VERSIONED_MODE);
}
