/**
 * Starts test/helpers/worker-process.ts as a child process (a worker that can be SIGKILLed) and hands the parent
 * what it needs to wait for it, kill it and see how it ended.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { workflowBundle } from './stack';

export interface ChildWorker {
  process: ChildProcess;
  /** Resolves once the worker polls; rejects if it exits before. */
  ready: Promise<void>;
  /** Resolves with how the process ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
}

export interface ChildWorkerOptions {
  temporalAddress: string;
  namespace: string;
  taskQueue: string;
  engineUrl: string;
  token: string;
  identity: string;
  readinessPollMs?: number;
}

let bundleFile: Promise<string> | null = null;
/** The file's workflow bundle written once to a temporary file, so child workers start without bundling. */
function bundlePath(): Promise<string> {
  bundleFile ??= (async () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'lbaas-bundle-')), 'workflow-bundle.js');
    writeFileSync(file, (await workflowBundle()).code);
    return file;
  })();
  return bundleFile;
}

export async function startChildWorker(o: ChildWorkerOptions): Promise<ChildWorker> {
  const script = path.join(__dirname, 'worker-process.js');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TEMPORAL_ADDRESS: o.temporalAddress,
    TEMPORAL_NAMESPACE: o.namespace,
    LBAAS_TASK_QUEUE: o.taskQueue,
    ANEXIA_ENGINE_URL: o.engineUrl,
    ANEXIA_TOKEN: o.token,
    LBAAS_WORKER_IDENTITY: o.identity,
    LBAAS_WORKFLOW_BUNDLE: await bundlePath(),
    ...(o.readinessPollMs ? { LBAAS_READINESS_POLL_MS: String(o.readinessPollMs) } : {}),
  };
  const child = spawn(process.execPath, [script], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const ready = new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('worker ready\n')) resolve();
    });
    void exited.then(({ code, signal }) => reject(new Error(`worker ${o.identity} exited before it was ready (${code ?? signal}): ${err}`)));
  });
  return { process: child, ready, exited, stderr: () => err };
}
