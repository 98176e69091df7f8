/**
 * The Temporal backends the cluster benchmarks run on (bench/cluster.ts, bench/cluster-lifecycle.ts): the dev server
 * and the production-shaped local cluster, with the processes whose CPU counts as Temporal's and the database size.
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { startCluster, type Cluster } from '../cluster';
import { startDevServer, type DevServer } from '../dev/devserver';
import { ensureTemporalServer } from '../dev/temporal-server';
import type { RunResult } from './cluster-report';

export interface Backend {
  name: RunResult['backend'];
  address: string;
  namespace: string;
  /** Pids whose CPU counts as Temporal's (for the cluster: the server processes and the postmaster). */
  temporalPids(): number[];
  databaseBytes(): Promise<number>;
  stop(): Promise<void>;
}


const log = (line: string) => process.stderr.write(`[bench:cluster ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

export async function devBackend(tmp: string): Promise<Backend> {
  const dbFile = path.join(tmp, 'dev-server.db');
  await ensureTemporalServer({ which: ['server'], progress: log });
  let server: DevServer | null = null;
  // Its free ports are drawn before it binds them; on a busy machine another process can take one in between.
  for (let attempt = 1; !server; attempt++) {
    try {
      server = await startDevServer({ dbFile });
    } catch (err) {
      if (attempt === 3 || !/address already in use/.test((err as Error).message)) throw err;
      log(`dev server start: a port was taken meanwhile; trying again (${(err as Error).message.split('\n')[0]})`);
    }
  }
  const srv = server;
  return {
    name: 'dev server',
    address: srv.address,
    namespace: srv.namespace,
    temporalPids: () => [srv.process.pid ?? -1],
    // SQLite in WAL mode keeps recent writes in the -wal file until a checkpoint: both count.
    databaseBytes: async () => [dbFile, `${dbFile}-wal`].reduce((sum, f) => sum + (existsSync(f) ? statSync(f).size : 0), 0),
    stop: () => srv.stop(),
  };
}

export async function clusterBackend(tmp: string): Promise<Backend> {
  const cluster: Cluster = await startCluster({ stateDir: path.join(tmp, 'cluster'), progress: log });
  return {
    name: 'cluster',
    address: cluster.address,
    namespace: cluster.namespace,
    temporalPids: () => Object.values(cluster.pids()).filter((p) => p > 0),
    databaseBytes: async () => {
      const b = await cluster.databaseBytes();
      return b.main + b.visibility;
    },
    stop: () => cluster.stop(),
  };
}
