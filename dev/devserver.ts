/**
 * Starts a Temporal dev server for tests, benchmarks and `lbaas dev`: the bare Temporal server (dev/temporal-server.ts,
 * pinned) as one process on SQLite with one history shard, our search attributes registered, the Web UI server beside
 * it when asked, free ports, logs captured, clean stop. What `temporal server start-dev` does, on a server new enough
 * for Upgrade on Continue-as-New (the CLI that `go install` can build embeds 1.29.1).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { access, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { bindable, drawPort } from '../common/ports';
import { ensureTemporalServer, TEMPORAL_SERVER_VERSION } from './temporal-server';

/** Custom search attributes of docs/spec.md#search-attributes, with their Temporal types. */
export const SEARCH_ATTRIBUTES: Record<string, 'Keyword' | 'KeywordList' | 'Int'> = {
  LbaasServiceUid: 'Keyword',
  LbaasLoadBalancers: 'KeywordList',
  LbaasPhase: 'Keyword',
  LbaasServerPool: 'Keyword',
  LbaasPoolRevision: 'Int',
};

/** The SDK's name of each type (encodeSearchAttributeIndexedValueType), for the registrations that use it. */
export const SEARCH_ATTRIBUTE_SDK_TYPES = { Keyword: 'KEYWORD', KeywordList: 'KEYWORD_LIST', Int: 'INT' } as const;

/**
 * Dynamic configuration Worker Versioning needs (worker/versioning.ts). Both are on by default in Temporal 1.29; set
 * explicitly, as in the local cluster (cluster/config.ts), so that a server whose defaults differ fails loudly at
 * `setCurrentVersion` rather than leaving tasks undelivered.
 */
export const VERSIONING_DYNAMIC_CONFIG: Readonly<Record<string, boolean>> = {
  // Worker Deployment Versions and their APIs (describe, set-current-version, set-ramping-version).
  'system.enableDeploymentVersions': true,
  // Versioning fields in workflow APIs: the versioning info of describe(), versioning overrides at start.
  'frontend.workerVersioningWorkflowAPIs': true,
};

export interface DevServerOptions {
  /** Path of the Temporal server binary; found or installed with ensureTemporalServer when absent. */
  serverPath?: string;
  /** Path of the Web UI server binary (used with `ui`); found or installed likewise when absent. */
  uiPath?: string;
  /** gRPC port; a free one when absent. */
  port?: number;
  ip?: string;
  namespace?: string;
  /** More namespaces to create at start-up (our search attributes are registered in each): `npm test` gives each
   * test file its own, so files can run at the same time without seeing each other's workflows and schedule. */
  extraNamespaces?: readonly string[];
  /**
   * Ports the caller binds once the server runs (`lbaas dev`'s simulator): none of the server's drawn ports is one of
   * them.
   */
  reserved?: readonly number[];
  /** Serve the Web UI (on uiPort, or a free port). */
  ui?: boolean;
  uiPort?: number;
  /**
   * SQLite file: state survives restarts. In memory when absent. A file written by another server version (the
   * Temporal CLI's dev server, 1.29.1) is refused with the fix: the schemas differ.
   */
  dbFile?: string;
  /** Where the server's own log goes (appended); kept in memory (last 64 KiB) otherwise. */
  logFile?: string;
  /** How long to wait for the server to answer (the first start of a fresh SQLite file can take a while). */
  startTimeoutMs?: number;
  progress?: (line: string) => void;
  /** Aborts the start: what has started is stopped, and the promise rejects with DevServerAbortedError. */
  signal?: AbortSignal;
}

/** startDevServer was aborted through its `signal`; nothing it started still runs. */
export class DevServerAbortedError extends Error {
  constructor() {
    super('the Temporal dev server start was aborted');
    this.name = 'DevServerAbortedError';
  }
}

