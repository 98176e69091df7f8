/**
 * Worker child processes for the tests that SIGKILL a worker for real (dev/child-worker.ts), on the run's prebuilt
 * workflow bundle, or the test file's (stack.ts) written once to a temporary file.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startChildWorker as startChild, type ChildWorker, type ChildWorkerOptions as DevChildWorkerOptions } from '../../dev/child-worker';
import { workflowBundle } from './stack';

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
