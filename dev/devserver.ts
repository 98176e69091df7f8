/**
 * Starts a Temporal dev server (`temporal server start-dev`) for tests, benchmarks and `lbaas dev`: free ports,
 * our search attributes registered, SQLite persistence when asked, Web UI when asked, logs captured, clean stop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import net from 'node:net';
import { Connection } from '@temporalio/client';
import { ensureTemporalCli } from './temporal-path';

/** Custom search attributes of docs/spec.md#search-attributes, with their Temporal types. */
export const SEARCH_ATTRIBUTES: Record<string, 'Keyword' | 'KeywordList'> = {
  LbaasServiceUid: 'Keyword',
  LbaasLoadBalancers: 'KeywordList',
  LbaasPhase: 'Keyword',
  LbaasServerPool: 'Keyword',
};

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
  /** Path of the Temporal CLI; found or installed with ensureTemporalCli when absent. */
  temporalPath?: string;
  /** gRPC port; a free one when absent. */
  port?: number;
  ip?: string;
  namespace?: string;
  /** More namespaces to create at start-up (our search attributes are registered in each): `npm test` gives each
   * test file its own, so files can run at the same time without seeing each other's workflows and schedule. */
  extraNamespaces?: readonly string[];
  /** Serve the Web UI (on uiPort, or a free port). */
  ui?: boolean;
  uiPort?: number;
  /** SQLite file: state survives restarts. In memory when absent. */
  dbFile?: string;
  /** Where the server's own log goes (appended); kept in memory (last 64 KiB) otherwise. */
  logFile?: string;
  /** How long to wait for the server to answer (the first start of a fresh SQLite file can take a while). */
  startTimeoutMs?: number;
  progress?: (line: string) => void;
}

export interface DevServer {
  address: string;
  namespace: string;
  uiUrl: string | null;
  port: number;
  uiPort: number | null;
  process: ChildProcess;
  /** The last part of the server's log (for error messages). */
  logTail(): string;
  /** SIGTERM, then SIGKILL after a grace time; resolves when the process has exited. */
  stop(): Promise<void>;
}

/** A free TCP port on the loopback interface. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, host, () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
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
 * Starts the server. When it exits during start-up and the caller chose no port, it is started again on new free ports,
 * up to DEV_SERVER_START_ATTEMPTS times: a free port found here can be taken by another process before the server binds
 * it (seen once in a CI run: the server panicked while building its services).
 */
export async function startDevServer(opts: DevServerOptions = {}): Promise<DevServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startDevServerOnce(opts);
    } catch (err) {
      if (!(err instanceof DevServerExitedError) || opts.port !== undefined || attempt >= DEV_SERVER_START_ATTEMPTS) throw err;
      opts.progress?.(`Temporal dev server exited during start-up (attempt ${attempt} of ${DEV_SERVER_START_ATTEMPTS}); starting it again on other ports`);
    }
  }
}

async function startDevServerOnce(opts: DevServerOptions): Promise<DevServer> {
  const temporalPath = opts.temporalPath ?? (await ensureTemporalCli({ progress: opts.progress }));
  const ip = opts.ip ?? '127.0.0.1';
  const port = opts.port ?? (await freePort(ip));
  const namespace = opts.namespace ?? 'default';
  const uiPort = opts.ui ? (opts.uiPort ?? (await freePort(ip))) : null;
  // The dev server's HTTP API and metrics listen too; give them free ports so parallel servers never clash.
  const httpPort = await freePort(ip);
  const metricsPort = await freePort(ip);

  const args = ['server', 'start-dev', '--ip', ip, '--port', String(port), '--namespace', namespace];
  for (const extra of opts.extraNamespaces ?? []) args.push('--namespace', extra);
  args.push('--http-port', String(httpPort), '--metrics-port', String(metricsPort), '--log-level', 'warn');
  if (uiPort !== null) args.push('--ui-port', String(uiPort), '--ui-ip', ip);
  else args.push('--headless');
  if (opts.dbFile) args.push('--db-filename', opts.dbFile);
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) args.push('--search-attribute', `${name}=${type}`);
  for (const [key, value] of Object.entries(VERSIONING_DYNAMIC_CONFIG)) args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);

  const child = spawn(temporalPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let tail = '';
  let head = '';
  let logStream: WriteStream | null = opts.logFile ? createWriteStream(opts.logFile, { flags: 'a' }) : null;
  const onData = (chunk: Buffer) => {
    if (head.length < 65_536) head += chunk.toString('utf8');
    tail = (tail + chunk.toString('utf8')).slice(-65_536);
    logStream?.write(chunk);
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
    logStream?.end();
    logStream = null;
  });

  const address = `${ip}:${port}`;
  const server: DevServer = {
    address,
    namespace,
    port,
    uiPort,
    uiUrl: uiPort !== null ? `http://${ip === '127.0.0.1' ? 'localhost' : ip}:${uiPort}` : null,
    process: child,
    logTail: () => tail,
    async stop() {
      if (hasExited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };

  const deadline = Date.now() + (opts.startTimeoutMs ?? 60_000);
  for (;;) {
    if (hasExited) {
      const reason = startupReason(head) || startupReason(tail);
      throw new DevServerExitedError(`Temporal dev server exited during start-up (${temporalPath} ${args.join(' ')}):\n${reason ? `${reason}\n...\n` : ''}${tail.slice(-1500)}`);
    }
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.workflowService.describeNamespace({ namespace });
        return server;
      } finally {
        await connection.close();
      }
    } catch (err) {
      if (Date.now() > deadline) {
        await server.stop();
        throw new Error(`Temporal dev server at ${address} did not answer within ${opts.startTimeoutMs ?? 60_000} ms: ${(err as Error).message}\n${tail.slice(-2000)}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