export interface DevServer {
  address: string;
  namespace: string;
  uiUrl: string | null;
  port: number;
  uiPort: number | null;
  /** The ringpop membership port of each of the server's services (see `membershipPortsFile`). */
  membershipPorts: Record<Service, number>;
  /** The server's process (the Web UI's is stopped with it). */
  process: ChildProcess;
  /** The last part of the server's log (for error messages). */
  logTail(): string;
  /** SIGTERM, then SIGKILL after a grace time; resolves when the process has exited. */
  stop(): Promise<void>;
}

/**
 * Beside a SQLite file: the membership ports of the last server on it. Every service of the server records its
 * membership address in the file's cluster_membership table and, when it starts, joins the members that sent a
 * heartbeat in the last 20 s. A server started again within those 20 s on other ports found only the previous run's
 * dead addresses: its first service retried the join for 30 s (global.membership.maxJoinDuration) several times, and
 * the server could exit with "failed to start ringpop". On the same ports, those rows name this run's own services.
 */
export function membershipPortsFile(dbFile: string): string {
  return `${dbFile}.membership-ports`;
}

/** The membership ports the last server on `dbFile` recorded (membershipPortsFile); none without a file. */
async function recordedMembership(dbFile: string | undefined): Promise<Partial<Record<Service, unknown>>> {
  if (!dbFile) return {};
  return readFile(membershipPortsFile(dbFile), 'utf8').then(
    (text) => JSON.parse(text) as Partial<Record<Service, unknown>>,
    () => ({}),
  );
}

/** Draws a port that is not in `taken` and adds it there (common/ports.ts drawPort). */
export type PortDrawer = (taken: Set<number>, host: string) => Promise<number>;

/**
 * The ports of one start of the server: the caller's where it chose them, the previous run's membership ports that
 * are free now (membershipPortsFile), and drawn ports for the rest. No port is chosen twice, and none is one of
 * `reserved`: ports the caller binds only after the server runs (`lbaas dev`'s simulator), which nothing listens on yet.
 */
export async function chooseDevServerPorts(
  o: { ip: string; port?: number; ui: boolean; uiPort?: number; reserved?: readonly number[]; recorded?: Partial<Record<Service, unknown>> },
  draw: PortDrawer = drawPort,
  free: (port: number, host: string) => Promise<boolean> = bindable,
): Promise<{ ports: Ports; uiPort: number | null; membership: Record<Service, number> }> {
  const taken = new Set<number>([...(o.reserved ?? []), ...(o.port === undefined ? [] : [o.port]), ...(o.uiPort === undefined ? [] : [o.uiPort])]);
  const port = o.port ?? (await draw(taken, o.ip));
  const uiPort = o.ui ? (o.uiPort ?? (await draw(taken, o.ip))) : null;
  const membership = {} as Record<Service, number>;
  for (const name of SERVICES) {
    const recorded = o.recorded?.[name];
    if (typeof recorded === 'number' && Number.isInteger(recorded) && !taken.has(recorded) && (await free(recorded, o.ip))) {
      taken.add(recorded);
      membership[name] = recorded;
    } else membership[name] = await draw(taken, o.ip);
  }
  const ports: Ports = {
    frontend: { grpc: port, membership: membership.frontend },
    history: { grpc: await draw(taken, o.ip), membership: membership.history },
    matching: { grpc: await draw(taken, o.ip), membership: membership.matching },
    worker: { grpc: await draw(taken, o.ip), membership: membership.worker },
    http: await draw(taken, o.ip),
    metrics: await draw(taken, o.ip),
  };
  return { ports, uiPort, membership };
}

/** The server process ended before it answered: its output says why (a Go panic, a port taken meanwhile). */
export class DevServerExitedError extends Error {}

/** Start attempts when the ports are ours to choose: a port found free can be taken before the server binds it. */
export const DEV_SERVER_START_ATTEMPTS = 3;

/**
 * What a start-up failure printed that says why: the lines of a Go panic or fatal error and of a port in use, which
 * come before the long goroutine dump (its tail alone does not name the cause).
 */
export function startupReason(output: string): string {
  const lines = output.split('\n');
  const at = lines.findIndex((l) => /^(panic|fatal error):|address already in use|level=(ERROR|FATAL)/.test(l));
  return at < 0 ? '' : lines.slice(at, at + 3).join('\n').slice(0, 2000);
}

