/**
 * What a script needs from the CLI against a real Temporal dev server, worker and simulator (test/helpers/cli-stack.ts;
 * a resync that converges and one that times out run as processes, the rest in this process):
 * `resync UID --wait` waits for the pass it triggered and exits like `apply --wait` (0 converged, 1 failed,
 * 3 timed out), `-o json` prints exactly one document on stdout for `resync` and `delete`, and the no-worker
 * warning shows only when no worker polls.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NO_WORKER_GRACE_MS } from '../../cli/connect';
import { valid } from '../helpers/ops-services';
import { cliEnv, runInProcess, type CliRun } from '../helpers/cli';
import { cliStack } from '../helpers/cli-stack';
import { exampleSpec, seedLoadBalancer, taggedLines } from '../helpers/fixtures';
import { temporalServer } from '../helpers/stack';
import { until } from '../helpers/workflows';

const FAST_DEPLOYS = { deployMs: { min: 20, max: 60 } };
const BOTH_PORTS = { '2001:db8::10': [80, 443], '203.0.113.10': [80, 443] };

const c = cliStack('scripting', { sim: FAST_DEPLOYS });
const { cli, proc } = c;
const ok = (r: CliRun, what: string) => assert.equal(r.code, 0, `${what}: exit ${r.code}; stderr: ${r.stderr}`);

/** A converged service of its own on a fresh load balancer. */
async function converged(uid: string) {
  const lb = seedLoadBalancer(c.stack.sim, `lb-${uid}`);
  const raw = exampleSpec([lb], { serviceUid: uid });
  const { revision } = await c.lbaas.apply(raw, valid(raw));
  const r = await c.lbaas.waitConverged(uid, revision);
  assert.equal(r.converged, true, r.error);
  return { lb, tag: `anxccm-svc-uid=${uid}` };
}

/** Deletes the service's Server node-1.http on the Engine behind the controller's back; a pass recreates it. */
async function loseServer(uid: string): Promise<void> {
  const victim = c.stack.sim.objects().find((o) => o.kind === 'server' && o.name === 'node-1.http.web.default.prod' && o.tags.includes(`anxccm-svc-uid=${uid}`));
  assert.ok(victim, 'the service has its Server node-1.http');
  await c.stack.engine.delete('server', victim.identifier);
  await until('the Server to be gone', async () => !c.stack.sim.objects().some((o) => o.identifier === victim.identifier), 10_000, 20);
}

test('resync UID --wait -o json returns the result of the pass it triggered (it recreated a lost object), exit 0, nothing on stderr', async () => {
  const uid = 'script-resync';
  const { lb, tag } = await converged(uid);
  const passBefore = (await c.lbaas.status(uid)).lastPass?.pass ?? 0;
  await loseServer(uid);
  const r = await proc(['resync', uid, '--wait', '-o', 'json']);
  ok(r, 'resync --wait');
  // Nothing on stderr: no progress lines with -o json, and no warning while a worker polls.
  assert.equal(r.stderr, '');
  const expected = { serviceUid: uid, revision: 1, converged: true, status: BOTH_PORTS, loadBalancers: { [lb]: { status: BOTH_PORTS, created: 1, destroyed: 0, recovered: 0 } } };
  assert.equal(r.stdout, `${JSON.stringify(expected, null, 2)}\n`);
  // The answer came once that pass had finished: the object is back and the controller is idle.
  assert.equal(taggedLines(c.stack.sim, tag).length, 12);
  const s = await c.lbaas.status(uid);
  assert.deepEqual({ pass: s.lastPass?.pass, running: s.running }, { pass: passBefore + 1, running: null });
});

test('resync UID --wait in text prints the pass like apply --wait; without --wait, -o json says the resync was requested', async () => {
  const uid = 'script-resync-text';
  const { lb } = await converged(uid);
  const r = await cli(['resync', uid, '--wait']);
  ok(r, 'resync --wait text');
  assert.equal(r.stderr.split('\n')[0], `resync requested for service ${uid}; waiting up to 10m for its pass`);
  assert.match(r.stdout, new RegExp(`^service +${uid}\\nrevision +1\\nresult +converged\\n`));
  assert.match(r.stdout, new RegExp(`\\n${lb} +converged +0 +0 +0\\n$`));
  const quick = await cli(['resync', uid, '-o', 'json']);
  ok(quick, 'resync -o json');
  assert.deepEqual(JSON.parse(quick.stdout), { serviceUid: uid, resyncRequested: true });
  assert.equal(quick.stderr, '');
});

test('resync UID --wait exits 3 when --timeout runs out before the pass has finished, naming what is pending', async () => {
  const uid = 'script-resync-slow';
  await converged(uid);
  await loseServer(uid);
  c.stack.sim.setFaults({ deployMs: 8_000 });
  try {
    const r = await proc(['resync', uid, '--wait', '--timeout', '3s', '-o', 'json']);
    assert.equal(r.code, 3, r.stderr);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, new RegExp(`^lbaas: timed out after 3s waiting for the resync pass of service ${uid} \\(the controller keeps working: lbaas status ${uid}; is a worker polling task queue ${c.stack.taskQueue}\\?\\)`));
  } finally {
    c.stack.sim.setFaults(FAST_DEPLOYS);
  }
  await until('the pass to finish', async () => (await c.lbaas.status(uid)).phase === 'Converged', 30_000, 100);
});

