/**
 * `npm run test:cluster` (not part of `npm test`: it builds/needs the Temporal server and PostgreSQL, and takes a few
 * minutes). On the production-shaped local cluster, with three worker processes sharing the task queue: a history
 * host SIGKILLed while the reconciliations fan out (and later the other one), PostgreSQL restarted under every
 * Temporal service, workers SIGKILLed, a few Engine faults; then every chaos invariant must hold.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatClusterReport, runClusterChaos } from './run';

test('cluster chaos: history hosts SIGKILLed mid-fan-out, PostgreSQL restarted, workers SIGKILLed; every invariant holds', { timeout: 1_800_000 }, async (t) => {
  const started = Date.now();
  const report = await runClusterChaos({
    services: 8,
    seed: 20261123,
    workers: 3,
    workerKills: 2,
    durationMs: 60_000,
    engineFaultRate: 0.03,
    convergeTimeoutMs: 300_000,
    progress: (line) => t.diagnostic(line),
  });
  t.diagnostic(`finished in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  for (const line of formatClusterReport(report).split('\n')) t.diagnostic(line);

  // The faults happened as described, at moments where they could do harm.
  assert.deepEqual(report.historyKills.map((k) => k.host), ['history-1', 'history-2']);
  assert.ok(report.historyKills[0]!.reconciliationsRunning > 0, 'the first history host died while reconciliations were running');
  assert.equal(report.postgresRestarts.length, 1);
  assert.equal(report.workerKills, 2);
  // Several worker processes shared the task queue: activities ran on more than one of them.
  assert.ok(report.activityWorkers >= 2, `activities ran on ${report.activityWorkers} worker identities`);
  assert.equal(report.invariants.length, 11);
  for (const inv of report.invariants) assert.ok(inv.held, `${inv.name}: ${inv.detail.join('; ')}`);
});
