/**
 * Connecting the CLI to Temporal, with the exit codes of docs/cli.md#exit-codes: settings that cannot be read are
 * invalid input (2); a server that does not answer within CONNECT_TIMEOUT_MS is unreachable (4), reported as
 * `cannot reach Temporal at <address> (namespace <ns>): <reason>`, with the reason found by a plain TCP probe when
 * gRPC only says that the deadline passed.
 */
import net from 'node:net';
import { Client, Connection, isGrpcServiceError, ServiceError, WorkflowFailedError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { NamespaceNotFoundError, WorkflowNotFoundError } from '@temporalio/common';
import { CliError, EXIT, invalid, unreachable } from '../common/errors';
import { LbaasClient } from '../client/service-client';
import { searchAttributes } from '../contract';
import { clientConnectionOptions, temporalSettings, type TemporalSettings } from '../common/settings';
import { buildView, type BuildView } from './views';
import { currentTracing, installTracing } from '../common/tracing';

/** A CLI command gives up on an unreachable server after this long: long enough for a remote cluster over TLS. */
const CONNECT_TIMEOUT_MS = 5_000;
/** How long the TCP probe that explains a failed connection may take. */
const PROBE_TIMEOUT_MS = 2_000;

export interface Temporal {
  settings: TemporalSettings;
  connection: Connection;
  client: Client;
  lbaas: LbaasClient;
}

/** Reads the Temporal settings; unreadable settings (a missing profile, a broken temporal.toml) exit 2. */
function readSettings(env: NodeJS.ProcessEnv): TemporalSettings {
  try {
    return temporalSettings(env);
  } catch (err) {
    throw invalid(`Temporal settings: ${(err as Error).message}`);
  }
}

export async function connect(env: NodeJS.ProcessEnv): Promise<Temporal> {
  const settings = readSettings(env);
  // With OTEL_EXPORTER_OTLP_*ENDPOINT set, each start, update and signal is a span whose context the workflows carry
  // on. Read first: bad tracing settings are invalid input, whether Temporal answers or not.
  const tracing = installTracing(env, 'lbaas');
  const { address } = settings.connection;
  // A refused connection or an unknown host is known in milliseconds, while gRPC would keep trying until its
  // deadline: probe first so that a mistyped address fails at once.
  const target = splitAddress(address);
  const probe = target ? await tcpProbe(target.host, target.port) : null;
  if (probe?.definitive) throw unreachable(`${where(settings)}: ${probe.reason}`);
  let connection: Connection;
  try {
    connection = await Connection.connect({ ...clientConnectionOptions(settings), connectTimeout: CONNECT_TIMEOUT_MS });
  } catch (err) {
    const grpcMessage = (err as Error)?.message ?? String(err);
    const why = !target
      ? `${grpcMessage} (the address is not host:port)`
      : probe
        ? `${probe.reason}; ${grpcMessage}`
        : `${address} accepts TCP connections, but no Temporal answer came within ${CONNECT_TIMEOUT_MS / 1000}s (do the TLS settings match?): ${grpcMessage}`;
    throw unreachable(`${where(settings)}: ${why}`);
  }
  const client = new Client({ connection, namespace: settings.namespace, ...(tracing ? { interceptors: { workflow: tracing.clientInterceptors() } } : {}) });
  return { settings, connection, client, lbaas: new LbaasClient(client, settings.taskQueue) };
}

/**
 * Connects, runs `fn`, closes the connection whatever happens (so that the process can exit even while a long poll
 * is still in flight), and turns Temporal's connectivity errors into exit 4.
 */
export async function withTemporal<T>(env: NodeJS.ProcessEnv, fn: (t: Temporal) => Promise<T>): Promise<T> {
  const t = await connect(env);
  try {
    return await fn(t);
  } catch (err) {
    throw temporalError(err, t.settings) ?? err;
  } finally {
    await t.connection.close().catch(() => undefined);
    // The CLI exits right after: export the command's spans now.
    await currentTracing()?.shutdown();
  }
}

/** gRPC's status code names, by code. */
const GRPC_STATUS_NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
] as const;

/**
 * The CliError for an error of a call to Temporal: one that means Temporal cannot be used at all (unreachable, no such
 * namespace) exits 4; any other the SDK wraps as a ServiceError names the server's status and details after the
 * SDK's message, which only names the call ("Failed to list workflows"). Never the call's metadata: it holds the API
 * key. Null for an error that is not Temporal's.
 */
