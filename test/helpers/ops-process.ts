/**
 * Worker processes for the operations tests: `node bin/lbaas.js worker` started the way an operator starts it (only
 * environment variables), with its output captured, readiness taken from its start-up line, and its exit observed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';

/** The repository root (this file runs from dist/test/helpers). */
export const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
export const LBAAS_BIN = path.join(REPO_ROOT, 'bin', 'lbaas.js');

export interface WorkerProcessOptions {
  temporalAddress: string;
  namespace?: string;
  taskQueue: string;
  engineUrl: string;
  token: string;
  /** `host:port` for LBAAS_METRICS_ADDRESS. */
  metricsAddress?: string;
  /** The lbaas.js to run: another build's (the upgrade test); this checkout's when absent. */
  bin?: string;
  /** LBAAS_SET_CURRENT_VERSION: make the worker's build current once it polls. Default true; 'unset' leaves it out. */
  setCurrent?: boolean | 'unset';
  /** `host:port` for LBAAS_HEALTH_ADDRESS. */
  healthAddress?: string;
  /**
   * Bundle the workflows at start as a worker without LBAAS_WORKFLOW_BUNDLE does. Otherwise the worker loads the
   * run's prebuilt bundle (LBAAS_TEST_WORKFLOW_BUNDLE, set by scripts/test.js) through LBAAS_WORKFLOW_BUNDLE when there
   * is one: the same code, without a few CPU-seconds of bundling per start.
   */
  bundleAtStart?: boolean;
  /** Bounds the wait for the start-up line (the worker bundles the workflows first). */
  readyTimeoutMs?: number;
  /** More variables (OTEL_*, LBAAS_LOG_FORMAT). */
  extraEnv?: Record<string, string>;
}

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface WorkerProcess {
  proc: ChildProcess;
  pid: number;
  /** The Temporal worker identity the SDK gives a worker by default: `<pid>@<hostname>`. */
  identity: string;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves once the worker has printed its start-up line (it polls right after). */
  ready: Promise<void>;
  exited: Promise<ProcessExit>;
  hasExited(): boolean;
  /** SIGKILL unless it has exited; resolves on exit. For cleanup. */
  kill(): Promise<ProcessExit>;
}

export function spawnWorker(o: WorkerProcessOptions): WorkerProcess {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TEMPORAL_ADDRESS: o.temporalAddress,
    TEMPORAL_NAMESPACE: o.namespace ?? 'default',
    LBAAS_TASK_QUEUE: o.taskQueue,
    ANEXIA_ENGINE_URL: o.engineUrl,
    ANEXIA_TOKEN: o.token,
    // Tasks reach only the Current Version: like every test worker, this one makes its build current.
    ...(o.setCurrent === 'unset' ? {} : { LBAAS_SET_CURRENT_VERSION: String(o.setCurrent ?? true) }),
    ...(o.healthAddress ? { LBAAS_HEALTH_ADDRESS: o.healthAddress } : {}),
    ...(o.metricsAddress ? { LBAAS_METRICS_ADDRESS: o.metricsAddress } : {}),
    ...(!o.bundleAtStart && process.env.LBAAS_TEST_WORKFLOW_BUNDLE ? { LBAAS_WORKFLOW_BUNDLE: process.env.LBAAS_TEST_WORKFLOW_BUNDLE } : {}),
    ...o.extraEnv,
  };
  const bin = o.bin ?? LBAAS_BIN;
  const proc = spawn(process.execPath, [bin, 'worker'], { cwd: path.dirname(path.dirname(bin)), env, stdio: ['ignore', 'pipe', 'pipe'] });
  if (proc.pid === undefined) throw new Error(`could not start ${bin} worker`);
  let out = '';
  let exit: ProcessExit | null = null;
  const exited = new Promise<ProcessExit>((resolve) =>
    proc.once('exit', (code, signal) => {
      exit = { code, signal };
      resolve(exit);
    }),
  );
  const ready = new Promise<void>((resolve, reject) => {
    const timeoutMs = o.readyTimeoutMs ?? 60_000;
    const timer = setTimeout(() => reject(new Error(`worker ${proc.pid} printed no start-up line within ${timeoutMs} ms:\n${out.slice(-3000)}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      out += chunk.toString('utf8');
      if (out.includes('lbaas worker: task queue')) {
        clearTimeout(timer);
        resolve();
      }
    };
    proc.stdout?.on('data', onData);
    proc.stderr?.on('data', onData);
    void exited.then((e) => {
      clearTimeout(timer);
      reject(new Error(`worker ${proc.pid} exited (code ${e.code}, signal ${e.signal}) before it was ready:\n${out.slice(-3000)}`));
    });
  });
  ready.catch(() => {});
  return {
    proc,
    pid: proc.pid,
    identity: `${proc.pid}@${os.hostname()}`,
    output: () => out,
    ready,
    exited,
    hasExited: () => exit !== null,
    async kill() {
      if (exit) return exit;
      proc.kill('SIGKILL');
      return exited;
    },
  };
}

/** Resolves with the exit, or rejects after `ms`. */
export async function exitWithin(w: WorkerProcess, ms: number): Promise<ProcessExit> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      w.exited,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`worker ${w.pid} did not exit within ${ms} ms:\n${w.output().slice(-3000)}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Samples of a Prometheus text exposition (comments skipped). */
export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] as string] = (l[2] as string).replace(/\\(.)/g, '$1');
    samples.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return samples;
}

/** Sum of a metric's samples whose labels include `match`. */
export function sumOf(samples: readonly Sample[], name: string, match: Record<string, string> = {}): number {
  return samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);
}

export async function scrape(metricsAddress: string): Promise<{ text: string; samples: Sample[] }> {
  const res = await fetch(`http://${metricsAddress}/metrics`, { signal: AbortSignal.timeout(5000) });
  if (res.status !== 200) throw new Error(`GET http://${metricsAddress}/metrics: ${res.status}`);
  const text = await res.text();
  return { text, samples: parsePrometheus(text) };
}
