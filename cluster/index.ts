/**
 * (Longer than 300 lines: startCluster and the start-up steps only it uses (schemas, port layout, frontend wait,
 * namespace); config, install, PostgreSQL and process handling are already their own files.)
 *
 * A production-shaped Temporal cluster on one machine: PostgreSQL in a private data directory, the schemas set up
 * with Temporal's own SQL tool, and the server run as separate processes per service (frontend, two history hosts,
 * matching, worker) that find each other through the database, as they would on separate machines. Then the
 * namespace and lbaas's search attributes. Used by `npm run dev:cluster`, the cluster tests and the cluster benchmark.
 *
 * Unlike `temporal server start-dev` (one process, SQLite, one history shard), a history host here can die on its
 * own while the others take over its shards, and the database can restart under all of them.
 */
import { execFile } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { msToTs } from '@temporalio/common/lib/time';
import { freePort, SEARCH_ATTRIBUTES } from '../dev/devserver';
import { DATABASES, renderDynamicConfig, renderProcessConfig, type ProcessPorts, type TemporalService } from './config';
import { ensureTemporalServer, TEMPORAL_SERVER_VERSION, type ServerBinaries } from './install';
import { createPostgres, findPostgres, PG_USER, type Postgres } from './postgres';
import { ServerProcess } from './process';

const execFileAsync = promisify(execFile);

export { ensureTemporalServer, TEMPORAL_SERVER_VERSION } from './install';
export type { Postgres } from './postgres';
export type { ServerProcess } from './process';

export interface ClusterOptions {
  /** Keep the cluster's state here (database, configuration, logs) and reuse it next time; a temporary directory otherwise. */
  stateDir?: string;
  /** History hosts (processes); 2 by default, so one can die while the other serves. */
  historyHosts?: number;
  /** History shards; fixed when the database is first set up. 4 spreads over 2 hosts with room to move. */
  numHistoryShards?: number;
  namespace?: string;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Prebuilt binaries; found or built with ensureTemporalServer when absent. */
  binaries?: ServerBinaries;
  env?: NodeJS.ProcessEnv;
  progress?: (line: string) => void;
}

export interface Cluster {
  /** The frontend's gRPC address (what clients and workers connect to). */
  address: string;
  namespace: string;
  workDir: string;
  postgres: Postgres;
  /** Every server process: frontend, history-1 … history-N, matching, worker. */
  processes: ServerProcess[];
  historyHosts: ServerProcess[];
  /** Pids of the server processes and PostgreSQL (its postmaster; its backends are counted through /proc children). */
  pids(): Record<string, number>;
  /** pg_database_size of the main and the visibility database, in bytes. */
  databaseBytes(): Promise<{ main: number; visibility: number }>;
  /** Stops every process (servers first, then PostgreSQL); removes a temporary work directory. */
  stop(): Promise<void>;
}

/** Retention of closed workflows in the namespace: the dev server's default, long enough to read a failed pass. */
const RETENTION = '3 days';
/** The config file name the server loads (`--env cluster` reads cluster.yaml). */
const CONFIG_ENV = 'cluster';

async function sqlTool(binary: string, pg: Postgres, database: string, args: string[]): Promise<void> {
  const common = ['--plugin', 'postgres12', '--endpoint', '127.0.0.1', '--port', String(pg.port), '--user', PG_USER, '--password', pg.password, '--database', database];
  try {
    await execFileAsync(binary, [...common, ...args], { timeout: 300_000 });
  } catch (err) {
    const e = err as Error & { stderr?: string; stdout?: string };
    const out = `${e.stderr ?? ''}\n${e.stdout ?? ''}`.trim().split('\n').slice(-4).join(' | ');
    // The password is ours and local, but it has no business in an error message either.
    throw new Error(`temporal-sql-tool ${args[0]} on ${database} failed: ${(out || e.message).replaceAll(pg.password, '***')}`);
  }
}

/** create-database, then the versioned schema embedded in the tool (postgresql/v12/…), once per state directory. */
async function setUpSchemas(binary: string, pg: Postgres, workDir: string, progress: (line: string) => void): Promise<void> {
  const marker = path.join(workDir, 'schemas-ready');
  if (existsSync(marker)) {
    // A kept cluster from an older lbaas may need newer schema versions: update-schema only applies what is missing.
    for (const [db, name] of [[DATABASES.main, 'temporal'], [DATABASES.visibility, 'visibility']] as const) {
      await sqlTool(binary, pg, db, ['update-schema', '--schema-name', `postgresql/v12/${name}`]);
    }
    return;
  }
  for (const [db, name] of [[DATABASES.main, 'temporal'], [DATABASES.visibility, 'visibility']] as const) {
    progress(`setting up the ${db} schema`);
    await sqlTool(binary, pg, db, ['create-database']);
    await sqlTool(binary, pg, db, ['setup-schema', '-v', '0.0']);
    await sqlTool(binary, pg, db, ['update-schema', '--schema-name', `postgresql/v12/${name}`]);
  }
  await writeFile(marker, new Date().toISOString());
}