export function temporalError(err: unknown, settings: TemporalSettings): CliError | null {
  if (err instanceof CliError) return err;
  if (err instanceof NamespaceNotFoundError) return unreachable(`${where(settings)}: the namespace does not exist`);
  const grpc = err instanceof ServiceError ? err.cause : err;
  if (isGrpcServiceError(grpc)) {
    // 14 UNAVAILABLE, 4 DEADLINE_EXCEEDED (the SDK already retried), 16 UNAUTHENTICATED, 7 PERMISSION_DENIED.
    if (grpc.code === 14 || grpc.code === 4) return unreachable(`${where(settings)}: ${grpc.details || grpc.message}`);
    if (grpc.code === 16 || grpc.code === 7) return unreachable(`${where(settings)}: not allowed: ${grpc.details || grpc.message}`);
    if (grpc.code === 5 && /namespace/i.test(grpc.details)) return unreachable(`${where(settings)}: ${grpc.details}`);
  }
  // "Workflow execution failed" says nothing; the innermost cause says what went wrong.
  if (err instanceof WorkflowFailedError || err instanceof WorkflowUpdateFailedError) return new CliError(innermost(err), EXIT.failed);
  if (err instanceof ServiceError && isGrpcServiceError(grpc)) {
    const status = GRPC_STATUS_NAMES[grpc.code] ?? `gRPC status ${grpc.code}`;
    return new CliError(`${err.message}: ${status}: ${grpc.details || '(no details)'}`, EXIT.failed);
  }
  return null;
}

export function innermost(err: unknown): string {
  let e = err as { message?: string; cause?: unknown } | undefined;
  while (e && typeof e === 'object' && e.cause && typeof e.cause === 'object') e = e.cause as typeof e;
  return e?.message ?? String(err);
}

/**
 * How long a command keeps asking for pollers before it warns that no worker polls: 3 s. Temporal lists a poller
 * only once its poll has reached the task queue's root partition (DescribeTaskQueue reads that one), which can lag
 * a worker's start by a moment, longest on a cluster whose task queues have several partitions. A command cannot
 * get an answer without a worker anyway, so waiting this long costs nothing when there is none.
 */
export const NO_WORKER_GRACE_MS = 3_000;
/** How often the pollers are asked during the grace. */
const POLLERS_EVERY_MS = 250;

/**
 * A warning on stderr when no worker polls the task queue (the settings' one unless given): the command would
 * otherwise wait in silence. A worker polling for workflow or for activity tasks counts; the first answer that lists
 * one ends the check at once, so a running worker costs one round trip. Best effort: a server that does not answer
 * the question is not an error here.
 */
export async function warnIfNoWorker(t: Temporal, stderr: (text: string) => void, taskQueue = t.settings.taskQueue, graceMs = NO_WORKER_GRACE_MS): Promise<boolean> {
  const until = Date.now() + graceMs;
  for (;;) {
    try {
      const pollers = await pollersOf(t, taskQueue);
      if (pollers.length > 0) return await warnIfNoCurrentVersion(t, stderr, taskQueue, pollers);
    } catch {
      return true; // Not knowing is fine.
    }
    if (Date.now() >= until) break;
    await new Promise((resolve) => setTimeout(resolve, Math.min(POLLERS_EVERY_MS, Math.max(0, until - Date.now()))));
  }
  stderr(`warning: no worker has polled task queue ${taskQueue} recently; nothing happens until one runs (lbaas worker)\n`);
  return false;
}

async function pollersOf(t: Temporal, taskQueue: string): Promise<Poller[]> {
  // 1: workflow task queue, 2: activity task queue (TaskQueueType in Temporal's API).
  const answers = await Promise.all(
    [1, 2].map((taskQueueType) => t.client.workflowService.describeTaskQueue({ namespace: t.settings.namespace, taskQueue: { name: taskQueue }, taskQueueType })),
  );
  return answers.flatMap((r) => r.pollers ?? []);
}

/** The protocol's WORKER_VERSIONING_MODE_VERSIONED: a worker that receives only the tasks of its own Version. */
const VERSIONED_MODE = 2;
type Poller = { deploymentOptions?: { deploymentName?: string | null; buildId?: string | null; workerVersioningMode?: number | null } | null };

