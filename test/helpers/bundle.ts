/**
 * The workflow bundle the test workers load: the one `npm test` built for the whole run (LBAAS_TEST_WORKFLOW_BUNDLE,
 * scripts/test.js), else built once per test file (process).
 */
import { readFile } from 'node:fs/promises';
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { workflowsPath } from '../../worker/main';

let bundle: Promise<WorkflowBundleWithSourceMap> | null = null;
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  const prebuilt = process.env.LBAAS_TEST_WORKFLOW_BUNDLE;
  // Source maps are inline in the code; the separate field is unused by the SDK.
  bundle ??= prebuilt
    ? readFile(prebuilt, 'utf8').then((code) => ({ code, sourceMap: '' }))
    : bundleWorkflowCode({ workflowsPath, logger: { info() {}, warn() {}, error: console.error, debug() {}, trace() {}, log() {} } as never });
  return bundle;
}
