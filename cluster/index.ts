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
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { msToTs } from '@temporalio/common/lib/time';
import { SEARCH_ATTRIBUTE_SDK_TYPES, SEARCH_ATTRIBUTES } from '../dev/devserver';
import { DATABASES, renderDynamicConfig, renderProcessConfig, type ProcessPorts, type TemporalService } from './config';
import { ensureTemporalServer, TEMPORAL_SERVER_VERSION, type ServerBinaries } from '../dev/temporal-server';
import { portLayout } from './ports';
import { createPostgres, findPostgres, PG_USER, type Postgres } from './postgres';
import { ServerProcess } from './process';
import { shardRanges, waitForShards } from './shards';

const execFileAsync = promisify(execFile);

export { ensureTemporalServer, TEMPORAL_SERVER_VERSION } from '../dev/temporal-server';
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
  /** Ports the caller binds once the cluster runs (`lbaas dev --cluster`'s simulator): the cluster draws none of them. */
  reserved?: readonly number[];
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
  const layout = await portLayout(path.join(workDir, 'ports.json'), plan, opts.reserved);
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
    // No server of this cluster runs yet: the membership rows of a kept cluster's last run name hosts that are gone,
    // and with ports drawn anew, hosts that never answer again; a joining host would try them first (measured: the
    // frontend took 45 s to answer after a redraw, 1 s with the rows gone).
    await postgres.query(DATABASES.main, 'DELETE FROM cluster_membership');
    const rangesBefore = await shardRanges(postgres);
    progress(`starting the Temporal server v${TEMPORAL_SERVER_VERSION}: ${processes.map((p) => p.name).join(', ')} (${shards} history shards)`);
    // The frontend alone first: every server process writes the cluster metadata record when it finds none (or
    // rewrites it when its address changed), and of processes starting together all but one fail to and exit. Once
    // the record holds the frontend's address, the others read it and leave it alone.
    const frontend = processes.find((p) => p.service === 'frontend') as ServerProcess;
    frontend.start();
    await waitForClusterMetadata(postgres, frontendAddress, frontend);
    for (const p of processes) p.start();

    const watch = startupWatch(processes, progress);
    await waitForFrontend(frontendAddress, watch, progress);
    await waitForMembership(postgres, processes, layout.processes, watch, progress);
    await waitForShards(postgres, shards, rangesBefore, { watch, progress, timeoutMs: STARTUP_WAIT_MS });
    // Exits during start-up were handled above; from here on, an exit is news.
    for (const p of processes) p.unexpectedExits.length = 0;
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

/** How long each start-up wait may take before start-up fails with what it waited for. */
const STARTUP_WAIT_MS = 180_000;

/**
 * Polls until the cluster metadata record in the main database holds the frontend's address (written or rewritten by
 * the frontend at its start), failing with its log if it exits first.
 */
async function waitForClusterMetadata(postgres: Postgres, address: string, frontend: ServerProcess): Promise<void> {
  const deadline = Date.now() + STARTUP_WAIT_MS;
  // The record is a Proto3 blob; the address is one of its strings (digits, dots and a colon: nothing to escape).
  const sql = `SELECT count(*) FROM cluster_metadata_info WHERE position(convert_to('${address}', 'UTF8') in data) > 0`;
  for (;;) {
    if (!frontend.running) throw new Error(`Temporal frontend exited during start-up (log ${frontend.logFile}):\n${frontend.logTail().slice(-2000)}`);
    if (Number(await postgres.query(DATABASES.main, sql).catch(() => '0')) > 0) return;
    if (Date.now() > deadline) throw new Error(`the Temporal frontend wrote no cluster metadata for ${address} within ${STARTUP_WAIT_MS / 1000} s (log ${frontend.logFile})`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * Checks, at each step of a start-up wait, that every server process still runs. One that exited after losing a race
 * to write the cluster metadata is started again, up to 3 times (none should: the frontend has written the record
 * before the others start; this stays as the safety net it was when all five started at once); any other exit fails
 * the start-up with the end of its log.
 */
function startupWatch(processes: ServerProcess[], progress: (line: string) => void): () => void {
  const restarts = new Map<string, number>();
  return () => {
    for (const dead of processes.filter((p) => !p.running)) {
      if (/cluster metadata|version mismatch/i.test(dead.logTail().slice(-8000)) && (restarts.get(dead.name) ?? 0) < 3) {
        restarts.set(dead.name, (restarts.get(dead.name) ?? 0) + 1);
        progress(`${dead.name} lost the race to write the cluster metadata; starting it again`);
        dead.start();
        continue;
      }
      throw new Error(`Temporal ${dead.name} exited during start-up (log ${dead.logFile}):\n${dead.logTail().slice(-2000)}`);
    }
  };
}

async function waitForFrontend(address: string, watch: () => void, progress: (line: string) => void): Promise<void> {
  const deadline = Date.now() + STARTUP_WAIT_MS;
  let said = Date.now();
  for (;;) {
    watch();
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.workflowService.getSystemInfo({});
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`the Temporal frontend on ${address} did not answer within ${STARTUP_WAIT_MS / 1000} s: ${(err as Error).message}`);
      if (Date.now() - said > 15_000) {
        said = Date.now();
        progress('waiting for the Temporal frontend to answer …');
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/**
 * Waits until every server process, as started last, has joined the membership ring: a row of its own in
 * cluster_membership (its membership port, a session that began after its start). A host writes that row after its
 * listeners are bound, so from here on the cluster is whole; a frontend that answers says nothing about the others.
 */
async function waitForMembership(postgres: Postgres, processes: ServerProcess[], ports: Record<string, ProcessPorts>, watch: () => void, progress: (line: string) => void): Promise<void> {
  const deadline = Date.now() + STARTUP_WAIT_MS;
  let said = Date.now();
  for (;;) {
    watch();
    // session_start is UTC without a time zone; extract(epoch) reads it as UTC.
    const rows = await postgres.query(DATABASES.main, 'SELECT rpc_port, extract(epoch FROM session_start) FROM cluster_membership').catch(() => '');
    const sessions = rows
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split('|').map(Number) as [number, number]);
    const missing = processes.filter((p) => {
      const port = (ports[p.name] as ProcessPorts).membership;
      const since = (p.startedAt?.getTime() ?? Infinity) / 1000;
      return !sessions.some(([rpcPort, start]) => rpcPort === port && start >= since);
    });
    if (missing.length === 0) return;
    const names = missing.map((p) => p.name).join(', ');
    if (Date.now() > deadline) throw new Error(`Temporal ${names} did not join the membership ring within ${STARTUP_WAIT_MS / 1000} s (logs in ${path.dirname(missing[0]?.logFile ?? '')})`);
    if (Date.now() - said > 15_000) {
      said = Date.now();
      progress(`waiting for ${names} to join the membership ring …`);
    }
    await new Promise((r) => setTimeout(r, 250));
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
      const searchAttributes = Object.fromEntries(missing.map(([name, type]) => [name, encodeSearchAttributeIndexedValueType(SEARCH_ATTRIBUTE_SDK_TYPES[type]) as number]));
      await retry('adding search attributes', () => connection.operatorService.addSearchAttributes({ namespace, searchAttributes }));
    }
    const [first] = Object.keys(SEARCH_ATTRIBUTES);
    await retry(`search attribute ${first} to be usable in namespace ${namespace}`, () => svc.listWorkflowExecutions({ namespace, query: `${first} = 'probe'`, pageSize: 1 }));
  } finally {
    await connection.close();
  }
}