/**
 * True when a start-up failure was a bind on a port in use other than `own` (the frontend port the caller chose): the
 * server's other ports (history, matching, worker, membership, HTTP, metrics) are always ours to choose again.
 */
export function takenOtherPort(message: string, own: number): boolean {
  const ports = [...message.matchAll(/listen tcp [^\s]*:(\d+): bind: address already in use/g)].map((m) => Number(m[1]));
  return ports.length > 0 && ports.every((p) => p !== own);
}

/**
 * Starts the server. When it exits during start-up and the caller chose no port, it is started again on new free ports,
 * up to DEV_SERVER_START_ATTEMPTS times: a free port found here can be taken by another process before the server binds
 * it (seen in CI runs: the server panicked while building its services, or its worker service failed to bind). When the
 * caller chose the frontend port, it is started again only when another of its ports was taken.
 */
export async function startDevServer(opts: DevServerOptions = {}): Promise<DevServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startDevServerOnce(opts);
    } catch (err) {
      if (!(err instanceof DevServerExitedError) || attempt >= DEV_SERVER_START_ATTEMPTS || opts.signal?.aborted) throw err;
      if (opts.port !== undefined && !takenOtherPort(err.message, opts.port)) throw err;
      opts.progress?.(`Temporal dev server exited during start-up (attempt ${attempt} of ${DEV_SERVER_START_ATTEMPTS}); starting it again on other ports`);
    }
  }
}

/** Written beside a SQLite file: the server version whose schema the file holds. */
export function dbVersionFile(dbFile: string): string {
  return `${dbFile}.server-version`;
}

/** Refuses a database file that another server version wrote; notes the version in one that has none yet. */
async function checkDbFile(dbFile: string): Promise<void> {
  const marker = dbVersionFile(dbFile);
  const exists = await access(dbFile).then(
    () => true,
    () => false,
  );
  const written = await readFile(marker, 'utf8').then(
    (t) => t.trim(),
    () => null,
  );
  if (exists && written !== TEMPORAL_SERVER_VERSION) {
    const by = written === null ? 'an earlier lbaas (the Temporal CLI\'s dev server, server 1.29.1)' : `Temporal server ${written}`;
    throw new Error(
      `${dbFile} was written by ${by}; this lbaas runs Temporal server ${TEMPORAL_SERVER_VERSION}, whose SQLite schema differs. ` +
        `Move it away to start afresh (mv ${dbFile} ${dbFile}.old), or choose another file (lbaas dev --db FILE)`,
    );
  }
  if (!exists) {
    await mkdir(path.dirname(dbFile), { recursive: true });
    await writeFile(marker, `${TEMPORAL_SERVER_VERSION}\n`);
  }
}

const SERVICES = ['frontend', 'history', 'matching', 'worker'] as const;
/** How long one service of the server tries to join the others (global.membership.maxJoinDuration). */
const MAX_JOIN = '30s';
type Service = (typeof SERVICES)[number];
type Ports = Record<Service, { grpc: number; membership: number }> & { http: number; metrics: number };

