/**
 * The reduced chaos run (chaos.test.ts) on the simulator's realistic profile: the real Engine's manners on top of the
 * same faults and a worker SIGKILL; every invariant must hold. A file of its own so that `npm run test:faults` runs
 * it beside the ideal one. Without a Temporal restart it needs no Temporal server of its own: it runs on the test
 * runner's shared one (scripts/test.js) (its own namespace), or on one of its own when the file runs alone. The
 * Engine token is then looked for in the workers' and the simulator's logs, not the shared server's: chaos.test.ts,
 * on a server of its own, covers that log.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { namespaceOfTestFile } from '../helpers/namespace';
import { formatReport, runChaos } from './run';

/** The worker processes load the run's prebuilt workflow bundle when the test runner built one, instead of bundling at each (re)start. */
const PREBUILT = process.env.LBAAS_TEST_WORKFLOW_BUNDLE ? { workflowBundle: process.env.LBAAS_TEST_WORKFLOW_BUNDLE } : {};
/** The test runner's shared dev server and the namespace it registered for this file (test/helpers/namespace.ts). */
const SHARED = process.env.LBAAS_TEST_TEMPORAL_ADDRESS
  ? { temporal: { address: process.env.LBAAS_TEST_TEMPORAL_ADDRESS, namespace: namespaceOfTestFile(process.argv[1] ?? '') ?? 'default' } }
  : {};

test('reduced chaos run on the realistic Engine (429 without Retry-After per token, listed deletion, tag index lag, sparse answers) under the same faults: every invariant holds', async (t) => {
  const started = Date.now();
  const report = await runChaos({
    profile: 'realistic',
    services: 2,
    seed: 20261123,
    kills: 1,
    durationMs: 30_000,
    changed: 1,
    sharedSuffix: false,
    serverRestart: false,
    convergeTimeoutMs: 300_000,
    ...PREBUILT,
    ...SHARED,
  });
  t.diagnostic(`finished in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  for (const line of formatReport(report).split('\n')) t.diagnostic(line);
  assert.equal(report.options.profile, 'realistic');
  assert.equal(report.injected.workerKills, 1);
  assert.equal(report.invariants.length, 9);
  for (const inv of report.invariants) assert.ok(inv.held, `${inv.name}: ${inv.detail.join('; ')}`);
});
