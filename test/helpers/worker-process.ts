/**
 * An lbaas worker as a process of its own, for tests that kill one for real (SIGKILL) and start another.
 *
 * Everything comes from the environment, the Engine token included (it is never an argument, so it never shows in a
 * process list):
 *   TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE (default "default"), LBAAS_TASK_QUEUE, ANEXIA_ENGINE_URL, ANEXIA_TOKEN,
 *   LBAAS_WORKER_IDENTITY (optional), LBAAS_WORKFLOW_BUNDLE (optional: a prebuilt bundle's code file; the workflows
 *   are bundled from source otherwise), LBAAS_READINESS_POLL_MS (optional: first readiness poll interval).
 * Prints one line `worker ready` on stdout once it polls; SIGTERM/SIGINT shut it down gracefully.
 */
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { EngineClient } from '../../activities/engine';
import { createLbaasWorker } from '../../worker/main';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name}: required`);
  return value;
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const engine = new EngineClient({ baseUrl: required('ANEXIA_ENGINE_URL'), token: required('ANEXIA_TOKEN') });
  const address = required('TEMPORAL_ADDRESS');
  const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
  const connection = await NativeConnection.connect({ address });
  const clientConnection = await Connection.connect({ address });
  const bundle = process.env.LBAAS_WORKFLOW_BUNDLE;
  const poll = Number(process.env.LBAAS_READINESS_POLL_MS ?? '');
  const worker = await createLbaasWorker({
    connection,
    namespace,
    taskQueue: required('LBAAS_TASK_QUEUE'),
    engine,
    temporalClient: new Client({ connection: clientConnection, namespace }),
    ...(bundle ? { workflowBundle: { codePath: bundle } } : {}),
    ...(poll > 0 ? { activities: { readiness: { pollFirstMs: poll, pollMaxMs: poll * 4 } } } : {}),
    shutdownGraceTime: '1s',
    ...(process.env.LBAAS_WORKER_IDENTITY ? { identity: process.env.LBAAS_WORKER_IDENTITY } : {}),
  });
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => worker.shutdown());
  const running = worker.run();
  process.stdout.write('worker ready\n');
  try {
    await running;
  } finally {
    await connection.close();
    await clientConnection.close();
    await engine.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`worker-process: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
