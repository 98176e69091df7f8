/**
 * Chaos inside the test suite: a reduced chaos run (3 services, Engine faults, worker SIGKILLs, one Temporal server
 * restart on the same SQLite file and port) whose every invariant must hold. The same on the realistic Engine is in
 * chaos-realistic.test.ts, the invariant checks on crafted states and the failures the full run found in
 * chaos-found.test.ts: three files, so that `npm run test:faults` runs the two long runs side by side.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatReport, runChaos } from './run';

/** The worker processes load the run's prebuilt workflow bundle when the test runner (scripts/test.js) built one, instead of bundling at each (re)start. */
const PREBUILT = process.env.LBAAS_TEST_WORKFLOW_BUNDLE ? { workflowBundle: process.env.LBAAS_TEST_WORKFLOW_BUNDLE } : {};

test('reduced chaos run: 3 services, 10% of each Engine fault, 2 worker SIGKILLs, one Temporal restart; every invariant holds', async (t) => {
  const started = Date.now();
  const report = await runChaos({
    services: 3,
    seed: 20261121,
    kills: 2,
    durationMs: 30_000,
    changed: 1,
    // Names shared between services are covered by the deterministic tests of chaos-found.test.ts; here they would only
    // add noise.
    sharedSuffix: false,
    convergeTimeoutMs: 240_000,
    ...PREBUILT,
  });
  t.diagnostic(`finished in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  for (const line of formatReport(report).split('\n')) t.diagnostic(line);
  assert.equal(report.injected.workerKills, 2);
  assert.equal(report.injected.serverRestarts, 1);
  assert.ok(report.injected.serverError + report.injected.rateLimited + report.injected.dropAfterCommit > 0, 'request faults were injected');
  assert.equal(report.invariants.length, 9);
  for (const inv of report.invariants) assert.ok(inv.held, `${inv.name}: ${inv.detail.join('; ')}`);
});
