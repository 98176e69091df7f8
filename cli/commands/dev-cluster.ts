/**
 * `lbaas dev --cluster` (`npm run dev:cluster`): what `lbaas dev` brings up, on the production-shaped local cluster
 * instead of the dev server: PostgreSQL and the Temporal services as separate processes (cluster/index.ts, state in
 * .lbaas/cluster), the Engine simulator seeded with the two demo load balancers, a worker, the full-resync Schedule and
 * the example service applied and waited for. Ctrl-C stops everything, servers and database included, also while it
 * is still starting.
 *
 * There is no Web UI here (the dev server bundles one; a cluster runs it as a deployment of its own): `lbaas status`
 * and the `temporal` CLI against the printed address show the same.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { ensureFullResyncSchedule } from '../../client/schedule';
import { LbaasClient } from '../../client/service-client';
import { loadSpecFile } from '../../client/spec-file';
import { startCluster } from '../../cluster';
import { invalid } from '../../common/errors';
import { DEFAULT_TASK_QUEUE } from '../../common/settings';
import { seedDemo, startSimulator } from '../../simulator';
import { startWorker } from '../../worker/start';
import type { CliIo } from '../io';

export interface DevClusterOptions {
  simPort: string;
  example: string;
  /** The cluster's state (database, configuration, logs), kept across runs. */
  stateDir?: string;
  historyHosts: string;
}

/** The simulator's token in development, as in `lbaas dev`: the worker reads it, nothing else needs it. */
const DEV_TOKEN = 'dev-token';

function integer(name: string, value: string, min: number, max: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw invalid(`--${name}: must be an integer from ${min} to ${max}, got "${value}"`);
  return n;
}

/** Runs until SIGINT or SIGTERM, then stops everything it started, in reverse order. */
export async function devCluster(opts: DevClusterOptions, io: CliIo): Promise<void> {
  const simPort = integer('sim-port', opts.simPort, 0, 65535);
  const historyHosts = integer('history-hosts', opts.historyHosts, 1, 8);
  const stateDir = path.resolve(opts.stateDir ?? path.join('.lbaas', 'cluster'));
  const say = (line: string) => io.stderr(`${line}\n`);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  // Validate the example before anything starts.
  const example = await loadSpecFile(opts.example);
  await mkdir(stateDir, { recursive: true });
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
    const cluster = await startCluster({ stateDir, historyHosts, env: io.env, progress: say, reserved: simPort === 0 ? [] : [simPort] });
    stops.push(() => cluster.stop());
    // A server process that dies from here on is told at once, with where to read why (nothing restarts it).
    // The server logs JSON lines with stack traces: the last five lines, each cut at 300 characters.
    const lastLines = (text: string) => text.trim().split('\n').slice(-5).map((l) => (l.length > 300 ? `${l.slice(0, 300)} …` : l));
    for (const p of cluster.processes) p.onUnexpectedExit = (reason) => say([`${reason}; its log: ${p.logFile}, which ends:`, ...lastLines(p.logTail())].join('\n  '));
    checkpoint();
    const sim = await startSimulator({ port: simPort, token: DEV_TOKEN, stateFile: path.join(stateDir, 'engine.json') });
    stops.push(() => sim.close());
    seedDemo(sim.sim);
    const worker = await startWorker({
      temporal: { connection: { address: cluster.address }, namespace: cluster.namespace, taskQueue: DEFAULT_TASK_QUEUE },
      engine: { baseUrl: sim.url, token: DEV_TOKEN },
    });
    stops.push(() => worker.stop());
    const { client } = worker;
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
