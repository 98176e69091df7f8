/**
 * Process settings of docs/spec.md#settings, read in one place. Temporal's own connection settings come from
 * `@temporalio/envconfig` (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE and
 * temporal.toml profiles); the Engine token is read by workers only and never by clients.
 */
import { loadClientConnectConfig, type ClientConnectConfig } from '@temporalio/envconfig';
import type { ConnectionOptions } from '@temporalio/client';

/** Options envconfig produces; usable by the worker's NativeConnection and, via clientConnectionOptions, the client's. */
export type TemporalConnectionOptions = ClientConnectConfig['connectionOptions'] & { address: string };

/** Task queue of every lbaas workflow and activity. */
export const DEFAULT_TASK_QUEUE = 'lbaas';
/** The local dev server's default address, used when no Temporal setting names another. */
const DEFAULT_TEMPORAL_ADDRESS = 'localhost:7233';

export interface TemporalSettings {
  connection: TemporalConnectionOptions;
  namespace: string;
  taskQueue: string;
}

export function temporalSettings(env: NodeJS.ProcessEnv = process.env): TemporalSettings {
  const overrideEnvVars = Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string'));
  const config = loadClientConnectConfig({ overrideEnvVars, profile: env.TEMPORAL_PROFILE || undefined });
  const opts = config.connectionOptions;
  return {
    connection: { ...opts, address: opts.address || DEFAULT_TEMPORAL_ADDRESS },
    namespace: config.namespace || 'default',
    taskQueue: env.LBAAS_TASK_QUEUE || DEFAULT_TASK_QUEUE,
  };
}

/** The same settings in the shape of @temporalio/client's Connection.connect. */
export function clientConnectionOptions(s: TemporalSettings): ConnectionOptions {
  const { address, tls, apiKey, metadata } = s.connection;
  return { address, ...(tls !== undefined ? { tls: tls as ConnectionOptions['tls'] } : {}), ...(apiKey ? { apiKey } : {}), ...(metadata ? { metadata } : {}) };
}
