/**
 * Worker child processes for the tests that SIGKILL a worker for real (dev/child-worker.ts), on the run's prebuilt
 * workflow bundle, or the test file's (stack.ts) written once to a temporary file; and the stack such a file runs on
 * (crashStack).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import type { SimulatorOptions } from '../../simulator';
import { startChildWorker as startChild, type ChildWorker, type ChildWorkerOptions as DevChildWorkerOptions } from '../../dev/child-worker';
import { startStack, stopTemporalServer, temporalServer, TEST_TOKEN, workflowBundle, type Stack } from './stack';

export type { ChildWorker } from '../../dev/child-worker';

export interface ChildWorkerOptions extends Omit<DevChildWorkerOptions, 'bundlePath'> {
  /** Shorthand for `readiness`: the first poll interval, backing off to 4 times it. */
  readinessPollMs?: number;
}

let bundleFile: Promise<string> | null = null;
/** The run's prebuilt bundle (`npm test`), else the file's bundle written once to a temporary file. */
function bundlePath(): Promise<string> {
  const prebuilt = process.env.LBAAS_TEST_WORKFLOW_BUNDLE;
  bundleFile ??= prebuilt ? Promise.resolve(prebuilt) : (async () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'lbaas-bundle-')), 'workflow-bundle.js');
    writeFileSync(file, (await workflowBundle()).code);
    return file;
  })();
  return bundleFile;
}

export async function startChildWorker(o: ChildWorkerOptions): Promise<ChildWorker> {
  const { readinessPollMs, ...rest } = o;
  const readiness = o.readiness ?? (readinessPollMs ? { pollFirstMs: readinessPollMs, pollMaxMs: readinessPollMs * 4 } : undefined);
  return startChild({ ...rest, bundlePath: await bundlePath(), ...(readiness ? { readiness } : {}) });
}

/** The stack of a test file that SIGKILLs workers: no worker of its own in the test process, only child workers. */
export interface CrashStack {
  /** The file's stack (stack.ts); there once the file's `before` has run. */
  readonly stack: Stack;
  /** The child workers started so far, in order. */
  readonly children: readonly ChildWorker[];
  /** A child worker on the stack's task queue and simulator, started and polling; SIGKILLed after the last test if still alive. */
  childWorker(identity: string): Promise<ChildWorker>;
}

/**
 * Registers the file's `before` (the stack, its simulator with `sim`, then `setup`: Node 20 does not wait for one
 * top-level `before` of a file before the next) and `after` (kills the children left, stops the stack).
 */
export function crashStack(sim: SimulatorOptions, setup?: (stack: Stack) => void | Promise<void>): CrashStack {
  let stack: Stack | undefined;
  const children: ChildWorker[] = [];
  before(async () => {
    stack = await startStack({ worker: false, sim });
    await setup?.(stack);
  });
  after(async () => {
    for (const c of children) if (c.process.exitCode === null && c.process.signalCode === null) c.process.kill('SIGKILL');
    await stack?.stop();
    await stopTemporalServer();
  });
  const get = () => {
    if (!stack) throw new Error('crashStack: used before its before() hook ran');
    return stack;
  };
  return {
    get stack() {
      return get();
    },
    children,
    async childWorker(identity) {
      const srv = await temporalServer();
      const s = get();
      const c = await startChildWorker({ temporalAddress: srv.address, namespace: srv.namespace, taskQueue: s.taskQueue, engineUrl: s.sim.url, token: TEST_TOKEN, identity, readinessPollMs: 25 });
      children.push(c);
      await c.ready;
      return c;
    },
  };
}
