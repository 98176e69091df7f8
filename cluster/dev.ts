/**
 * `npm run dev:cluster`: what `lbaas dev` brings up, on the production-shaped local cluster instead of the dev
 * server: PostgreSQL and the Temporal services as separate processes (cluster/index.ts), the Engine simulator seeded
 * with the two demo load balancers, a worker, the full-resync Schedule and the example service applied and waited
 * for. Ctrl-C stops everything, servers and database included.
 *
 *   node dist/cluster/dev.js [--state-dir .lbaas/cluster] [--sim-port 8090] [--example examples/service.yaml]
 *                            [--history-hosts 2]
 *
 * There is no Web UI here (the dev server bundles one; a cluster runs it as a separate deployment); the CLI's status
 * and Temporal's `temporal workflow` commands against the printed address show the same.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { EngineClient } from '../activities/engine';
import { ensureFullResyncSchedule } from '../client/schedule';
import { LbaasClient } from '../client/service-client';
import { DEFAULT_TASK_QUEUE } from '../client/settings';
import { loadSpecFile } from '../client/spec-file';
import { seedDemo, startSimulator } from '../simulator';
import { createLbaasWorker } from '../worker/main';
import { startCluster } from './index';

/** The simulator's token in development, as in `lbaas dev`: the worker reads it, nothing else needs it. */
const DEV_TOKEN = 'dev-token';

export interface DevClusterOptions {
  /** The cluster's state (database, configuration, logs), kept across runs. */
  stateDir: string;
  simPort: number;
  example: string;
  historyHosts: number;
}

export interface DevIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
}

/** Runs until SIGINT or SIGTERM, then stops everything it started, in reverse order. */
export async function devCluster(opts: DevClusterOptions, io: DevIo): Promise<void> {
  const say = (line: string) => io.stderr(`${line}\n`);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const example = await loadSpecFile(opts.example);
  await mkdir(opts.stateDir, { recursive: true });
  // Ctrl-C during start-up must stop what has started so far, not leave it running.
  let interrupted = false;
  let wake = () => {};
  const onSignal = () => {
    interrupted = true;
    wake();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const stops: (() => Promise<void>)[] = [];
  const checkpoint = () => {
    if (interrupted) throw new Error('interrupted');
  };
  try {
    const cluster = await startCluster({ stateDir: path.join(opts.stateDir), historyHosts: opts.historyHosts, env: io.env, progress: say });
    stops.push(() => cluster.stop());
    checkpoint();
    const sim = await startSimulator({ port: opts.simPort, token: DEV_TOKEN, stateFile: path.join(opts.stateDir, 'engine.json') });
    stops.push(() => sim.close());
    seedDemo(sim.sim);

    const connection = await Connection.connect({ address: cluster.address });
    const nativeConnection = await NativeConnection.connect({ address: cluster.address });
    stops.push(() => connection.close());
    stops.push(() => nativeConnection.close());
    const client = new Client({ connection, namespace: cluster.namespace });
    const engine = new EngineClient({ baseUrl: sim.url, token: DEV_TOKEN });
    stops.push(() => engine.close());
    const worker = await createLbaasWorker({ connection: nativeConnection, namespace: cluster.namespace, taskQueue: DEFAULT_TASK_QUEUE, engine, temporalClient: client });
    const running = worker.run();
    stops.push(async () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
    });
    await ensureFullResyncSchedule(client, { taskQueue: DEFAULT_TASK_QUEUE, every: '10m' });
    checkpoint();

    io.stdout(
      [
        `Temporal cluster    ${cluster.address} (namespace ${cluster.namespace}, task queue ${DEFAULT_TASK_QUEUE})`,
        ...cluster.processes.map((p) => `  ${p.name.padEnd(17)} pid ${p.pid}, gRPC 127.0.0.1:${p.grpcPort}`),
        `  ${'postgresql'.padEnd(17)} pid ${cluster.postgres.pid}, 127.0.0.1:${cluster.postgres.port}`,
        `state and logs      ${cluster.workDir}`,
        `Engine simulator    ${sim.url} (token ${DEV_TOKEN}; admin API ${sim.url}/_sim/objects)`,
        `full resync         Schedule lbaas-full-resync, every 10m`,
        '',
      ].join('\n'),
    );
    const lbaas = new LbaasClient(client, DEFAULT_TASK_QUEUE);
    const started = Date.now();
    const { revision } = await lbaas.apply(example.raw, example.spec);
    io.stdout(`applied ${opts.example}: service ${example.spec.serviceUid} revision ${revision}, waiting for it to converge …\n`);
    const result = await lbaas.waitConverged(example.spec.serviceUid, revision);
    io.stdout(`${result.converged ? 'converged' : `not converged: ${result.error ?? ''}`} on ${Object.keys(result.loadBalancers).length} load balancers in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    for (const [address, ports] of Object.entries(result.status)) io.stdout(`  ${address.padEnd(16)} ${ports.join(', ')}\n`);
    io.stdout(`try: TEMPORAL_ADDRESS=${cluster.address} node bin/lbaas.js status ${example.spec.serviceUid}   (Ctrl-C stops everything)\n`);

    if (!interrupted) await new Promise<void>((resolve) => (wake = resolve));
    say('stopping …');
  } catch (err) {
    if (!interrupted) throw err;
    say('interrupted; stopping what has started …');
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    for (const stop of stops.reverse()) await stop().catch((e: Error) => say(`stop: ${e.message}`));
  }
}

function intArg(name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`--${name}: expected an integer from ${min} to ${max}, got "${value}"`);
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'state-dir': { type: 'string' },
      'sim-port': { type: 'string' },
      example: { type: 'string' },
      'history-hosts': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write('usage: npm run dev:cluster -- [--state-dir .lbaas/cluster] [--sim-port 8090] [--example examples/service.yaml] [--history-hosts 2]\n');
    return;
  }
  await devCluster(
    {
      stateDir: path.resolve(values['state-dir'] ?? path.join('.lbaas', 'cluster')),
      simPort: intArg('sim-port', values['sim-port'], 8090, 0, 65535),
      example: values.example ?? 'examples/service.yaml',
      historyHosts: intArg('history-hosts', values['history-hosts'], 2, 1, 8),
    },
    { stdout: (t) => process.stdout.write(t), stderr: (t) => process.stderr.write(t), env: process.env },
  );
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`dev:cluster: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
}