export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const env = opts.env ?? process.env;
  const progress = opts.progress ?? (() => {});
  const namespace = opts.namespace ?? 'default';
  const historyCount = opts.historyHosts ?? 2;
  const shards = opts.numHistoryShards ?? 4;
  const binaries = opts.binaries ?? (await ensureTemporalServer({ env, progress }));
  const pgInstall = await findPostgres(env);

  const temporary = !opts.stateDir;
  const workDir = opts.stateDir ? path.resolve(opts.stateDir) : await mkdtemp(path.join(os.tmpdir(), 'lbaas-cluster-'));
  await mkdir(path.join(workDir, 'logs'), { recursive: true });
  // As root, PostgreSQL runs as the postgres user, which must be able to pass through our directory to its own.
  if (pgInstall.runAs) await chmod(workDir, 0o711);

  const plan: { name: string; service: TemporalService }[] = [
    ...Array.from({ length: historyCount }, (_, i) => ({ name: `history-${i + 1}`, service: 'history' as const })),
    { name: 'matching', service: 'matching' },
    { name: 'frontend', service: 'frontend' },
    { name: 'worker', service: 'worker' },
  ];
  const layout = await portLayout(path.join(workDir, 'ports.json'), plan);
  const ports = (name: string) => layout.processes[name] as ProcessPorts;
  const postgres = createPostgres({ pg: pgInstall, dir: path.join(workDir, 'postgres'), port: layout.postgres, logFile: path.join(workDir, 'logs', 'postgres.log') });
  const frontendAddress = `127.0.0.1:${ports('frontend').grpc}`;
  const processes: ServerProcess[] = [];
  let stopped = false;
  const killAllNow = () => {
    for (const p of processes) p.killNow();
    postgres.killNow();
  };
  // Whatever ends this Node process, no server process may be left behind.
  process.once('exit', killAllNow);
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    // Clients first see the frontend go; history hosts last among the servers, so their shards close cleanly.
    const order = ['frontend', 'worker', 'matching', 'history'];
    for (const service of order) await Promise.all(processes.filter((p) => p.service === service).map((p) => p.stop()));
    await postgres.stop();
    process.removeListener('exit', killAllNow);
    if (temporary) await rm(workDir, { recursive: true, force: true });
  };

  try {
    progress(`starting PostgreSQL on 127.0.0.1:${postgres.port} (${path.join(workDir, 'postgres')})`);
    await postgres.start();
    await setUpSchemas(binaries.sqlTool, postgres, workDir, progress);

    const dynamicConfigFile = path.join(workDir, 'dynamicconfig.yaml');
    await writeFile(dynamicConfigFile, renderDynamicConfig());
    for (const p of plan) {
      const configDir = path.join('config', p.name);
      await mkdir(path.join(workDir, configDir), { recursive: true });
      const yaml = renderProcessConfig({
        service: p.service,
        ports: { frontend: ports('frontend'), matching: ports('matching'), worker: ports('worker'), history: ports(p.service === 'history' ? p.name : 'history-1') },
        frontendAddress,
        pg: { port: postgres.port, user: PG_USER, password: postgres.password },
        numHistoryShards: shards,
        dynamicConfigFile,
        logLevel: opts.logLevel ?? 'warn',
      });
      await writeFile(path.join(workDir, configDir, `${CONFIG_ENV}.yaml`), yaml, { mode: 0o600 });
      processes.push(new ServerProcess(p.name, p.service, ports(p.name).grpc, { binary: binaries.server, root: workDir, configDir, env: CONFIG_ENV, logFile: path.join(workDir, 'logs', `${p.name}.log`) }));
    }
    progress(`starting the Temporal server v${TEMPORAL_SERVER_VERSION}: ${processes.map((p) => p.name).join(', ')} (${shards} history shards)`);
    for (const p of processes) p.start();

    await waitForFrontend(frontendAddress, processes, progress);
    await ensureNamespace(frontendAddress, namespace, progress);
    progress(`Temporal cluster ready on ${frontendAddress} (namespace ${namespace}; logs in ${path.join(workDir, 'logs')})`);
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }

  return {
    address: frontendAddress,
    namespace,
    workDir,
    postgres,
    processes,
    historyHosts: processes.filter((p) => p.service === 'history'),
    pids: () => ({ ...Object.fromEntries(processes.map((p) => [p.name, p.pid])), postgres: postgres.pid }),
    async databaseBytes() {
      const size = async (db: string) => Number(await postgres.query(db, `SELECT pg_database_size('${db}')`));
      return { main: await size(DATABASES.main), visibility: await size(DATABASES.visibility) };
    },
    stop,
  };
}

interface PortLayout {
  postgres: number;
  processes: Record<string, ProcessPorts>;
}