/** The server's static configuration: one process with every service, SQLite for the stores and visibility. */
export function renderDevServerConfig(o: { ip: string; ports: Ports; dbFile?: string; dynamicConfigFile: string; logLevel: string }): string {
  // In memory: a private database of a name of its own per process (the server keeps one connection open, so it lives
  // as long as the server). On a file: `setup` creates the schema when the tables are not there yet.
  const attributes = o.dbFile ? { mode: 'rwc', setup: 'true', journal_mode: 'wal', synchronous: '2' } : { mode: 'memory', cache: 'shared' };
  const store = {
    sql: {
      pluginName: 'sqlite',
      databaseName: o.dbFile ?? `lbaas-${process.pid}-${Date.now()}`,
      connectAddr: 'localhost',
      connectProtocol: 'tcp',
      connectAttributes: attributes,
      maxConns: 1,
      maxIdleConns: 1,
    },
  };
  const frontend = `${o.ip}:${o.ports.frontend.grpc}`;
  const services = Object.fromEntries(
    SERVICES.map((name) => [
      name,
      { rpc: { grpcPort: o.ports[name].grpc, membershipPort: o.ports[name].membership, bindOnIP: o.ip, ...(name === 'frontend' ? { httpPort: o.ports.http } : {}) } },
    ]),
  );
  const config = {
    log: { stdout: true, level: o.logLevel },
    persistence: { defaultStore: 'sqlite', visibilityStore: 'sqlite', numHistoryShards: 1, datastores: { sqlite: store } },
    global: {
      membership: { maxJoinDuration: MAX_JOIN, broadcastAddress: o.ip },
      pprof: { port: 0 },
      metrics: { prometheus: { framework: 'tally', timerType: 'histogram', listenAddress: `${o.ip}:${o.ports.metrics}` } },
    },
    services,
    publicClient: { hostPort: frontend },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: { active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: frontend, httpAddress: `${o.ip}:${o.ports.http}` } },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } },
    namespaceDefaults: { archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } } },
    dynamicConfigClient: { filepath: o.dynamicConfigFile, pollInterval: '10s' },
  };
  return `# Generated by dev/devserver.ts for one dev server; rewritten at every start.\n${stringify(config)}`;
}

/**
 * What the dev server changes from the server's defaults, and why. `started`: the configuration once the start-up's
 * namespaces and search attributes are visible to every service (startDevServer rewrites the file then).
 */
export function renderDevDynamicConfig(o: { started?: boolean } = {}): string {
  const set = (value: unknown) => [{ value }];
  return stringify({
    // Each of the server's services keeps its own copy of the namespace records, where SQL visibility keeps lbaas's
    // search-attribute names; a name added at start-up is usable by a service once its copy is read again. The
    // server's 2 s would hold up every start by that much (awaitSearchAttributes), so the start reads four times a
    // second (unlike the Temporal CLI's switch that re-reads the record for every visibility row). Once started, the
    // server's 2 s again: every service reading every namespace's record four times a second was a measurable part
    // of an idle server's CPU (about 0.7 of 1.6 CPU-s a minute with the 56 namespaces of `npm test`).
    'system.namespaceCacheRefreshInterval': set(`${o.started ? STARTED_NAMESPACE_REFRESH_MS : NAMESPACE_REFRESH_MS}ms`),
    // As the Temporal CLI's dev server: a smaller host-level cache than a production server's 128,000 entries.
    'history.hostLevelCacheMaxSize': set(8096),
    // The tests and `lbaas list` read visibility often; the default 10/s per instance throttles a test run.
    'frontend.namespaceRPS.visibility': set(100),
    'limit.historyCount.error': set(51200),
    ...Object.fromEntries(Object.entries(VERSIONING_DYNAMIC_CONFIG).map(([key, value]) => [key, set(value)])),
  });
}

/** `system.namespaceCacheRefreshInterval` of the dev server while it starts (renderDevDynamicConfig). */
export const NAMESPACE_REFRESH_MS = 250;
/** The same once started: the server's default. */
export const STARTED_NAMESPACE_REFRESH_MS = 2000;

const GRPC_INVALID_ARGUMENT = 3;
const GRPC_ALREADY_EXISTS = 6;
/** temporal.api.enums.v1.IndexedValueType's numbers for the types we register. */
const INDEXED_VALUE_TYPES = { Keyword: 2, Int: 3, KeywordList: 7 } as const;

/**
 * Registers a namespace with a day's retention and our search attributes; both may exist already (a kept file).
 * Resolves to whether it added any attribute.
 */
async function prepareNamespace(connection: Connection, namespace: string): Promise<boolean> {
  try {
    await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
  } catch (err) {
    if ((err as { code?: number }).code !== GRPC_ALREADY_EXISTS) throw err;
  }
  const searchAttributes = Object.fromEntries(Object.entries(SEARCH_ATTRIBUTES).map(([name, t]) => [name, INDEXED_VALUE_TYPES[t]]));
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const missing = Object.fromEntries(Object.entries(searchAttributes).filter(([name]) => !(name in (existing.customAttributes ?? {}))));
  if (Object.keys(missing).length === 0) return false;
  await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: missing });
  return true;
}

