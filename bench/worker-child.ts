/**
 * Entry of a benchmark worker process (forked by worker-process.ts): one lbaas worker exactly as `lbaas worker`
 * builds it (createLbaasWorker), on a prebuilt workflow bundle so that bundling does not inflate its peak memory.
 * It counts the Engine requests it makes per activity type and their latency, and answers the parent over IPC.
 */
import { Context } from '@temporalio/activity';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import type { AwaitReadyOptions } from '../activities/objects';
import { EngineClient, type PacingOptions } from '../activities/engine';
import { createLbaasWorker } from '../worker/main';
import { median, quantile } from './util';

export interface WorkerChildConfig {
  address: string;
  namespace: string;
  taskQueue: string;
  engineUrl: string;
  token: string;
  bundlePath: string;
  /** awaitReady options (activities/objects.ts); the product defaults when absent. */
  readiness?: AwaitReadyOptions;
  /** The Engine request budget (activities/engine/pacing.ts); none (a bucket only after a 429) when absent. */
  pacing?: PacingOptions;
}

export type ToChild = { type: 'stats'; id: number; reset: boolean } | { type: 'stop' };

export interface WorkerStats {
  /** Engine requests since the last reset. */
  requests: number;
  /** Engine requests by the activity type that made them. */
  byActivity: Record<string, number>;
  /** Engine request latency (client side, headers and body), since the last reset. */
  latencyMedianMs: number;
  latencyP90Ms: number;
  rssBytes: number;
  /**
   * Readiness polling as it really happened: for the n-th gap between two consecutive GETs of one awaitReady
   * activity (across its attempts), the median gap in ms and how many activities had such a gap.
   */
  pollGaps: { medianMs: number; count: number }[];
  /** The pacer's 429 count and time spent backing off since the worker started (not reset). */
  rateLimited: number;
  backoffMs: number;
}

export type FromChild = { type: 'ready' } | { type: 'stats'; id: number; stats: WorkerStats } | { type: 'failed'; message: string };

function send(m: FromChild): void {
  process.send?.(m);
}

function pollGaps(polls: Map<string, number[]>): { medianMs: number; count: number }[] {
  const byOrdinal: number[][] = [];
  for (const times of polls.values()) {
    for (let i = 1; i < times.length && i <= 8; i++) (byOrdinal[i - 1] ??= []).push((times[i] as number) - (times[i - 1] as number));
  }
  return byOrdinal.map((gaps) => ({ medianMs: median(gaps), count: gaps.length }));
}

async function main(): Promise<void> {
  // Core's WARN about the shutdown RPC racing the closing connection is noise here; errors still show.
  Runtime.install({ logger: new DefaultLogger('WARN'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, console: {} } } });
  const cfg = JSON.parse(process.env.LBAAS_BENCH_WORKER ?? '{}') as WorkerChildConfig;
  let latencies: number[] = [];
  let byActivity: Record<string, number> = {};
  let polls = new Map<string, number[]>();
  const engine = new EngineClient({
    baseUrl: cfg.engineUrl,
    token: cfg.token,
    ...(cfg.pacing ? { pacing: cfg.pacing } : {}),
    onResponse: (e) => {
      latencies.push(e.durationMs);
      let type = 'outside activities';
      try {
        const info = Context.current().info;
        type = info.activityType;
        if (type === 'awaitReady') {
          const key = `${info.workflowExecution?.workflowId}/${info.workflowExecution?.runId}/${info.activityId}`;
          const times = polls.get(key) ?? [];
          times.push(Date.now());
          polls.set(key, times);
        }
      } catch {
        // Not inside an activity.
      }
      byActivity[type] = (byActivity[type] ?? 0) + 1;
    },
  });
  const connection = await NativeConnection.connect({ address: cfg.address });
  const clientConnection = await Connection.connect({ address: cfg.address });
  const worker = await createLbaasWorker({
    connection,
    namespace: cfg.namespace,
    taskQueue: cfg.taskQueue,
    engine,
    temporalClient: new Client({ connection: clientConnection, namespace: cfg.namespace }),
    workflowBundle: { codePath: cfg.bundlePath },
    activities: cfg.readiness ? { readiness: cfg.readiness } : {},
    shutdownGraceTime: '1s',
  });
  process.on('message', (m: ToChild) => {
    if (m.type === 'stop') {
      worker.shutdown();
      return;
    }
    const stats: WorkerStats = {
      requests: latencies.length,
      byActivity,
      latencyMedianMs: median(latencies),
      latencyP90Ms: quantile(latencies, 0.9),
      rssBytes: process.memoryUsage().rss,
      pollGaps: pollGaps(polls),
      rateLimited: engine.pacer.stats().rateLimited,
      backoffMs: engine.pacer.stats().backoffMs,
    };
    if (m.reset) {
      latencies = [];
      byActivity = {};
      polls = new Map();
    }
    send({ type: 'stats', id: m.id, stats });
  });
  const running = worker.run();
  send({ type: 'ready' });
  await running;
  await clientConnection.close();
  await connection.close();
  await engine.close();
  process.disconnect?.();
}

main().catch((err: unknown) => {
  send({ type: 'failed', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  process.exitCode = 1;
  process.disconnect?.();
});
