/**
 * Entry of a benchmark worker process (forked by worker-process.ts): one lbaas worker exactly as `lbaas worker`
 * builds it (createLbaasWorker), on a prebuilt workflow bundle so that bundling does not inflate its peak memory.
 * It counts the Engine requests it makes per activity type and their latency, and answers the parent over IPC.
 */
import { Context } from '@temporalio/activity';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import type { AwaitReadyOptions } from '../activities/objects';
import { EngineClient } from '../activities/engine';
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
}

export type FromChild = { type: 'ready' } | { type: 'stats'; id: number; stats: WorkerStats } | { type: 'failed'; message: string };

function send(m: FromChild): void {
  process.send?.(m);
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const cfg = JSON.parse(process.env.LBAAS_BENCH_WORKER ?? '{}') as WorkerChildConfig;
  let latencies: number[] = [];
  let byActivity: Record<string, number> = {};
  const engine = new EngineClient({
    baseUrl: cfg.engineUrl,
    token: cfg.token,
    onResponse: (e) => {
      latencies.push(e.durationMs);
      let type = 'outside activities';
      try {
        type = Context.current().info.activityType;
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
    };
    if (m.reset) {
      latencies = [];
      byActivity = {};
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
