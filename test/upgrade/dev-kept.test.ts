/**
 * `lbaas dev` run again on its kept state by another build (a new commit, here another LBAAS_BUILD_ID): the example's
 * controller in .lbaas/temporal.db is pinned to the earlier build, which nothing polls any more, and the new worker
 * takes it over only once that build has not polled for 90 s (worker/stranded.ts). Until then `lbaas dev` used to wait
 * in silence after its start-up lines; it now says why, as `lbaas apply --wait` does, naming both builds.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { devArgs, startLongRun } from '../helpers/cli';
import { until } from '../helpers/workflows';


test('lbaas dev started again on its kept state by another build says, while the example waits, that its controller is pinned to the earlier build and that the new worker takes it over; Ctrl-C exits 0 both times', async (t) => {
  const cwd = await mkdtemp(path.join(os.tmpdir(), 'lbaas-dev-kept-'));
  t.after(() => rm(cwd, { recursive: true, force: true }));

  const first = startLongRun(t, await devArgs(), { cwd, env: { LBAAS_BUILD_ID: 'kept-a' } });
  await until('the first lbaas dev to converge the example', async () => (/^converged on 2 load balancers$/m.test(first.out()) ? true : first.proc.exitCode !== null ? assert.fail(first.out()) : false), 180_000, 250);
  assert.match(first.out(), /^worker build\s+lbaas\.kept-a \(the Current Version of Worker Deployment lbaas\)$/m, first.out());
  first.proc.kill('SIGINT');
  assert.equal(await first.exited, 0, first.out());

  const second = startLongRun(t, await devArgs(), { cwd, env: { LBAAS_BUILD_ID: 'kept-b' } });
  const warning =
    /^\[[^\]]+\] warning: workflow task of lbaas\/9a5f0c1e-3b7d-4c7a-9d8e-0f1a2b3c4d5e not picked up for \d+ s: the run is pinned to lbaas\.kept-a and no worker of that build polls task queue lbaas \(builds polling: kept-b\); fix: start a worker of build kept-a \(LBAAS_BUILD_ID=kept-a\), or let lbaas workers of the Current Version kept-b take the run over: they do once nothing has polled kept-a for 90 s/m;
  await until('the second lbaas dev to say why the example waits', async () => (warning.test(second.out()) ? true : second.proc.exitCode !== null ? assert.fail(second.out()) : false), 120_000, 250);
  // The apply itself waits: its update needs a workflow task of the pinned controller.
  assert.match(second.out(), /^full resync\s+Schedule lbaas-full-resync/m, second.out());
  assert.doesNotMatch(second.out(), /^converged on/m, second.out());
  second.proc.kill('SIGINT');
  assert.equal(await second.exited, 0, second.out());
});
