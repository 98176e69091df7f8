/**
 * Starts worker-process.ts as a child process and hands the parent what it needs: wait for it to poll, ask it for
 * its Engine request statistics, stop it gracefully, or SIGKILL it and see how it ended. The crash tests (through
 * test/helpers/child-worker.ts) and the benchmarks both run their workers this way.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { DeployTimesOptions } from '../activities/deploy-times';
import type { PacingOptions } from '../activities/engine';
import type { AwaitReadyOptions } from '../activities/objects';
import type { ChildWorkerConfig, ChildWorkerStats, FromChild, ToChild } from './worker-process';
import { DEFAULT_WORKFLOW_HEAP_MIB, nativeMemoryEnv } from '../worker/heap';

export type { ChildWorkerStats } from './worker-process';

export interface ChildWorkerOptions {
  temporalAddress: string;
  namespace: string;
  taskQueue: string;
  engineUrl: string;
  token: string;
  identity?: string;
  /** A prebuilt workflow bundle's code file, so that the child starts without bundling. */
  bundlePath: string;
  readiness?: AwaitReadyOptions;
  deployTimes?: DeployTimesOptions;
  /** false: the closing observation reads every object again (worker-process.ts); on when absent. */
  recentReads?: boolean;
  /** The worker's Engine request budget (activities/engine/pacing.ts); none when absent. */
  pacing?: PacingOptions;
  /** Workflow runs the worker keeps cached; the SDK's default when absent. */
  maxCachedWorkflows?: number;
  /**
   * The V8 heap limit of the child's isolates (main and workflow threads), `--max-old-space-size`; when absent, what
   * `lbaas worker` starts node with (DEFAULT_WORKFLOW_HEAP_MIB, worker/heap.ts).
   */
  heapMiB?: number;
  /**
   * Variables added to the child's environment. MALLOC_ARENA_MAX (read by the C library at start) is what
   * `lbaas worker` starts node with (worker/heap.ts) unless given here.
   */
  env?: Record<string, string>;
  /** `host:port` where the child serves the SDK's worker metrics (Prometheus); none when absent. */
  metricsAddress?: string;
  /** Every this many ms the child writes a `memory {...}` line (RSS, V8 heap, buffers in MiB) to its stderr. */
  memoryLogMs?: number;
  /** Also copy the child's output to ours (benchmarks); it is always kept for stderr(). */
  echo?: boolean;
  /** Bounds the wait for the child's first poll. Default 120 s: a loaded machine starts workers slowly. */
  readyTimeoutMs?: number;
}

export interface ChildWorker {
  process: ChildProcess;
  pid: number;
  /** Resolves once the worker polls; rejects if it fails or exits before. */
  ready: Promise<void>;
  /** Resolves with how the process ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Everything it wrote to stdout and stderr so far. */
  stderr(): string;
  /** Samples since the last reset; `reset` starts a new window. */
  stats(reset?: boolean): Promise<ChildWorkerStats>;
  /** Graceful stop (SIGKILL after 15 s); resolves on exit. */
  stop(): Promise<void>;
}

export async function startChildWorker(o: ChildWorkerOptions): Promise<ChildWorker> {
  const config: ChildWorkerConfig = {
    temporalAddress: o.temporalAddress,
    namespace: o.namespace,
    taskQueue: o.taskQueue,
    engineUrl: o.engineUrl,
    token: o.token,
    bundlePath: o.bundlePath,
    ...(o.identity ? { identity: o.identity } : {}),
    ...(o.readiness ? { readiness: o.readiness } : {}),
    ...(o.deployTimes ? { deployTimes: o.deployTimes } : {}),
    ...(o.recentReads === false ? { recentReads: false } : {}),
    ...(o.pacing ? { pacing: o.pacing } : {}),
    ...(o.maxCachedWorkflows ? { maxCachedWorkflows: o.maxCachedWorkflows } : {}),
    ...(o.memoryLogMs ? { memoryLogMs: o.memoryLogMs } : {}),
    ...(o.metricsAddress ? { metricsAddress: o.metricsAddress } : {}),
  };
  const child = fork(path.join(__dirname, 'worker-process.js'), [], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LBAAS_CHILD_WORKER: JSON.stringify(config), ...nativeMemoryEnv(o.env ?? {}), ...o.env },
    execArgv: [...process.execArgv, `--max-old-space-size=${o.heapMiB ?? DEFAULT_WORKFLOW_HEAP_MIB}`],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let out = '';
  const keep = (d: Buffer) => {
    out += d.toString();
    if (o.echo) process.stderr.write(d);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const name = o.identity ?? `worker ${child.pid}`;
  const ready = new Promise<void>((resolve, reject) => {
    const ms = o.readyTimeoutMs ?? 120_000;
    const timer = setTimeout(() => reject(new Error(`${name} did not start within ${ms} ms: ${out}`)), ms);
    child.on('message', (m: FromChild) => {
      if (m.type === 'ready') resolve();
      else if (m.type === 'failed') reject(new Error(`${name} failed: ${m.message}`));
      else return;
      clearTimeout(timer);
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited before it was ready (${code ?? signal}): ${out}`));
    });
  });
  ready.catch(() => {});

  let nextId = 1;
  const waiting = new Map<number, (s: ChildWorkerStats) => void>();
  child.on('message', (m: FromChild) => {
    if (m.type !== 'stats') return;
    waiting.get(m.id)?.(m.stats);
    waiting.delete(m.id);
  });
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    process: child,
    pid: child.pid ?? -1,
    ready,
    exited,
    stderr: () => out,
    stats(reset = false) {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${name} did not answer a stats request`)), 30_000);
        waiting.set(id, (s) => {
          clearTimeout(timer);
          resolve(s);
        });
        child.send({ type: 'stats', id, reset } satisfies ToChild);
      });
    },
    async stop() {
      if (!running()) return;
      child.send({ type: 'stop' } satisfies ToChild);
      const kill = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(kill);
    },
  };
}
