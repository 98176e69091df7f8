/**
 * The fast workflow tests' Temporal (test/fast): Temporal's time-skipping test server (dev/test-server.ts installs
 * it), one per test file, since its clock is one for the whole server. The test's client unlocks time while it awaits
 * a workflow's result and in `env.sleep(ms)`, which moves the server's clock on by `ms` at once when nothing else is
 * running; otherwise the clock runs in real time.
 *
 * The server is started here and not by `TestWorkflowEnvironment.createTimeSkipping`: the SDK gives a server 5 s to
 * answer, and a JVM starting on a busy 2-core machine (several test files start theirs at once) takes longer. The
 * environment is then made over the running server with the SDK's own constructor (the private `create` that
 * `createTimeSkipping` calls, with the server marked existing), so that its client skips time as the SDK's does.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor, type ConnectionOptions } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { drawPort } from '../../common/ports';
import { SEARCH_ATTRIBUTE_SDK_TYPES, SEARCH_ATTRIBUTES } from '../../dev/devserver';
import { ensureTestServer } from '../../dev/test-server';

export interface TimeSkippingServer {
  env: TestWorkflowEnvironment;
  address: string;
  stop(): Promise<void>;
}

/** Long, as the JVM can take tens of seconds on a loaded machine; a line on stderr says what is awaited. */
const START_TIMEOUT_MS = 120_000;

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

/** Starts the server on a free port and waits until it listens (it binds last, once its services are built). */
async function launch(launcher: string): Promise<{ child: ChildProcess; port: number }> {
  const port = await drawPort(new Set());
  const child = spawn(launcher, [String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString('utf8')).slice(-4000)));
  let exited: string | null = null;
  child.once('exit', (code, signal) => (exited = `exited with ${signal ?? `code ${code}`}`));
  child.once('error', (err) => (exited = err.message));
  const started = Date.now();
  let told = false;
  for (;;) {
    if (exited !== null) throw new Error(`the time-skipping test server (${launcher} ${port}) ${exited}${stderr ? `:\n${stderr}` : ''}`);
    if (await portOpen(port)) return { child, port };
    const waited = Date.now() - started;
    if (waited > START_TIMEOUT_MS) {
      child.kill('SIGKILL');
      throw new Error(`the time-skipping test server (${launcher} ${port}) did not listen within ${START_TIMEOUT_MS / 1000} s${stderr ? `:\n${stderr}` : ''}`);
    }
    if (!told && waited > 10_000) {
      told = true;
      process.stderr.write(`[fast] still waiting for the time-skipping test server to listen on port ${port} (a JVM starting on a busy machine)\n`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

type Interceptor = NonNullable<ConnectionOptions['interceptors']>[number];

/**
 * The test server loses a query that comes while a workflow task is running when that task ends the run (a
 * continue-as-new, say): it keeps the query for the next workflow task of the run, which never comes, and answers
 * nothing until the query's deadline (seen in a thread dump of the stalled server: the query waiting for ever). The client
 * library's queries have none, so such a query waited until its connection went away: up to the test server's GOAWAY
 * at the client's third 30 s keepalive ping (test/fast stalled about 80 s) or for ever with fewer pings. So each query
 * to it gets a deadline, and is sent again when that passes: the workflow id then names the run that continues.
 */
const QUERY_DEADLINE_MS = 5_000;
const QUERY_ATTEMPTS = 8;
const DEADLINE_EXCEEDED = 4;

/** The client library's default retry of calls, and for queries a deadline for each attempt, its end retried too. */
function clientInterceptors(): Interceptor[] {
  const defaults = defaultGrpcRetryOptions();
  const retryOthers = makeGrpcRetryInterceptor(defaults);
  const retryQueries = makeGrpcRetryInterceptor({
    delayFunction: defaults.delayFunction,
    retryableDecider: (attempt, status) => defaults.retryableDecider(attempt, status) || (status.code === DEADLINE_EXCEEDED && attempt < QUERY_ATTEMPTS),
  });
  return [
    (options, next) => {
      if (!options.method_definition.path.endsWith('/QueryWorkflow') || options.deadline !== undefined) return retryOthers(options, next);
      // The retry starts every attempt, the first too, through this `next`.
      return retryQueries(options, (o) => next({ ...o, deadline: Date.now() + QUERY_DEADLINE_MS }));
    },
  ];
}

/**
 * The client's keepalive pings no more often than the test server allows: it permits one ping per 5 minutes and
 * answers the third early one with a GOAWAY (too_many_pings), which fails every call of the client in flight (sent
 * again by the retry). The client library pings every 30 s by default. The worker's connection is the core's.
 */
const CLIENT_CHANNEL_ARGS = { 'grpc.keepalive_time_ms': 6 * 60_000 };

type EnvFactory = {
  create(o: {
    server: { type: 'existing' };
    address: string;
    namespace: string;
    supportsTimeSkipping: boolean;
    connectionOptions: Pick<ConnectionOptions, 'channelArgs' | 'interceptors'>;
  }): Promise<TestWorkflowEnvironment>;
};

/** A time-skipping server of this file's own and the SDK's test environment over it. */
export async function startTimeSkippingServer(): Promise<TimeSkippingServer> {
  const launcher = await ensureTestServer({ progress: (l) => process.stderr.write(`[fast] ${l}\n`) });
  const { child, port } = await launch(launcher);
  const address = `127.0.0.1:${port}`;
  try {
    const env = await (TestWorkflowEnvironment as unknown as EnvFactory).create({
      server: { type: 'existing' },
      address,
      namespace: 'default',
      supportsTimeSkipping: true,
      connectionOptions: { channelArgs: CLIENT_CHANNEL_ARGS, interceptors: clientInterceptors() },
    });
    await registerSearchAttributes(env);
    return {
      env,
      address,
      async stop() {
        await env.teardown();
        if (child.exitCode === null && child.signalCode === null) {
          const gone = new Promise((r) => child.once('exit', r));
          child.kill('SIGTERM');
          await gone;
        }
      },
    };
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
}

/**
 * The custom search attributes, as the dev server registers them (dev/devserver.ts): the test server refuses an
 * upsert of an unregistered one. Its operator service registers them but never completes the call (the request is
 * answered without an end of stream), so the call is cut off after a short deadline; the workflows' upserts are what
 * proves the registration.
 */
async function registerSearchAttributes(env: TestWorkflowEnvironment): Promise<void> {
  const searchAttributes = Object.fromEntries(
    Object.entries(SEARCH_ATTRIBUTES).map(([name, type]) => [name, encodeSearchAttributeIndexedValueType(SEARCH_ATTRIBUTE_SDK_TYPES[type]) as number]),
  );
  try {
    await env.connection.withDeadline(Date.now() + 2_000, () => env.connection.operatorService.addSearchAttributes({ namespace: env.namespace ?? 'default', searchAttributes }));
  } catch (err) {
    // 4 = DEADLINE_EXCEEDED
    if ((err as { code?: number }).code !== 4) throw err;
  }
}
