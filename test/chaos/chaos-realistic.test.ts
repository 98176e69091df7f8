/**
 * The reduced chaos run (chaos.test.ts) on the simulator's realistic profile: the real Engine's manners on top of the
 * same faults and a worker SIGKILL; every invariant must hold. A file of its own so that `npm test` runs it beside
 * the ideal one.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatReport, runChaos } from './run';

/** The worker processes load the run's prebuilt workflow bundle when `npm test` built one, instead of bundling at each (re)start. */
const PREBUILT = process.env.LBAAS_TEST_WORKFLOW_BUNDLE ? { workflowBundle: process.env.LBAAS_TEST_WORKFLOW_BUNDLE } : {};

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
  });
  t.diagnostic(`finished in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  for (const line of formatReport(report).split('\n')) t.diagnostic(line);
  assert.equal(report.options.profile, 'realistic');
  assert.equal(report.injected.workerKills, 1);
  assert.equal(report.invariants.length, 9);
  for (const inv of report.invariants) assert.ok(inv.held, `${inv.name}: ${inv.detail.join('; ')}`);
});
