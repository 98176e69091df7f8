/**
 * Entry of a worker child process (started by child-worker.ts), for tests that SIGKILL a worker for real and for the
 * benchmarks, which measure one. The worker is the one `lbaas worker` runs (worker/start.ts), on a prebuilt workflow
 * bundle so that bundling neither delays its start nor inflates its memory.
 *
 * Its configuration comes in the environment variable LBAAS_CHILD_WORKER (JSON), the Engine token included: it is
 * never an argument, so it never shows in a process list. It tells the parent over IPC when it polls, answers stats
 * requests (the Engine requests it made per activity type, their latency, the gaps between readiness polls) and stops
 * gracefully on a `stop` message, SIGTERM or SIGINT.
 */
import { Context } from '@temporalio/activity';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { DeployTimesOptions } from '../activities/deploy-times';
import type { PacingOptions, RequestPacer } from '../activities/engine';
import type { AwaitReadyOptions } from '../activities/objects';
import { prometheusMetrics } from '../worker/metrics';
import { startWorker } from '../worker/start';
import { installWorkflowHeapProbe, memoryNow } from './memory-probe';

export interface ChildWorkerConfig {
  temporalAddress: string;
  namespace: string;
  taskQueue: string;
  engineUrl: string;
  token: string;
  /** A prebuilt workflow bundle's code file. */
  bundlePath: string;
  identity?: string;
  /** Readiness polling options of realizeObjects and settleObjects (activities/objects.ts); the product defaults when absent. */
  readiness?: AwaitReadyOptions;
  /** How realizeObjects learns deploy times (activities/deploy-times.ts); the product defaults when absent. */
  deployTimes?: DeployTimesOptions;
  /** Whether a round's closing observation reuses recent reads (activities/state.ts); the product default (on) when absent. */
  recentReads?: boolean;
  /** The Engine request budget (activities/engine/pacing.ts); none (a bucket only after a 429) when absent. */
  pacing?: PacingOptions;
  /** Workflow runs kept cached (worker/main.ts); the SDK's default when absent. */
  maxCachedWorkflows?: number;
  /** Every this many ms, one `memory {...}` line on stderr (dev/memory-probe.ts): RSS, both threads' V8 heaps, buffers, in MiB. */
  memoryLogMs?: number;
  /** `host:port` of a Prometheus endpoint for the SDK's worker metrics (its workflow cache's hits and misses); none when absent. */
  metricsAddress?: string;
}

/** Raw samples since the last reset; the reader computes whatever statistics it reports. */
export interface ChildWorkerStats {
  /** Engine request latencies (client side, headers and body), in ms. */
  latenciesMs: number[];
  /** Engine requests by the activity type that made them. */
  byActivity: Record<string, number>;
  rssBytes: number;
  /**
   * Readiness polling as it really happened: `pollGaps[n]` holds, for every object realizeObjects or settleObjects
   * polled (across attempts) with at least n+2 GETs, the gap in ms between its (n+1)-th and (n+2)-th GET; up to 8 gaps.
   */
  pollGaps: number[][];
  /** Readiness GETs per object (realizeObjects' and settleObjects' polls), one count per object that was polled. */
  pollsPerObject: number[];
  /** The Engine client's 429s and time spent backing off since the worker started (never reset). */
  rateLimited: number;
  backoffMs: number;
}

export type ToChild = { type: 'stats'; id: number; reset: boolean } | { type: 'stop' };
export type FromChild = { type: 'ready' } | { type: 'stats'; id: number; stats: ChildWorkerStats } | { type: 'failed'; message: string };

/** Gaps beyond the 8th are all at the backoff ceiling and add nothing. */
const MAX_POLL_GAPS = 8;

function send(m: FromChild): void {
  process.send?.(m);
}

class Samples {
  latenciesMs: number[] = [];
  byActivity: Record<string, number> = {};
  polls = new Map<string, number[]>();
  /** Readiness GETs by object identifier. */
  pollCounts = new Map<string, number>();

  polled(identifier: string): void {
    const times = this.polls.get(identifier) ?? [];
    times.push(Date.now());
    this.polls.set(identifier, times);
  }

  record(durationMs: number): void {
    this.latenciesMs.push(durationMs);
    let type = 'outside activities';
    try {
      const info = Context.current().info;
      type = info.activityType;
    } catch {
      // Not inside an activity.
    }
    this.byActivity[type] = (this.byActivity[type] ?? 0) + 1;
  }

  stats(pacer: RequestPacer): ChildWorkerStats {
    const pollGaps: number[][] = [];
    for (const times of this.polls.values()) {
      for (let i = 1; i < times.length && i <= MAX_POLL_GAPS; i++) (pollGaps[i - 1] ??= []).push((times[i] as number) - (times[i - 1] as number));
    }
    const pollsPerObject = [...this.polls.values()].map((times) => times.length);
    const { rateLimited, backoffMs } = pacer.stats();
    return { latenciesMs: this.latenciesMs, byActivity: this.byActivity, rssBytes: process.memoryUsage().rss, pollGaps, pollsPerObject, rateLimited, backoffMs };
  }
}

async function main(): Promise<void> {
  // Core's WARN about the shutdown RPC racing the closing connection is noise here; errors still show.
  const cfg = JSON.parse(process.env.LBAAS_CHILD_WORKER ?? '{}') as ChildWorkerConfig;
  Runtime.install({
    logger: new DefaultLogger('ERROR'),
    telemetryOptions: {
      logging: { filter: { core: 'ERROR', other: 'ERROR' }, console: {} },
      ...(cfg.metricsAddress ? { metrics: prometheusMetrics(cfg.metricsAddress) } : {}),
    },
  });
  // Before the SDK starts its workflow thread, so that the thread's heap is in the memory lines too.
  if (cfg.memoryLogMs) installWorkflowHeapProbe();
  let samples = new Samples();
  const running = await startWorker({
    temporal: { connection: { address: cfg.temporalAddress }, namespace: cfg.namespace, taskQueue: cfg.taskQueue },
    engine: { baseUrl: cfg.engineUrl, token: cfg.token, onResponse: (e) => samples.record(e.durationMs), ...(cfg.pacing ? { pacing: cfg.pacing } : {}) },
    workflowBundle: { codePath: cfg.bundlePath },
    activities: {
      ...(cfg.readiness ? { readiness: cfg.readiness } : {}),
      ...(cfg.deployTimes ? { deployTimes: cfg.deployTimes } : {}),
      ...(cfg.recentReads === false ? { recentReads: false } : {}),
      events: { polled: (_kind, identifier) => samples.polled(identifier) },
    },
    shutdownGraceTime: '1s',
    ...(cfg.maxCachedWorkflows ? { maxCachedWorkflows: cfg.maxCachedWorkflows } : {}),
    ...(cfg.identity ? { identity: cfg.identity } : {}),
  });
  if (cfg.memoryLogMs) setInterval(() => process.stderr.write(`memory ${JSON.stringify(memoryNow())}\n`), cfg.memoryLogMs).unref();
  const stop = () => void running.stop().catch(() => {});
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, stop);
  process.on('message', (m: ToChild) => {
    if (m.type === 'stop') return stop();
    send({ type: 'stats', id: m.id, stats: samples.stats(running.engine.pacer) });
    if (m.reset) samples = new Samples();
  });
  send({ type: 'ready' });
  try {
    await running.running;
  } finally {
    await running.stop();
    process.disconnect?.();
  }
}

main().catch((err: unknown) => {
  const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
  process.stderr.write(`worker-process: ${message}\n`);
  send({ type: 'failed', message });
  process.exitCode = 1;
  process.disconnect?.();
});
