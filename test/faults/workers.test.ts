/**
 * Worker PROCESSES on one task queue, as an operator runs them: they share the work (the SIGKILL test kills one while
 * it runs groups and sees the other complete them), a SIGKILLed worker loses nothing, and SIGTERM drains running
 * activities before the process exits 0.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { startSimulator, type RunningSimulator } from '../../simulator';
import { workflowIds } from '../../contract';
import { describeObjects, expectedLines, objectsOn, tagOf, type OracleSpec } from '../helpers/engine-state';
import { seedLoadBalancer } from '../helpers/fixtures';
import { exitWithin, spawnWorker, type WorkerProcess } from '../helpers/ops-process';
import { activityRuns, historyOf, pendingActivities, serviceSpec, TrackedLbaas, uniqueUid, type ActivityRun, type PendingActivity } from '../helpers/ops-services';
import { stopTemporalServer, temporalServer, TEST_TOKEN } from '../helpers/stack';
import { until } from '../helpers/workflows';

/** The worker's default shutdown grace time (worker/main.ts DEFAULT_SHUTDOWN_GRACE). */
const GRACE_MS = 30_000;

let sim: RunningSimulator;
let connection: Connection;
let client: Client;
let lbaas: TrackedLbaas;
let w1: WorkerProcess;
let w2: WorkerProcess;

before(async () => {
  const srv = await temporalServer();
  sim = await startSimulator({ port: 0, token: TEST_TOKEN, deployMs: { min: 100, max: 300 }, seed: 13 });
  const taskQueue = `ops-workers-${randomUUID()}`;
  const start = () => spawnWorker({ temporalAddress: srv.address, namespace: srv.namespace, taskQueue, engineUrl: sim.url, token: TEST_TOKEN });
  w1 = start();
  w2 = start();
  connection = await Connection.connect({ address: srv.address });
  client = new Client({ connection, namespace: srv.namespace });
  lbaas = new TrackedLbaas(client, taskQueue);
  await Promise.all([w1.ready, w2.ready]);
});
after(async () => {
  await lbaas?.cleanup();
  await Promise.all([w1?.kill(), w2?.kill()]);
  await connection?.close();
  await sim?.close();
  await stopTemporalServer();
});

interface Service {
  uid: string;
  lb: string;
  raw: Record<string, unknown>;
}

function newServices(prefix: string, n: number): Service[] {
  return Array.from({ length: n }, () => {
    const uid = uniqueUid(prefix);
    const lb = seedLoadBalancer(sim, `lb-${uid}`);
    return { uid, lb, raw: serviceSpec(uid, [lb]) };
  });
}

