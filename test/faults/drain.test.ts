/**
 * `lbaas worker` on SIGTERM (worker/drain.ts), as processes started the way an operator starts them: two builds of
 * this checkout (LBAAS_BUILD_ID) in a Worker Deployment of their own. A worker whose build is no longer current keeps
 * serving the pass pinned to its build, says what it waits for, and stops once the pass has finished there; a
 * worker whose build is current stops at once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { workflowIds } from '../../contract';
import { seedLoadBalancer } from '../helpers/fixtures';
import { rollout } from '../helpers/file-temporal';
import { exitWithin } from '../helpers/ops-process';
import { serviceSpec, uniqueUid } from '../helpers/ops-services';
import { setCurrentVersion } from '../../worker/versioning';

// A Deployment of this file's own: its Current Version is what this test changes.
const ro = rollout({ name: 'drain', seed: 11 });
const { deploymentName } = ro;

test('SIGTERM to a worker of a build that is no longer current: it serves the pass pinned to its build until the pass has finished there, saying what it waits for, then exits 0; SIGTERM to a worker of the current build: it stops at once', { timeout: 300_000 }, async () => {
  const uid = uniqueUid('ops-drain');
  const { sim, lbaas, t } = ro;
  const { client, namespace } = t;
  const lb = seedLoadBalancer(sim, `lb-${uid}`);
  const old = ro.worker('drain-old', true);
  // The new build polls beside it from the start (not current, it gets nothing), so that the switch below is quick.
  const fresh = ro.worker('drain-new', false);
  await Promise.all([old.ready, fresh.ready]);
  await ro.untilCurrent('drain-old');
  await lbaas.applyRaw(serviceSpec(uid, [lb]));
  // The first pass half done.
  await ro.untilTagged(uid, 2);

  // A rollout: the new build becomes current, then the old worker gets SIGTERM with the pass in flight.
  assert.deepEqual(await setCurrentVersion(client, namespace, { deploymentName, buildId: 'drain-new' }), { result: 'set' });
  const pass = client.workflow.getHandle(workflowIds.pass(uid, 1));
  assert.equal((await pass.describe()).status.name, 'RUNNING', 'the pass must still run when SIGTERM comes');
  old.proc.kill('SIGTERM');
  const exit = await exitWithin(old, 240_000);
  const exitedAt = Date.now();
  assert.deepEqual(exit, { code: 0, signal: null }, old.output().slice(-3000));

  // The pass finished on the old build, before the old worker stopped, and converged; nothing was terminated.
  const d = await pass.describe();
  assert.equal(d.status.name, 'COMPLETED');
  const ranOn = d.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion;
  assert.deepEqual({ deploymentName: ranOn?.deploymentName, buildId: ranOn?.buildId }, { deploymentName, buildId: 'drain-old' });
  assert.ok((d.closeTime?.getTime() ?? Infinity) <= exitedAt, 'the old worker stopped before the pass had finished');
  assert.equal((await lbaas.waitConverged(uid, 1)).converged, true);
  const lines = old.output().split('\n');
  const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
  const steps = [
    at(/lbaas worker: SIGTERM: stopping, after draining drain-[0-9a-f]+\.drain-old if it is no longer the Current Version \(at most 300 s, LBAAS_DRAIN_TIMEOUT_SECONDS\)/),
    at(new RegExp(`lbaas worker: draining ${deploymentName}\\.drain-old \\(the Current Version is ${deploymentName}\\.drain-new\\): waiting for \\d+ workflows? pinned to it \\(.*${workflowIds.pass(uid, 1)}.*\\) to finish; stopping anyway in \\d+ s`)),
    at(new RegExp(`lbaas worker: ${deploymentName}\\.drain-old is drained: no workflow pinned to it runs; stopping after \\d+ s of drain`)),
  ];
  assert.ok(steps.every((i) => i >= 0) && steps[0]! < steps[1]! && steps[1]! < steps[2]!, `drain lines in order: ${JSON.stringify(steps)}\n${old.output().slice(-3000)}`);

  // The current build's worker: nothing to drain for, it stops at once.
  const sent = Date.now();
  fresh.proc.kill('SIGTERM');
  assert.deepEqual(await exitWithin(fresh, 60_000), { code: 0, signal: null });
  assert.ok(Date.now() - sent < 40_000, `the current build's worker took ${Date.now() - sent} ms to stop`);
  assert.match(fresh.output(), new RegExp(`lbaas worker: stopping now: ${deploymentName}\\.drain-new is the Current Version, so its other workers take its work`));
});
