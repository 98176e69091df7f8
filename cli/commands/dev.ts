/**
 * `lbaas dev` (`npm start`): the whole local stack on embedded defaults. A Temporal dev server with the Web UI
 * (state in .lbaas/temporal.db), the Engine simulator seeded with the two demo load balancers (state in
 * .lbaas/engine.json), a worker, the full-resync Schedule, and the example service applied. Ctrl-C stops all.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { ensureFullResyncSchedule } from '../../client/schedule';
import { LbaasClient } from '../../client/service-client';
import { loadSpecFile } from '../../client/spec-file';
import { invalid } from '../../common/errors';
import { installTracing } from '../../common/tracing';
import { DEFAULT_TASK_QUEUE } from '../../common/settings';
import { workflowIds } from '../../contract';
import { DevServerAbortedError, startDevServer } from '../../dev/devserver';
import { ensureTemporalServer } from '../../dev/temporal-server';
import { DEMO_LOAD_BALANCERS, seedDemo, startSimulator } from '../../simulator';
import { startWorker } from '../../worker/start';
import { deploymentVersionFromEnv, versionText } from '../../worker/versioning';
import type { CliIo } from '../io';
import { watchPickup } from '../wait';
import { startDevKube } from './dev-kube';

export interface DevOptions {
  uiPort: string;
  port: string;
  simPort: string;
  db?: string;
  example: string;
  /** Also a local Kubernetes API server with lbaas kube acting on it (cli/commands/dev-kube.ts). */
  kube?: boolean;
}

/** The simulator's token in development: the worker reads it, nothing else needs it. */
const DEV_TOKEN = 'dev-token';

function port(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw invalid(`--${name}: must be a port from 1 to 65535, got "${value}"`);
  return n;
}