/**
 * Workers that all poll as Versions of a Worker Deployment without a Current Version receive nothing. A first
 * worker makes its build current itself; this is what is left when it did not (LBAAS_SET_CURRENT_VERSION=false,
 * unversioned workers polling beside it, a check that failed: docs/operations.md#first-install).
 */
async function warnIfNoCurrentVersion(t: Temporal, stderr: (text: string) => void, taskQueue: string, pollers: readonly Poller[]): Promise<boolean> {
  const versioned = pollers.map((p) => p.deploymentOptions).filter((d) => d?.workerVersioningMode === VERSIONED_MODE && d.deploymentName && d.buildId);
  if (versioned.length < pollers.length) return true;
  const deployments = [...new Set(versioned.map((d) => d?.deploymentName as string))];
  let ok = true;
  for (const deploymentName of deployments) {
    const d = await t.client.workflowService.describeWorkerDeployment({ namespace: t.settings.namespace, deploymentName });
    if (d.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId) continue;
    const builds = [...new Set(versioned.filter((v) => v?.deploymentName === deploymentName).map((v) => v?.buildId as string))].sort();
    stderr(
      `warning: the workers on task queue ${taskQueue} (Worker Deployment ${deploymentName}, builds ${builds.join(', ')}) receive nothing: ` +
        `no build is current (temporal worker deployment set-current-version --deployment-name ${deploymentName} --build-id ${builds[0]})\n`,
    );
    ok = false;
  }
  return ok;
}

/** Why a call that needs a worker may not have been answered, for timeout messages. */
export const noAnswerHint = (taskQueue: string) => `is a worker polling task queue ${taskQueue}?`;

function where(settings: TemporalSettings): string {
  return `cannot reach Temporal at ${settings.connection.address} (namespace ${settings.namespace})`;
}

function splitAddress(address: string): { host: string; port: number } | null {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(address.replace(/^[a-z]+:\/\//i, ''));
  if (!m) return null;
  const port = Number(m[3]);
  return port >= 1 && port <= 65535 ? { host: (m[1] ?? m[2]) as string, port } : null;
}

/**
 * Why a TCP connection to host:port fails, or null when it succeeds (then TLS, auth or the protocol is at fault).
 * `definitive`: refused or no such host, not worth waiting for; a probe that only timed out leaves the verdict to gRPC.
 */
function tcpProbe(host: string, port: number): Promise<{ reason: string; definitive: boolean } | null> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (r: { reason: string; definitive: boolean } | null) => {
      socket.destroy();
      resolve(r);
    };
    socket.setTimeout(PROBE_TIMEOUT_MS, () => done({ reason: `no answer from ${host}:${port} within ${PROBE_TIMEOUT_MS / 1000}s`, definitive: false }));
    socket.once('connect', () => done(null));
    socket.once('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'ECONNREFUSED') done({ reason: `connection refused by ${host}:${port}`, definitive: true });
      else if (e.code === 'ENOTFOUND') done({ reason: `host ${host} not found`, definitive: true });
      else done({ reason: `${e.code ?? 'error'}: ${e.message}`, definitive: false });
    });
  });
}

/**
 * Makes sure the service has a running controller and returns its task queue and load balancers (its
 * LbaasLoadBalancers search attribute, which needs no worker to read). An unknown service is invalid input
 * (exit 2): the uid names nothing this Temporal namespace knows; one whose controller has ended (deleted,
 * terminated) likewise.
 */
export async function requireController(t: Temporal, uid: string): Promise<{ taskQueue: string; loadBalancers: string[]; build: BuildView | null }> {
  const workflowId = `lbaas/${uid}`;
  let d: Awaited<ReturnType<WorkflowHandle['describe']>>;
  try {
    d = await t.lbaas.controller(uid).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw invalid(`no controller for service ${uid} (no workflow ${workflowId} in namespace ${t.settings.namespace})`);
    throw err;
  }
  const status = d.status.name;
  if (status !== 'RUNNING') throw invalid(`service ${uid} has no running controller (workflow ${workflowId} is ${status.toLowerCase().replace(/_/g, ' ')})`);
  return { taskQueue: d.taskQueue, loadBalancers: d.typedSearchAttributes.get(searchAttributes.loadBalancers) ?? [], build: buildView(d.raw.workflowExecutionInfo?.versioningInfo) };
}