test('resync UID --wait exits 1 with the result document when the pass fails', async () => {
  const uid = 'script-resync-fail';
  const raw = exampleSpec(['lb-does-not-exist'], { serviceUid: uid });
  const { revision } = await c.lbaas.apply(raw, valid(raw));
  assert.equal((await c.lbaas.waitConverged(uid, revision)).converged, false);
  const r = await cli(['resync', uid, '--wait', '-o', 'json']);
  assert.equal(r.code, 1, r.stderr);
  const doc = JSON.parse(r.stdout);
  assert.equal(doc.converged, false);
  assert.match(doc.error, /"lb-does-not-exist" does not exist/);
  assert.match(r.stderr, new RegExp(`^lbaas: the resync pass of service ${uid} \\(revision 1\\) did not converge: .*"lb-does-not-exist" does not exist`));
  assert.equal(r.stderr.trimEnd().split('\n').length, 1);
  await c.lbaas.controller(uid).terminate('test cleanup');
});

test('resync UID --wait while the service is being deleted is refused with exit 2, naming the service', async () => {
  const uid = 'script-resync-deleting';
  const { tag } = await converged(uid);
  // Deleted objects stay deprovisioning for 3 s: the teardown, and with it the delete, lasts that long.
  c.stack.sim.setFaults({ ...FAST_DEPLOYS, deleteMs: { min: 3_000, max: 3_000 } });
  try {
    await c.lbaas.startDelete(uid);
    const r = await cli(['resync', uid, '--wait', '-o', 'json']);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, `lbaas: service ${uid}: resync refused: service ${uid} is being deleted; nothing to resync\n`);
  } finally {
    c.stack.sim.setFaults(FAST_DEPLOYS);
  }
  await until('the controller to end', async () => (await c.lbaas.controller(uid).describe()).status.name === 'COMPLETED', 30_000, 100);
  assert.deepEqual(taggedLines(c.stack.sim, tag), []);
});

test('resync --all --wait is refused with exit 2 and starts nothing', async () => {
  const r = await cli(['resync', '--all', '--wait']);
  assert.equal(r.code, 2);
  assert.equal(r.stderr, 'lbaas: --wait is for one service: resync --all always waits for the full resync it starts\n');
});

test('delete -o json prints one document: accepted without --wait, what was destroyed with --wait', async () => {
  const a = await converged('script-delete-quick');
  const quick = await cli(['delete', 'script-delete-quick', '-o', 'json']);
  ok(quick, 'delete -o json');
  assert.equal(quick.stderr, '');
  assert.equal(quick.stdout, `${JSON.stringify({ serviceUid: 'script-delete-quick', deleteAccepted: true, deleted: false }, null, 2)}\n`);
  await until('the controller to end', async () => (await c.lbaas.controller('script-delete-quick').describe()).status.name === 'COMPLETED', 30_000, 100);
  assert.deepEqual(taggedLines(c.stack.sim, a.tag), []);

  const b = await converged('script-delete-wait');
  const r = await cli(['delete', 'script-delete-wait', '--wait', '-o', 'json']);
  ok(r, 'delete --wait -o json');
  assert.equal(r.stderr, '');
  const expected = { serviceUid: 'script-delete-wait', deleteAccepted: true, deleted: true, destroyed: 12, loadBalancers: { [b.lb]: { destroyed: 12 } } };
  assert.equal(r.stdout, `${JSON.stringify(expected, null, 2)}\n`);
  assert.deepEqual(taggedLines(c.stack.sim, b.tag), []);
});

test('the no-worker warning: none while a worker polls; printed once the grace has passed when none does', async () => {
  const spec = exampleSpec([seedLoadBalancer(c.stack.sim, 'lb-script-plan')], { serviceUid: 'script-plan' });
  const file = await c.file('plan.json', spec);
  const polled = await cli(['plan', '-f', file, '-o', 'json']);
  ok(polled, 'plan with a worker');
  assert.equal(polled.stderr, '');

  const srv = await temporalServer();
  const queue = `${c.stack.taskQueue}-nobody`;
  const uid = 'script-no-worker';
  const spec2 = await c.file('no-worker.json', exampleSpec(['lb-unused'], { serviceUid: uid }));
  const r = await runInProcess(['apply', '-f', spec2, '--timeout', '1s'], cliEnv({ address: srv.address, namespace: c.stack.namespace, taskQueue: queue }));
  assert.equal(r.code, 3, r.stderr);
  assert.equal(
    r.stderr,
    `warning: no worker has polled task queue ${queue} recently; nothing happens until one runs (lbaas worker)\n` +
      `lbaas: timed out after 1s: the controller of service ${uid} did not accept the spec (is a worker polling task queue ${queue}?)\n`,
  );
  // It asked for the whole grace before warning (a worker that is just starting gets that long to poll).
  assert.ok(r.ms >= NO_WORKER_GRACE_MS, `took ${r.ms} ms`);
  await c.stack.client.workflow.getHandle(`lbaas/${uid}`).terminate('test cleanup');
});
