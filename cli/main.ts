/**
 * The `lbaas` command line (docs/cli.md). Every command is registered here; each command's work lives in
 * its own module. Exit codes: 0 success, 1 reconciliation failed, 2 invalid input or usage, 3 timed out waiting,
 * 4 Temporal or the Engine unreachable.
 *
 * Commands are loaded lazily with require() so that `lbaas --help` does not load Temporal's native worker.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
import { Command, CommanderError, Option } from 'commander';
import { CliError, EXIT } from '../common/errors';
import { ensureTemporalCli } from '../dev/temporal-path';
import type * as SimulatorCommandModule from '../simulator/command';
import type * as ApplyModule from './commands/apply';
import type * as DeleteModule from './commands/delete';
import type * as DevModule from './commands/dev';
import type * as DevClusterModule from './commands/dev-cluster';
import type * as ImportModule from './commands/import';
import type * as KubeModule from './commands/kube';
import type * as PlanModule from './commands/plan';
import type * as PoolModule from './commands/pool';
import type * as ResyncModule from './commands/resync';
import type * as ScheduleModule from './commands/schedule';
import type * as StatusModule from './commands/status';
import type * as WorkerModule from './commands/worker';
import { processIo, type CliIo } from './io';


/** Repeatable options collect their values in order. */
const collect = (value: string, previous: string[]) => [...previous, value];

const outputOption = () => new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text');