/** Rejects after `ms`: waits in this file are bounded even where the client call itself is not. */
async function within<T>(what: string, ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not done within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** Every service converged on revision 1 and the Engine holds exactly its objects, each once, each tagged. */
async function assertConvergedExactly(services: Service[], withinMs = 60_000): Promise<void> {
  const results = await within(
    'all services converging',
    withinMs,
    Promise.all(services.map((s) => lbaas.waitConverged(s.uid, 1))),
  );
  results.forEach((r, i) => assert.deepEqual({ uid: r.serviceUid, converged: r.converged, revision: r.revision }, { uid: services[i]?.uid, converged: true, revision: 1 }));
  for (const s of services) {
    const onLb = objectsOn(sim, s.lb);
    assert.deepEqual(describeObjects(onLb, sim), expectedLines(s.raw as unknown as OracleSpec), `objects on ${s.lb} (${s.uid}), each exactly once`);
    assert.deepEqual(onLb.filter((o) => !o.tags.includes(tagOf(s.uid))).map((o) => `${o.kind} ${o.name}`), [], `untagged objects on ${s.lb}`);
  }
}

/** Activity attempts recorded in the histories of the services' load balancer reconciliations (latest runs). */
async function lbActivityRuns(services: Service[]): Promise<ActivityRun[]> {
  const all = await Promise.all(services.map(async (s) => activityRuns(await historyOf(client.workflow.getHandle(workflowIds.loadBalancer(s.uid, s.lb))))));
  return all.flat();
}

async function lbPending(services: Service[]): Promise<PendingActivity[]> {
  return (await Promise.all(services.map((s) => pendingActivities(client.workflow.getHandle(workflowIds.loadBalancer(s.uid, s.lb)))))).flat();
}

test('SIGKILL of one worker mid-run loses nothing: its realizeObjects groups in flight are retried on the other worker, every service converges exactly, no duplicates, no untagged objects', async () => {
  // Long deploys: most of a pass is spent in the groups' heartbeating readiness polls, which a crashed worker gives
  // back after their heartbeat timeout (15 s for ENGINE_CALL, workflows/options.ts). The kill waits for a moment where
  // the victim runs groups (creating, tagging or awaiting their members) and readiness waits only.
  sim.setFaults({ deployMs: { min: 1500, max: 2500 } });
  try {
    const services = newServices('ops-kill', 6);
    await Promise.all(services.map((s) => lbaas.applyRaw(s.raw)));
    const victim = w2.identity;
    const inFlight = (p: PendingActivity) => p.state === 'STARTED' && p.lastWorkerIdentity === victim;
    const atKill = await until(
      'the second worker to be running realizeObjects groups (and readiness waits) only',
      async () => {
        const pending = await Promise.all(services.map(async (s) => ({ s, onVictim: (await lbPending([s])).filter(inFlight) })));
        const all = pending.flatMap((p) => p.onVictim);
        const ok = all.some((p) => p.activityType === 'realizeObjects') && all.every((p) => p.activityType === 'realizeObjects' || p.activityType === 'settleObjects');
        return ok ? pending.filter((p) => p.onVictim.length > 0) : false;
      },
      20_000,
      20,
    );
    await w2.kill();
    assert.deepEqual(await exitWithin(w2, 5_000), { code: null, signal: 'SIGKILL' });
    const taggedAtKill = sim.objects().filter((o) => services.some((s) => o.tags.includes(tagOf(s.uid)))).length;
    assert.ok(taggedAtKill < 72, `the kill came mid-run (${taggedAtKill} of 72 objects existed)`);
    const killed = atKill.reduce((n, p) => n + p.onVictim.length, 0);
    console.log(`# killed ${victim} with ${killed} groups and readiness waits running, ${taggedAtKill}/72 objects created`);

    // A retry waits out the heartbeat timeout, so this waits longer than a plain convergence.
    await assertConvergedExactly(services, 120_000);
    for (const { s, onVictim } of atKill) {
      const runs = await lbActivityRuns([s]);
      for (const p of onVictim) {
        const retried = runs.filter((r) => r.activityId === p.activityId && r.attempt > p.attempt);
        assert.ok(
          retried.some((r) => r.identity === w1.identity && r.outcome === 'completed'),
          `${p.activityType} ${p.activityId} of ${s.uid}, running on the killed worker, was retried and completed by the other one: ${JSON.stringify(retried)}`,
        );
      }
    }
  } finally {
    sim.setFaults({});
  }
});

test('graceful shutdown: SIGTERM while an activity runs lets it finish within the grace time, and the worker exits 0', async () => {
  assert.equal(w1.hasExited(), false);
  sim.setFaults({ deployMs: 3000 });
  try {
    const [s] = newServices('ops-term', 1) as [Service];
    await lbaas.applyRaw(s.raw);
    const handle = client.workflow.getHandle(workflowIds.loadBalancer(s.uid, s.lb));
    // Started is not enough: the server marks a task started when it hands it to a poll, and a poll answer still
    // on its way when the shutdown begins is not run by the worker (the attempt then times out and is retried). A
    // heartbeat shows the worker is running it (a group heartbeats the look-alikes it found before its first create).
    const running = await until(
      'a realizeObjects group (creating and awaiting Backends) running on the worker (heartbeating)',
      async () =>
        (await pendingActivities(handle)).find(
          (p) => p.activityType === 'realizeObjects' && p.state === 'STARTED' && p.lastWorkerIdentity === w1.identity && p.heartbeated,
        ),
      20_000,
      20,
    );
    const sent = Date.now();
    w1.proc.kill('SIGTERM');
    const exit = await exitWithin(w1, GRACE_MS + 10_000);
    const tookMs = Date.now() - sent;
    console.log(`# worker exited ${JSON.stringify(exit)} ${tookMs} ms after SIGTERM`);
    assert.deepEqual(exit, { code: 0, signal: null }, `exit status; output:\n${w1.output().slice(-2000)}`);
    assert.ok(tookMs < GRACE_MS, `exited within the grace time (${tookMs} ms)`);

    const run = activityRuns(await historyOf(handle)).find((r) => r.activityId === running.activityId);
    const stillPending = (await pendingActivities(handle)).find((p) => p.activityId === running.activityId);
    assert.deepEqual(stillPending, undefined, `the readiness wait is still pending after the worker exited; worker output:\n${w1.output().slice(-4000)}`);
    assert.deepEqual(run && { type: run.activityType, identity: run.identity, attempt: run.attempt, outcome: run.outcome }, {
      type: 'realizeObjects',
      identity: w1.identity,
      attempt: running.attempt,
      outcome: 'completed',
    });
  } finally {
    sim.setFaults({});
  }
});