export async function dev(opts: DevOptions, io: CliIo): Promise<void> {
  const uiPort = port('ui-port', opts.uiPort);
  const grpcPort = port('port', opts.port);
  const simPort = port('sim-port', opts.simPort);
  const say = (line: string) => io.stderr(`${line}\n`);
  // Ctrl-C (or a SIGTERM) counts from here on, not only once everything runs: a stop during start-up stops what has
  // started so far. Until this process has a listener of its own, a signal would end it (leaving the Temporal server,
  // the Web UI server and a started worker behind) or, in the node started by cli/relaunch.ts, do nothing at all.
  const interrupt = new AbortController();
  let interruptedBy: NodeJS.Signals | null = null;
  let onSignal: (signal: NodeJS.Signals) => void = () => undefined;
  const unlisten = () => {
    for (const s of STOP_SIGNALS) process.off(s, onSignal);
  };
  const stopped = new Promise<void>((resolve) => {
    onSignal = (signal) => {
      interruptedBy = signal;
      unlisten();
      interrupt.abort();
      resolve();
    };
    for (const s of STOP_SIGNALS) process.on(s, onSignal);
  });
  /** The step's result; Interrupted when a signal comes first (what the step still starts is then stopped by `stopLate`). */
  const step = async <T>(work: Promise<T>, stopLate?: (started: T) => Promise<void>): Promise<T> => {
    const first = await Promise.race([work.then((value) => ({ value })), stopped.then(() => null)]);
    if (first) return first.value;
    if (stopLate) stops.push(async () => stopLate(await work));
    else void work.catch(() => undefined);
    throw new Interrupted();
  };
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop().catch((e: Error) => say(`stop: ${e.message}`));
  };
  try {
    // The standard OTEL_EXPORTER_OTLP_* variables, as for `lbaas worker`: read before the runtime starts (a process with a
    // runtime does not exit on an error); nothing of OpenTelemetry is loaded when they are unset.
    const tracing = installTracing(io.env, 'lbaas-dev');
    if (tracing) stops.push(async () => tracing.shutdown());
    // The worker's start-up chatter (bundling) would bury the URLs people need; warnings and errors still show.
    Runtime.install({ logger: new DefaultLogger('WARN') });
    // Validate the example and the worker's Version (LBAAS_DEPLOYMENT_NAME, LBAAS_BUILD_ID, as for lbaas worker)
    // before anything starts.
    const example = await step(loadSpecFile(opts.example));
    const deployment = deploymentVersionFromEnv(io.env);

    const stateDir = path.resolve('.lbaas');
    await mkdir(stateDir, { recursive: true });
    const binaries = await step(ensureTemporalServer({ env: io.env, which: ['server', 'ui'], progress: say }));
    say('starting the Temporal dev server …');
    const server = await startDevServer({
      serverPath: binaries.server,
      uiPath: binaries.ui,
      port: grpcPort,
      ui: true,
      uiPort,
      // The simulator listens only once the server runs: the server's drawn ports must leave its port alone.
      reserved: [simPort],
      dbFile: opts.db ?? path.join(stateDir, 'temporal.db'),
      logFile: path.join(stateDir, 'temporal.log'),
      progress: say,
      signal: interrupt.signal,
    });
    stops.push(() => server.stop());
    const sim = await step(startSimulator({ port: simPort, token: DEV_TOKEN, stateFile: path.join(stateDir, 'engine.json') }), (s) => s.close());
    stops.push(() => sim.close());
    seedDemo(sim.sim);

    const worker = await step(
      startWorker({
        ...(tracing ? { tracing } : {}),
        temporal: { connection: { address: server.address }, namespace: server.namespace, taskQueue: DEFAULT_TASK_QUEUE },
        engine: { baseUrl: sim.url, token: DEV_TOKEN },
        deployment,
      }),
      (w) => w.stop(),
    );
    stops.push(() => worker.stop());
    const { client } = worker;
    await step(ensureFullResyncSchedule(client, { taskQueue: DEFAULT_TASK_QUEUE, every: '10m' }));

    io.stdout(
      [
        `Temporal Web UI     ${server.uiUrl}`,
        `Temporal gRPC       ${server.address} (namespace ${server.namespace}, task queue ${DEFAULT_TASK_QUEUE})`,
        `Engine simulator    ${sim.url} (token ${DEV_TOKEN}; admin API ${sim.url}/_sim/objects)`,
        `worker build        ${versionText(worker.deployment)} (the Current Version of Worker Deployment ${worker.deployment.deploymentName})`,
        `full resync         Schedule lbaas-full-resync, every 10m`,
        ...(tracing ? [`traces              ${tracing.settings.url} (${tracing.settings.protocol}, service ${tracing.settings.serviceName})`] : []),
        '',
      ].join('\n'),
    );

    const lbaas = new LbaasClient(client, DEFAULT_TASK_QUEUE);
    // As `lbaas apply --wait`: a task of the example's controller (or of its pass) that no worker takes is explained on
    // stderr, e.g. a controller a kept .lbaas/temporal.db holds pinned to the build an earlier lbaas dev ran, which this
    // build's worker takes over only once that build has not polled for a while (worker/stranded.ts).
    const pickup = watchPickup(client, { workflowId: workflowIds.controller(example.spec.serviceUid), taskQueue: DEFAULT_TASK_QUEUE, say }, Date.now());
    let result: Awaited<ReturnType<LbaasClient['waitConverged']>>;
    let workflowId: string;
    try {
      let revision: number;
      ({ revision, workflowId } = await step(lbaas.apply(example.raw, example.spec, { signal: interrupt.signal })));
      io.stdout(`applied ${opts.example}: service ${example.spec.serviceUid} revision ${revision}, waiting for it to converge …\n`);
      // On a signal the apply's and the wait's calls are cancelled before the worker closes the connection under them: a
      // retry of a call on a closed connection throws outside any promise and ends the process.
      result = await step(lbaas.waitConverged(example.spec.serviceUid, revision, { signal: interrupt.signal }));
    } finally {
      await pickup.stop();
    }
    const link = `${server.uiUrl}/namespaces/${server.namespace}/workflows/${encodeURIComponent(workflowId)}`;
    io.stdout(`${result.converged ? 'converged' : `not converged: ${result.error ?? ''}`} on ${Object.keys(result.loadBalancers).length} load balancers\n`);
    for (const [address, ports] of Object.entries(result.status)) io.stdout(`  ${address.padEnd(16)} ${ports.join(', ')}\n`);
    io.stdout(`controller          ${link}\n`);
    if (opts.kube) {
      const kube = await step(startDevKube({ stateDir, env: io.env, lbaas, loadBalancers: DEMO_LOAD_BALANCERS.map((lb) => lb.identifier), say }), (k) => k.stop());
      stops.push(kube.stop);
      io.stdout(`Kubernetes          KUBECONFIG=${kube.kubeconfig} (lbaas kube acting for cluster dev on the demo load balancers)\n`);
      io.stdout(`try: KUBECONFIG=${kube.kubeconfig} kubectl apply -f examples/k8s-service.yaml && KUBECONFIG=${kube.kubeconfig} kubectl get service web -w\n`);
    }
    io.stdout(`try: node bin/lbaas.js status ${example.spec.serviceUid}   (Ctrl-C stops everything)\n`);

    await stopped;
    say('stopping …');
  } catch (err) {
    if (!(err instanceof Interrupted || err instanceof DevServerAbortedError)) throw err;
    say(`${interruptedBy ?? 'a signal'} during start-up: stopping what has started …`);
  } finally {
    unlisten();
    await stopAll();
  }
}

/** The signals that stop `lbaas dev`, at any moment. */
const STOP_SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];

/** A start-up step lost the race against a stop signal. */
class Interrupted extends Error {}
