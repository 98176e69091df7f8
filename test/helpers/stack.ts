/**
 * The real parts every workflow test runs on: a Temporal dev server (the one `npm test` started, found through
 * LBAAS_TEST_TEMPORAL_ADDRESS, or one of its own when a file runs alone), the Engine simulator over real HTTP, and
 * a worker on a task queue of the test's own.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import { EngineClient, type EngineClientOptions } from '../../activities/engine';
import type { ActivitiesOptions } from '../../activities';
import { startDevServer, type DevServer } from '../../dev/devserver';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '../../simulator';
import { startWorker, type RunningWorker } from '../../worker/start';
import { workflowBundle } from './bundle';
import { namespaceOfTestFile } from './namespace';
import { stopWhenThisProcessDies, type Reaper } from './reaper';

export { workflowBundle };

// Worker lifecycle INFO lines drown the test report; warnings and errors still show.
Runtime.install({ logger: new DefaultLogger('WARN') });

export const TEST_TOKEN = 'test-token-7f3a9c1e5b2d4068';

export interface TemporalTestServer {
  address: string;
  namespace: string;
  own: DevServer | null;
  /** Stops `own` if this process dies before stopTemporalServer (a worker crash aborts it). */
  reaper: Reaper | null;
}

let server: Promise<TemporalTestServer> | null = null;
export function temporalServer(): Promise<TemporalTestServer> {
  server ??= (async () => {
    const address = process.env.LBAAS_TEST_TEMPORAL_ADDRESS;
    // `npm test` registered a namespace for this file (test/helpers/namespace.ts).
    if (address) return { address, namespace: namespaceOfTestFile(process.argv[1] ?? '') ?? 'default', own: null, reaper: null };
    const own = await startDevServer({});
    const reaper = own.process.pid === undefined ? null : stopWhenThisProcessDies(own.process.pid);
    return { address: own.address, namespace: own.namespace, own, reaper };
  })();
  return server;
}

export interface Stack {
  client: Client;
  connection: Connection;
  nativeConnection: NativeConnection;
  sim: RunningSimulator;
  engine: EngineClient;
  taskQueue: string;
  namespace: string;
  /** Starts a worker on the stack's task queue; it runs until stopWorker or stop. */
  startWorker(opts?: { activities?: ActivitiesOptions; identity?: string }): Promise<Worker>;
  stopWorker(): Promise<void>;
  stop(): Promise<void>;
}

export async function startStack(
  opts: { sim?: SimulatorOptions; worker?: boolean; activities?: ActivitiesOptions; engine?: Pick<EngineClientOptions, 'pacing'> } = {},
): Promise<Stack> {
  const srv = await temporalServer();
  const sim = await startSimulator({ port: 0, token: TEST_TOKEN, deployMs: { min: 20, max: 60 }, seed: 7, ...opts.sim });
  const engine = new EngineClient({ baseUrl: sim.url, token: TEST_TOKEN, ...opts.engine });
  const connection = await Connection.connect({ address: srv.address });
  const nativeConnection = await NativeConnection.connect({ address: srv.address });
  const client = new Client({ connection, namespace: srv.namespace });
  const taskQueue = `test-${randomUUID()}`;
  let worker: RunningWorker | null = null;
  const stack: Stack = {
    client,
    connection,
    nativeConnection,
    sim,
    engine,
    taskQueue,
    namespace: srv.namespace,
    async startWorker(w = {}) {
      if (worker) throw new Error('a worker is already running');
      worker = await startWorker({
        temporal: { connection: { address: srv.address }, namespace: srv.namespace, taskQueue },
        connections: { native: nativeConnection, client },
        engine,
        workflowBundle: await workflowBundle(),
        activities: w.activities ?? opts.activities ?? {},
        shutdownGraceTime: '1s',
        ...(w.identity ? { identity: w.identity } : {}),
      });
      return worker.worker;
    },
    async stopWorker() {
      if (!worker) return;
      const stopping = worker;
      worker = null;
      await stopping.stop();
    },
    async stop() {
      await stack.stopWorker();
      await connection.close();
      await nativeConnection.close();
      await engine.close();
      await sim.close();
    },
  };
  if (opts.worker !== false) await stack.startWorker();
  return stack;
}

/** Stops the file's own dev server, if it started one. Call from the file's last `after`. */
export async function stopTemporalServer(): Promise<void> {
  const s = server ? await server : null;
  await s?.own?.stop();
  s?.reaper?.cancel();
  server = null;
}