function buildProgram(io: CliIo = processIo): Command {
  const program = new Command('lbaas')
    .description('Keeps Anexia LBaaS load balancers configured for a service, durably, on Temporal.')
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .exitOverride();

  program
    .command('apply')
    .description("validate a spec, apply it to the service's controller, and with --wait wait for that revision's pass")
    .requiredOption('-f, --file <file>', 'service spec, YAML or JSON ("-" for stdin)')
    .option('--wait', 'wait until the pass for this revision has finished')
    .option('--timeout <duration>', 'give up waiting after this long (e.g. 90s, 10m)', '10m')
    .addOption(outputOption())
    .action((opts) => (require('./commands/apply') as typeof ApplyModule).apply(opts, io));

  program
    .command('plan')
    .description('dry run: what a pass would create, destroy and recover on each load balancer')
    .requiredOption('-f, --file <file>', 'service spec, YAML or JSON ("-" for stdin)')
    .addOption(outputOption())
    .action((opts) => (require('./commands/plan') as typeof PlanModule).plan(opts, io));

  program
    .command('import')
    .description('write the specs of the services the upstream controller (k8s-anexia-ccm) built on some load balancers; read-only')
    .option('--load-balancer <id>', 'a load balancer to read (repeat for each one the services use)', collect, [])
    .option('--service-uid <uid>', 'only this service (repeatable); default: every service found', collect, [])
    .option('--out-dir <dir>', 'write one file per service, <uid>.yaml or <uid>.json, into this directory (default: stdout)')
    .addOption(new Option('-o, --output <format>', 'spec format; with json, stdout is one JSON report').choices(['yaml', 'json']).default('yaml'))
    .option('--force', 'also write specs that do not match exactly, with a warning comment listing the problems')
    .option('--check', 'run `plan` for every written spec and print it (an exact import changes nothing)')
    .option('--pool <name>', 'services sharing one set of servers name server pool <name> instead; its pool file is written beside them')
    .option('--cluster-name <name>', "the upstream's cluster name: a single port is read by its suffix <service>.<namespace>.<cluster> (the unnamed port as upstream named it); without it that case is reported as ambiguous")
    .action((opts) => (require('./commands/import') as typeof ImportModule).importCommand(opts, io));

  program
    .command('status')
    .description("the controller's view of a service: phase, revision, status, per load balancer and per object")
    .argument('<uid>', 'service uid')
    .addOption(outputOption())
    .action((uid, opts) => (require('./commands/status') as typeof StatusModule).status(uid, opts, io));

  program
    .command('list')
    .description('services with their phase and load balancers')
    .addOption(outputOption())
    .action((opts) => (require('./commands/status') as typeof StatusModule).list(opts, io));

  program
    .command('delete')
    .description('tear down everything the service owns on every load balancer, then end its controller')
    .argument('<uid>', 'service uid')
    .option('--wait', 'wait until the teardown has finished')
    .option('--timeout <duration>', 'give up waiting after this long', '10m')
    .addOption(outputOption())
    .action((uid, opts) => (require('./commands/delete') as typeof DeleteModule).deleteService(uid, opts, io));

  program
    .command('resync')
    .description('reconcile now: one service, or every service with --all')
    .argument('[uid]', 'service uid')
    .option('--all', 'every service (runs the full resync)')
    .option('--wait', 'wait until the pass it triggers has finished (one service)')
    .option('--timeout <duration>', 'give up waiting after this long', '10m')
    .addOption(outputOption())
    .action((uid, opts) => (require('./commands/resync') as typeof ResyncModule).resync(uid, opts, io));

  const pool = program.command('pool').description('server pools: the servers many services share (serverPool: NAME in a spec)');
  const poolCmd = () => require('./commands/pool') as typeof PoolModule;
  pool
    .command('set')
    .description('create a pool or replace its servers; every service using it is reconciled')
    .requiredOption('-f, --file <file>', 'pool file {name, servers: [{name, address}]}, YAML or JSON ("-" for stdin)')
    .addOption(outputOption())
    .action((opts) => poolCmd().poolSet(opts, io));
  pool
    .command('add')
    .description("add servers to a pool (or change a server's address)")
    .argument('<name>', 'pool name')
    .option('--server <name=address>', 'a server, e.g. node-4=10.0.0.14 (repeatable)', (v: string, prev: string[]) => [...prev, v], [] as string[])
    .addOption(outputOption())
    .action((name, opts) => poolCmd().poolAdd(name, opts, io));
  pool
    .command('remove')
    .description('remove servers from a pool by name')
    .argument('<name>', 'pool name')
    .argument('<servers...>', 'server names')
    .addOption(outputOption())
    .action((name, servers, opts) => poolCmd().poolRemove(name, servers, opts, io));
  pool
    .command('status')
    .description('servers, revision, and per service the pool revision it has converged')
    .argument('<name>', 'pool name')
    .option('--wait', 'wait until every service using the pool has converged its latest revision')
    .option('--timeout <duration>', 'give up waiting after this long', '10m')
    .addOption(outputOption())
    .action((name, opts) => poolCmd().poolStatus(name, opts, io));
  pool
    .command('list')
    .description('server pools with their revision, servers and services')
    .addOption(outputOption())
    .action((opts) => poolCmd().poolList(opts, io));
  pool
    .command('delete')
    .description('delete a pool (refused while services use it)')
    .argument('<name>', 'pool name')
    .addOption(outputOption())
    .action((name, opts) => poolCmd().poolDelete(name, opts, io));

  const schedule = program.command('schedule').description('the full-resync Schedule lbaas-full-resync');
  schedule
    .command('set')
    .description('create or update the schedule')
    .requiredOption('--every <duration>', 'interval, e.g. 10m')
    .option('--destroy-orphans', 'let full resyncs destroy objects tagged for services that have no controller')
    .action((opts) => (require('./commands/schedule') as typeof ScheduleModule).scheduleSet(opts, io));
  for (const [name, description] of [
    ['describe', 'show the schedule, its next runs and recent actions'],
    ['pause', 'pause the schedule'],
    ['unpause', 'unpause the schedule'],
    ['trigger', 'start a full resync now (skipped when one is running)'],
    ['delete', 'delete the schedule'],
  ] as const) {
    schedule
      .command(name)
      .description(description)
      .addOption(outputOption())
      .action((opts) => (require('./commands/schedule') as typeof ScheduleModule).scheduleAction(name, opts, io));
  }

  program
    .command('worker')
    .description('run a worker: Temporal settings from TEMPORAL_* / temporal.toml, the Engine from ANEXIA_ENGINE_URL and ANEXIA_TOKEN')
    .action(() => (require('./commands/worker') as typeof WorkerModule).worker(io));

  program
    .command('kube')
    .description("the LoadBalancer controller of a Kubernetes cluster: Services of type LoadBalancer and the Nodes, applied to the services' controllers (docs/kubernetes.md)")
    .option('--kubeconfig <file>', 'kubeconfig file [KUBECONFIG]; default: the in-cluster service account, then ~/.kube/config')
    .option('--cluster-name <name>', 'the cluster name in object names <service>.<namespace>.<cluster> and the node pool k8s-<cluster>; required [LBAAS_CLUSTER_NAME]')
    .option('--load-balancer <id>', 'a load balancer every Service uses, beside the discovered ones (repeatable; at least one when discovery is off) [LBAAS_LOAD_BALANCERS, comma-separated]', collect, [])
    .option('--external-address <ip>', 'an external address every Service listens on (repeatable) [LBAAS_EXTERNAL_ADDRESSES, comma-separated]', collect, [])
    .option('--load-balancer-class <name>', "the spec.loadBalancerClass that is ours; default: none, so Services without a class are ours")
    .option('--auto-discover-load-balancer <bool>', 'discover load balancers (tag <prefix>-<cluster>) and external addresses (kubernetes-lb-prefix-<cluster> prefixes) as k8s-anexia-ccm does: true or false; default true [LBAAS_AUTO_DISCOVER_LOAD_BALANCER]')
    .option('--auto-discovery-tag-prefix <prefix>', 'the tag prefix of discovered load balancers; default anxkube-ccm-lb [LBAAS_AUTO_DISCOVERY_TAG_PREFIX]')
    .option('--discovery-interval <seconds>', 'how often discovery runs again, e.g. 120s (10s to 3600s); default 120s')
    .option('--namespace <ns>', 'namespace of the leader-election Lease', 'kube-system')
    .option('--lease-name <name>', 'name of the leader-election Lease; lbaas kube processes sharing it act as one (two with different --load-balancer-class need two)', 'lbaas-kube')
    .option('--lease-duration <seconds>', 'how long a Lease holds without renewal before a standby takes over, e.g. 15s', '15s')
    .option('--health-address <host:port>', 'serve /healthz, /readyz and /metrics there, e.g. 0.0.0.0:8081; default off [LBAAS_HEALTH_ADDRESS]')
    .addHelpText('after', '\nTemporal settings as for every command (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_PROFILE, temporal.toml). Exit codes: 2 bad configuration (the flag is named), 4 the API server or Temporal unreachable.')
    .action((opts) => (require('./commands/kube') as typeof KubeModule).kube(opts, io));

  program
    .command('dev')
    .description('the whole local stack: Temporal dev server with Web UI, Engine simulator, worker, schedule, example service')
    .option('--ui-port <port>', 'Web UI port', '8233')
    .option('--port <port>', 'Temporal gRPC port', '7233')
    .option('--sim-port <port>', 'Engine simulator port', '8090')
    .option('--db <file>', 'SQLite file for Temporal state (default: .lbaas/temporal.db)')
    .option('--example <file>', 'service spec to apply', 'examples/service.yaml')
    .option('--kube', 'also a local Kubernetes API server (etcd + kube-apiserver, built on first use) with lbaas kube acting on it; prints the KUBECONFIG for kubectl')
    .option('--cluster', 'a production-shaped Temporal instead: PostgreSQL and one server process per service (needs Go and PostgreSQL; no Web UI)')
    .option('--state-dir <dir>', 'with --cluster: where the cluster keeps its database, configuration and logs (default: .lbaas/cluster)')
    .option('--history-hosts <n>', 'with --cluster: history host processes', '2')
    .action((opts) =>
      opts.cluster ? (require('./commands/dev-cluster') as typeof DevClusterModule).devCluster(opts, io) : (require('./commands/dev') as typeof DevModule).dev(opts, io),
    );

  program
    .command('temporal-path')
    .description(`make sure the Temporal CLI is installed; print its path`)
    .action(async () => {
      const p = await ensureTemporalCli({ env: io.env, progress: (l) => io.stderr(`${l}\n`) });
      io.stdout(`${p}\n`);
    });

  // The simulator registers its own command and flags.
  (require('../simulator/command') as typeof SimulatorCommandModule).addSimCommand(program);

  return program;
}

/** Runs the CLI and resolves to the process exit code. */
export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0) return EXIT.ok;
      return EXIT.invalid;
    }
    if (err instanceof CliError) {
      io.stderr(`lbaas: ${err.message}\n`);
      return err.exitCode;
    }
    io.stderr(`lbaas: ${(err as Error).message ?? String(err)}\n`);
    return EXIT.failed;
  }
}
