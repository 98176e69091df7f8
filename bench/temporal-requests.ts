/**
 * The requests a Temporal dev server's frontend answered, by operation (its Prometheus counter `service_requests` with
 * `service_name="frontend"`): what a client path asks of Temporal, beside the CPU seconds bench/phase.ts measures.
 * bench/kube.ts reads it before and after the apply of lbaas kube and of the `lbaas apply` fleet, so the two paths'
 * Temporal work can be compared request by request (describes, update polls, workflow and activity task completions).
 */
import { readFileSync } from 'node:fs';

/** The frontend's request counts by operation, summed over the other labels, from a Prometheus text exposition. */
export function frontendRequests(metricsText: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of metricsText.split('\n')) {
    if (!line.startsWith('service_requests{') || !line.includes('service_name="frontend"')) continue;
    const op = /[{,]operation="([^"]+)"/.exec(line)?.[1];
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (op === undefined || !Number.isFinite(value)) continue;
    out[op] = (out[op] ?? 0) + value;
  }
  return out;
}

/** `after` minus `before` per operation, only the operations that moved. */
export function requestsBetween(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const op of Object.keys(after).sort()) {
    const d = (after[op] ?? 0) - (before[op] ?? 0);
    if (d !== 0) out[op] = d;
  }
  return out;
}

/**
 * The Prometheus address in a dev server's config (dev/devserver.ts renderDevServerConfig writes
 * `prometheus: … listenAddress: <ip>:<port>`), or null when it has none.
 */
export function metricsAddressOf(configText: string): string | null {
  return /prometheus:[\s\S]*?listenAddress:\s*['"]?([^'"\s]+)/.exec(configText)?.[1] ?? null;
}

/**
 * How long after a phase its counts are read: the server's metrics reach the Prometheus endpoint on a reporting
 * interval, so a reading at once misses the last second's requests (a 10-Service fleet apply read at once showed 144
 * activity completions of its 201).
 */
export const SETTLE_MS = 3000;

/**
 * The frontend's request counts of the dev server with process id `pid` (its config file named by `--config-file` on
 * its command line); null when they cannot be read (not Linux, no metrics address): the benchmark goes on without them.
 */
export async function devServerRequests(pid: number): Promise<Record<string, number> | null> {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const i = args.indexOf('--config-file');
    if (i < 0 || args[i + 1] === undefined) return null;
    const address = metricsAddressOf(readFileSync(args[i + 1] as string, 'utf8'));
    if (address === null) return null;
    const res = await fetch(`http://${address}/metrics`);
    if (!res.ok) return null;
    return frontendRequests(await res.text());
  } catch {
    return null;
  }
}

/**
 * The worker's workflow cache over a phase, from the SDK's worker metrics (a child worker started with a
 * `metricsAddress`, dev/child-worker.ts): workflow tasks that found their run cached (`hits`), tasks whose run had
 * to be rebuilt from its history (`misses`: a replay of the whole history on the worker, and the full history sent by
 * the server), and runs evicted to make room (`forcedEvictions`). What the same Temporal requests can cost twice.
 */
export interface WorkflowCacheCounts {
  hits: number;
  misses: number;
  forcedEvictions: number;
}

const CACHE_COUNTERS: Record<string, keyof WorkflowCacheCounts> = {
  temporal_sticky_cache_hit: 'hits',
  temporal_sticky_cache_miss: 'misses',
  temporal_sticky_cache_total_forced_eviction: 'forcedEvictions',
};

/** The workflow cache counters in a worker's Prometheus text, summed over their labels. */
export function workflowCacheCounts(metricsText: string): WorkflowCacheCounts {
  const out: WorkflowCacheCounts = { hits: 0, misses: 0, forcedEvictions: 0 };
  for (const line of metricsText.split('\n')) {
    const name = /^([a-z_]+)[{ ]/.exec(line)?.[1];
    const key = name === undefined ? undefined : CACHE_COUNTERS[name];
    if (key === undefined) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) out[key] += value;
  }
  return out;
}

/** The worker's cache counters at `address` (`host:port`), or null when they cannot be read. */
export async function workerCacheCounts(address: string | undefined): Promise<WorkflowCacheCounts | null> {
  if (address === undefined) return null;
  try {
    const res = await fetch(`http://${address}/metrics`);
    return res.ok ? workflowCacheCounts(await res.text()) : null;
  } catch {
    return null;
  }
}

/** `after` minus `before`. */
export function cacheBetween(before: WorkflowCacheCounts, after: WorkflowCacheCounts): WorkflowCacheCounts {
  return { hits: after.hits - before.hits, misses: after.misses - before.misses, forcedEvictions: after.forcedEvictions - before.forcedEvictions };
}