/** After this long without the attributes usable, the wait says what it waits for. */
const SAY_WAITING_AFTER_MS = 2_000;

/**
 * Waits until our search attributes added at `addedAt` are usable in every namespace by every service of the server.
 * listSearchAttributes cannot tell: it reads the namespace record itself, while each service maps the names from its
 * own copy (NAMESPACE_REFRESH_MS). A visibility query naming every attribute proves the frontend's copy; history,
 * matching and the worker service read theirs on the same period, each within one period and one read of the addition,
 * so the wait lasts at least two periods from it.
 */
async function awaitSearchAttributes(o: {
  connection: Connection;
  namespaces: readonly string[];
  addedAt: number;
  deadline: number;
  address: string;
  progress?: (line: string) => void;
}): Promise<void> {
  // A value of each attribute's own type: the server refuses a string compared with an Int attribute.
  const query = Object.entries(SEARCH_ATTRIBUTES)
    .map(([name, type]) => `${name} = ${type === 'Int' ? '0' : "'probe'"}`)
    .join(' AND ');
  let said = false;
  for (const namespace of o.namespaces) {
    for (;;) {
      try {
        await o.connection.workflowService.countWorkflowExecutions({ namespace, query });
        break;
      } catch (err) {
        const e = err as Error & { code?: number };
        if (e.code !== GRPC_INVALID_ARGUMENT) throw err;
        if (Date.now() > o.deadline) {
          throw new Error(
            `Temporal server at ${o.address} did not take up lbaas's search attributes in namespace ${namespace} in time ` +
              `(a query naming them still fails: ${e.message}); its log may say why`,
          );
        }
        if (!said && Date.now() - o.addedAt > SAY_WAITING_AFTER_MS) {
          said = true;
          o.progress?.(`waiting for the Temporal server to take up lbaas's search attributes in namespace ${namespace} (${e.message})`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }
  const rest = o.addedAt + 2 * NAMESPACE_REFRESH_MS - Date.now();
  if (rest > 0) await new Promise((r) => setTimeout(r, rest));
}

interface Spawned {
  child: ChildProcess;
  head(): string;
  tail(): string;
  exited: Promise<number | null>;
  hasExited(): boolean;
  stop(): Promise<void>;
}

/** Starts a process whose output goes to the log file and into memory (its first and last 64 KiB). */
function spawnLogged(file: string, args: string[], logStream: WriteStream | null): Spawned {
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let tail = '';
  let head = '';
  const onData = (chunk: Buffer) => {
    if (head.length < 65_536) head += chunk.toString('utf8');
    tail = (tail + chunk.toString('utf8')).slice(-65_536);
    logStream?.write(chunk);
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  let done = false;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  void exited.then(() => (done = true));
  return {
    child,
    head: () => head,
    tail: () => tail,
    exited,
    hasExited: () => done,
    async stop() {
      if (done) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function startDevServerOnce(opts: DevServerOptions): Promise<DevServer> {
  const needed = [...(opts.serverPath ? [] : (['server'] as const)), ...(opts.ui && !opts.uiPath ? (['ui'] as const) : [])];
  const found = needed.length > 0 ? await ensureTemporalServer({ which: needed, progress: opts.progress }) : {};
  const serverPath = opts.serverPath ?? (found as { server: string }).server;
  const uiPath = opts.ui ? (opts.uiPath ?? (found as { ui: string }).ui) : null;
  const ip = opts.ip ?? '127.0.0.1';
  const namespace = opts.namespace ?? 'default';
  const { ports, uiPort, membership } = await chooseDevServerPorts({
    ip,
    ui: opts.ui === true,
    ...(opts.port !== undefined ? { port: opts.port } : {}),
    ...(opts.uiPort !== undefined ? { uiPort: opts.uiPort } : {}),
    ...(opts.reserved ? { reserved: opts.reserved } : {}),
    recorded: await recordedMembership(opts.dbFile),
  });
  const port = ports.frontend.grpc;
  if (opts.dbFile) await checkDbFile(opts.dbFile);

  const work = await mkdtemp(path.join(os.tmpdir(), 'lbaas-devserver-'));
  await mkdir(path.join(work, 'config'));
  const dynamicConfigFile = path.join(work, 'dynamic.yaml');
  await writeFile(dynamicConfigFile, renderDevDynamicConfig());
  const configFile = path.join(work, 'config', 'dev.yaml');
  await writeFile(configFile, renderDevServerConfig({ ip, ports, ...(opts.dbFile ? { dbFile: path.resolve(opts.dbFile) } : {}), dynamicConfigFile, logLevel: 'warn' }));
  let logStream: WriteStream | null = opts.logFile ? createWriteStream(opts.logFile, { flags: 'a' }) : null;
  const args = ['--config-file', configFile, '--allow-no-auth', 'start'];
  if (opts.dbFile) await writeFile(membershipPortsFile(opts.dbFile), `${JSON.stringify(membership)}\n`);
  const server = spawnLogged(serverPath, args, logStream);
  // The server's join retries (30 s each, up to five) would otherwise pass in silence, also once the frontend answers
  // (another of its services may be the one that cannot join). Watched before any await: output may come then.
  const onJoinFailure = (chunk: Buffer) => {
    if (!chunk.toString('utf8').includes('unable to bootstrap ringpop')) return;
    unwatchJoin();
    opts.progress?.(
      `the Temporal server's services could not join each other within ${MAX_JOIN}: ` +
        (opts.dbFile ? `${opts.dbFile} names members that sent a heartbeat less than 20 s ago, which no longer answer (a server on it stopped moments ago, or another one uses it); ` : '') +
        `it tries again every 10 s, up to five times${opts.logFile ? ` (its log: ${opts.logFile})` : ''}`,
    );
  };
  const unwatchJoin = () => {
    server.child.stdout?.off('data', onJoinFailure);
    server.child.stderr?.off('data', onJoinFailure);
  };
  server.child.stdout?.on('data', onJoinFailure);
  server.child.stderr?.on('data', onJoinFailure);
  let ui: Spawned | null = null;
  const stopAll = async () => {
    unwatchJoin();
    await ui?.stop();
    await server.stop();
    logStream?.end();
    logStream = null;
    await rm(work, { recursive: true, force: true });
  };

  const address = `${ip}:${port}`;
  const dev: DevServer = {
    address,
    namespace,
    port,
    uiPort,
    uiUrl: uiPort !== null ? `http://${ip === '127.0.0.1' ? 'localhost' : ip}:${uiPort}` : null,
    membershipPorts: membership,
    process: server.child,
    logTail: () => server.tail(),
    stop: stopAll,
  };

  const deadline = Date.now() + (opts.startTimeoutMs ?? 60_000);
  // When our search attributes were last added (a kept file may have them all): an attempt that fails after adding
  // them leaves the next one nothing to add, yet the services' copies may still lack them.
  let addedAt: number | null = null;
  const abortIfAsked = async () => {
    if (!opts.signal?.aborted) return;
    await stopAll();
    throw new DevServerAbortedError();
  };
  for (;;) {
    await abortIfAsked();
    if (server.hasExited()) {
      await stopAll();
      const reason = startupReason(server.head()) || startupReason(server.tail());
      throw new DevServerExitedError(`Temporal server exited during start-up (${serverPath} ${args.join(' ')}):\n${reason ? `${reason}\n...\n` : ''}${server.tail().slice(-1500)}`);
    }
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        const namespaces = [namespace, ...(opts.extraNamespaces ?? [])];
        for (const ns of namespaces) if (await prepareNamespace(connection, ns)) addedAt = Date.now();
        for (const ns of namespaces) await connection.workflowService.describeNamespace({ namespace: ns });
        break;
      } finally {
        await connection.close();
      }
    } catch (err) {
      if (Date.now() > deadline) {
        await stopAll();
        throw new Error(`Temporal server at ${address} did not answer within ${opts.startTimeoutMs ?? 60_000} ms: ${(err as Error).message}\n${server.tail().slice(-2000)}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  await abortIfAsked();
  if (addedAt !== null) {
    try {
      // The server has just answered, but on a busy machine a new connection can still time out: tried again until
      // the deadline, and the server stopped on any failure (a process left running would keep its caller alive).
      const connection = await connectBy(address, deadline);
      try {
        const namespaces = [namespace, ...(opts.extraNamespaces ?? [])];
        await awaitSearchAttributes({ connection, namespaces, addedAt, deadline, address, progress: opts.progress });
      } finally {
        await connection.close();
      }
    } catch (err) {
      await stopAll();
      throw err;
    }
  }

  // The server reads the file again within its poll interval (renderDevServerConfig's dynamicConfigClient).
  await writeFile(dynamicConfigFile, renderDevDynamicConfig({ started: true }));

  if (uiPath !== null && uiPort !== null) {
    try {
      ui = await launchWebUi({ uiPath, dir: work, address, namespace, ip, port: uiPort, logStream, signal: opts.signal });
    } catch (err) {
      await stopAll();
      throw err;
    }
  }
  await abortIfAsked();
  return dev;
}

export interface WebUi {
  url: string;
  port: number;
  /** SIGTERM, then SIGKILL after a grace time; resolves when the process has exited. */
  stop(): Promise<void>;
}

/**
 * The Web UI server alone, in front of a Temporal server that already runs at `address` (one `npm test` shares
 * between its files, say): what startDevServer's `ui` starts beside a server of its own.
 */
export async function startWebUi(opts: { address: string; namespace: string; uiPath?: string; ip?: string; port?: number; progress?: (line: string) => void }): Promise<WebUi> {
  const uiPath = opts.uiPath ?? (await ensureTemporalServer({ which: ['ui'], progress: opts.progress })).ui;
  const ip = opts.ip ?? '127.0.0.1';
  const port = opts.port ?? (await drawPort(new Set(), ip));
  const dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-webui-'));
  try {
    const ui = await launchWebUi({ uiPath, dir, address: opts.address, namespace: opts.namespace, ip, port, logStream: null });
    return {
      url: `http://${ip === '127.0.0.1' ? 'localhost' : ip}:${port}`,
      port,
      async stop() {
        await ui.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/** Starts the Web UI server (config written below `dir`) and waits until it accepts connections; stopped on failure. */
async function launchWebUi(o: { uiPath: string; dir: string; address: string; namespace: string; ip: string; port: number; logStream: WriteStream | null; signal?: AbortSignal }): Promise<Spawned> {
  const uiConfig = {
    temporalGrpcAddress: o.address,
    host: o.ip,
    port: o.port,
    enableUi: true,
    defaultNamespace: o.namespace,
    cors: { cookieInsecure: true, allowOrigins: [] },
    hideLogs: true,
    disableNewsFetch: true,
    notifyOnNewVersion: false,
    refreshInterval: '1m',
  };
  const configDir = path.join(o.dir, 'ui');
  await mkdir(configDir, { recursive: true });
  await writeFile(path.join(configDir, 'development.yaml'), stringify(uiConfig));
  const ui = spawnLogged(o.uiPath, ['--root', o.dir, '--config', 'ui', '--env', 'development', 'start'], o.logStream);
  const uiDeadline = Date.now() + 30_000;
  while (!(await answers(o.ip, o.port))) {
    if (o.signal?.aborted) {
      await ui.stop();
      throw new DevServerAbortedError();
    }
    if (ui.hasExited() || Date.now() > uiDeadline) {
      const why = ui.tail().slice(-1500);
      await ui.stop();
      throw new Error(`the Temporal Web UI server did not start on ${o.ip}:${o.port}: ${why || 'no output'}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return ui;
}

/** A connection to the server, tried every 200 ms until `deadline` (the last failure is thrown). */
async function connectBy(address: string, deadline: number): Promise<Connection> {
  for (;;) {
    try {
      return await Connection.connect({ address, connectTimeout: 1000 });
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** Whether something accepts TCP connections on the port. */
async function answers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