async function bindable(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/**
 * The ports of a kept cluster stay what they were, so its address does not change between runs and the cluster
 * metadata in the database (which records the frontend's address) needs no rewrite: five processes starting at once
 * would race to rewrite it, and all but one fail ("SaveClusterMetadata encountered version mismatch"). New ports are
 * drawn only for a new cluster or when a saved one is taken.
 */
async function portLayout(file: string, plan: { name: string; service: TemporalService }[]): Promise<PortLayout> {
  const saved = JSON.parse(await readFile(file, 'utf8').catch(() => 'null')) as PortLayout | null;
  if (saved && plan.every((p) => saved.processes[p.name])) {
    const all = [saved.postgres, ...plan.flatMap((p) => Object.values(saved.processes[p.name] as ProcessPorts) as number[])];
    if ((await Promise.all(all.map(bindable))).every(Boolean)) return saved;
  }
  const layout: PortLayout = { postgres: await freePort(), processes: {} };
  for (const p of plan) {
    layout.processes[p.name] = {
      grpc: await freePort(),
      membership: await freeMembershipPort(),
      metrics: await freePort(),
      ...(p.service === 'frontend' ? { http: await freePort() } : {}),
    };
  }
  await writeFile(file, JSON.stringify(layout, null, 2));
  return layout;
}

/**
 * Membership ports are stored in cluster_membership.rpc_port, a SMALLINT in Temporal's PostgreSQL schema: a port above
 * 32767 makes the host fail to join ("value out of range for type smallint"), and the kernel's ephemeral range (where
 * port 0 binds land) starts at 32768. So these are drawn from 20000-32767 and checked by binding them.
 */
async function freeMembershipPort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + randomInt(12_768);
    if (await bindable(port)) return port;
  }
  throw new Error('no free port between 20000 and 32767 for Temporal membership');
}

async function waitForFrontend(address: string, processes: ServerProcess[], progress: (line: string) => void): Promise<void> {
  const deadline = Date.now() + 180_000;
  let said = Date.now();
  const restarts = new Map<string, number>();
  for (;;) {
    const dead = processes.find((p) => !p.running);
    if (dead) {
      // Processes that start together race to create or rewrite the cluster metadata record ("failed to initialize
      // current cluster metadata", "SaveClusterMetadata encountered version mismatch"); the losers exit and are
      // simply started again: by then the record exists.
      if (/cluster metadata|version mismatch/i.test(dead.logTail().slice(-8000)) && (restarts.get(dead.name) ?? 0) < 3) {
        restarts.set(dead.name, (restarts.get(dead.name) ?? 0) + 1);
        progress(`${dead.name} lost the race to write the cluster metadata; starting it again`);
        dead.start();
        continue;
      }
      throw new Error(`Temporal ${dead.name} exited during start-up:\n${dead.logTail().slice(-2000)}`);
    }
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.workflowService.getSystemInfo({});
        // Exits during start-up were handled above; from here on, an exit is news.
        for (const p of processes) p.unexpectedExits.length = 0;
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`the Temporal frontend on ${address} did not answer within 180 s: ${(err as Error).message}`);
      if (Date.now() - said > 15_000) {
        said = Date.now();
        progress('waiting for the Temporal services to join their membership ring …');
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/**
 * Registers the namespace and lbaas's search attributes when missing, then waits until a list query over one of them
 * is accepted: on SQL visibility the attributes live in the namespace record, which every service caches (refreshed
 * every 2 s by default), so the first workflows must not race that refresh.
 */
async function ensureNamespace(address: string, namespace: string, progress: (line: string) => void): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    const svc = connection.workflowService;
    const deadline = Date.now() + 120_000;
    const retry = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
      for (;;) {
        try {
          return await fn();
        } catch (err) {
          if (Date.now() > deadline) throw new Error(`${what}: ${(err as Error).message}`);
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    };
    const exists = await svc.describeNamespace({ namespace }).then(
      () => true,
      () => false,
    );
    if (!exists) {
      progress(`registering namespace ${namespace}`);
      await retry(`registering namespace ${namespace}`, () =>
        svc.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs(RETENTION) }).catch((err: Error & { code?: number }) => {
          // 6 = ALREADY_EXISTS: a retry after a timeout whose first attempt went through.
          if (err.code !== 6) throw err;
        }),
      );
      await retry(`namespace ${namespace} to become visible`, () => svc.describeNamespace({ namespace }));
    }
    const have = await retry('listing search attributes', () => connection.operatorService.listSearchAttributes({ namespace }));
    const missing = Object.entries(SEARCH_ATTRIBUTES).filter(([name]) => !(name in (have.customAttributes ?? {})));
    if (missing.length > 0) {
      progress(`adding search attributes ${missing.map(([n, t]) => `${n} (${t})`).join(', ')}`);
      const searchAttributes = Object.fromEntries(missing.map(([name, type]) => [name, encodeSearchAttributeIndexedValueType(type === 'Keyword' ? 'KEYWORD' : 'KEYWORD_LIST') as number]));
      await retry('adding search attributes', () => connection.operatorService.addSearchAttributes({ namespace, searchAttributes }));
    }
    const [first] = Object.keys(SEARCH_ATTRIBUTES);
    await retry(`search attribute ${first} to be usable in namespace ${namespace}`, () => svc.listWorkflowExecutions({ namespace, query: `${first} = 'probe'`, pageSize: 1 }));
  } finally {
    await connection.close();
  }
}
