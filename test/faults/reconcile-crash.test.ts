/**
 * Crashes (docs/spec.md#reconciliation-semantics): a worker process SIGKILLed half-way through a reconciliation, while
 * the objects it created are known only to its activities' heartbeats and the Engine, and a new one started finish
 * the same workflow run with exactly the desired objects. That a reconcileLoadBalancer already running for a (service,
 * load balancer) makes reconcileService wait for it instead of failing is workflow logic alone: test/fast/plan-once.test.ts.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, afterEach, before, test } from 'node:test';
import type { ObjectStatus } from '../../domain/types';
import { LbaasClient } from '../../client/service-client';
import { loadBalancerStatusQuery, workflowIds } from '../../contract';
import { startChildWorker, type ChildWorker } from '../helpers/child-worker';
import {
  countByName,
  describeObjects,
  expectedLines,
  objectsOn,
  snapshotById,
  tagOf,
  writeRequests,
  type OracleSpec,
} from '../helpers/engine-state';
import { exampleSpec, seedLoadBalancer } from '../helpers/fixtures';
import { pendingActivities } from '../helpers/ops-services';
import { startStack, stopTemporalServer, temporalServer, TEST_TOKEN, type Stack } from '../helpers/stack';
import { eventsOf, Runs, until } from '../helpers/workflows';

const ORACLE: OracleSpec = exampleSpec([]) as unknown as OracleSpec;
const SUFFIX = 'web.default.prod';
const n = (...parts: string[]) => [...parts, SUFFIX].join('.');

let crashStack: Stack;
const children: ChildWorker[] = [];

before(async () => {
  // Deploys of 2.5-3 s: each level of the dependency graph is visibly in progress for a while, and a group runs for
  // seconds after its members were created (its progress signal comes after 1 s), so a kill always finds it running and
  // its retry is certain, however loaded the machine.
  crashStack = await startStack({ worker: false, sim: { deployMs: { min: 2500, max: 3000 } } });
});
afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.process.exitCode === null && c.process.signalCode === null) {
      c.process.kill('SIGKILL');
      await c.exited;
    }
  }
  // Back to the file's 300-400 ms deploys (a test may lengthen them).
  crashStack?.sim.setFaults({});
});
after(async () => {
  await crashStack?.stop();
  await stopTemporalServer();
});

async function childWorker(identity: string): Promise<ChildWorker> {
  const srv = await temporalServer();
  const c = await startChildWorker({
    temporalAddress: srv.address,
    namespace: srv.namespace,
    taskQueue: crashStack.taskQueue,
    engineUrl: crashStack.sim.url,
    token: TEST_TOKEN,
    identity,
    readinessPollMs: 25,
  });
  children.push(c);
  await c.ready;
  return c;
}

/** When a crash test kills the worker: a description, and whether the load balancer's status shows that moment. */
interface KillPoint {
  what: string;
  /**
   * Whose view `reached` is given: the workflow's own (`status` query: a group's members get their identifiers with
   * the group's result), or what `lbaas` shows (LbaasClient.progress: also the members the running groups'
   * heartbeat details name).
   */
  view: 'workflow' | 'client';
  /** Given the Frontends' and Servers' entries of that view (the Backends are Deployed, no Bind exists). */
  reached(frontendsAndServers: ObjectStatus[]): boolean;
}

/**
 * Kills the worker once the Backends are ready and the Frontends and Servers exist and are tagged in the Engine (their
 * realizeObjects groups still running, no Bind yet) at `kill`, starts a new worker, and checks that the same run
 * finishes with exactly the desired objects, each created once (its identifier kept), nothing untagged.
 */
async function crashAndRecover(kill: KillPoint): Promise<void> {
  const sim = crashStack.sim;
  const runs = new Runs(crashStack.client, crashStack.taskQueue);
  const uid = `crash-${randomUUID()}`;
  const tag = tagOf(uid);
  const lb = seedLoadBalancer(sim, 'lb');
  // The Engine's request counts below are this test's alone (the crash tests share the simulator).
  sim.resetStats();
  // The moment to kill lasts as long as a Frontend deploys: at the file's 300-400 ms a probe slowed by a loaded
  // machine (its status query) missed it for 30 s in a full run; at 1.5-2 s a CI run on a machine busy with other
  // test runs missed it once (the progress signals and the probe both late); 3-4 s leaves it several probes there too.
  sim.setFaults({ deployMs: { min: 3000, max: 4000 } });
  const first = await childWorker('crash-worker-1');
  const handle = await runs.service({ spec: exampleSpec([lb], { serviceUid: uid }) }, 'crash');
  const runId = handle.firstExecutionRunId;
  const child = crashStack.client.workflow.getHandle(workflowIds.loadBalancer(uid, lb));
  const lbaas = new LbaasClient(crashStack.client, crashStack.taskQueue);
  const atKill = await until(
    kill.what,
    async () => {
      const on = objectsOn(sim, lb);
      if (on.length !== 8 || !on.every((o) => o.tags.includes(tag)) || on.some((o) => o.kind === 'bind')) return undefined;
      let progress;
      try {
        progress = kill.view === 'workflow' ? await child.query(loadBalancerStatusQuery) : (await lbaas.progress(uid, [lb]))[0];
      } catch {
        return undefined;
      }
      if (!progress) return undefined;
      const backendsReady = progress.objects.filter((o) => o.kind === 'backend' && o.state === 'Deployed').length === 2;
      const reached = kill.reached(progress.objects.filter((o) => o.kind === 'frontend' || o.kind === 'server'));
      if (!backendsReady || !reached || objectsOn(sim, lb).some((o) => o.kind === 'bind')) return undefined;
      const groups = (await pendingActivities(child)).filter((p) => p.activityType === 'realizeObjects' && p.state === 'STARTED');
      return groups.length > 0 ? on : undefined;
    },
    30_000,
    5,
  );
  first.process.kill('SIGKILL');
  assert.deepEqual(await first.exited, { code: null, signal: 'SIGKILL' });
  assert.deepEqual(
    atKill.map((o) => `${o.kind} ${o.name}`).sort(),
    [`backend ${n('http')}`, `backend ${n('https')}`, `frontend ${n('http')}`, `frontend ${n('https')}`, ...['http', 'https'].flatMap((p) => [`server ${n('node-1', p)}`, `server ${n('node-2', p)}`])].sort(),
  );
  assert.equal((await handle.describe()).status.name, 'RUNNING');

  await childWorker('crash-worker-2');
  const r = await handle.result();

  // The same run finished: no new run, no continue-as-new, converged.
  assert.equal((await handle.describe()).runId, runId);
  assert.equal(r.converged, true);
  assert.deepEqual(r.loadBalancers[lb], { converged: true, status: r.status, created: 12, destroyed: 0, recovered: 0, passes: 2, cleanup: false });
  const on = objectsOn(sim, lb);
  assert.deepEqual(describeObjects(on, sim), expectedLines(ORACLE));
  assert.deepEqual(Object.values(countByName(on)).filter((c) => c !== 1), [], 'exactly one object per name');
  for (const o of on) assert.deepEqual(o.tags, [tag], `${o.kind} ${o.name} is tagged`);
  assert.deepEqual(sim.objects().filter((o) => o.kind !== 'loadbalancer' && o.tags.length === 0), [], 'nothing untagged');
  // The objects that existed at the kill are the same objects now (same identifiers): nothing was created twice.
  const now = snapshotById(on);
  for (const o of atKill) assert.ok(o.identifier in now, `${o.kind} ${o.name} kept its identifier`);
  const posts = writeRequests(sim.stats());
  assert.deepEqual(
    [posts['POST /api/LBaaS/v1/backend.json'], posts['POST /api/LBaaS/v1/frontend.json'], posts['POST /api/LBaaS/v1/bind.json'], posts['POST /api/LBaaS/v1/server.json']],
    [2, 2, 4, 4],
    'one create request per object',
  );

  // Both workers worked on the child reconciliation: the first until it died, the second to the end; the groups in
  // flight at the kill ran again (and adopted what their first attempt had created: one POST each, above).
  const events = await eventsOf(child);
  const identities = new Set(events.flatMap((e) => (e.activityTaskStartedEventAttributes?.identity ? [e.activityTaskStartedEventAttributes.identity] : [])));
  assert.deepEqual([...identities].sort(), ['crash-worker-1', 'crash-worker-2']);
  assert.ok(
    events.some((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1),
    'a realizeObjects attempt ran again after the kill',
  );
}

test('a worker SIGKILLed while realizeObjects groups are in flight and some of their members are known only to the groups\' heartbeats and the Engine: a new worker finishes the same run with exactly the desired objects, each created once, nothing untagged', async () => {
  await crashAndRecover({
    what: 'Backends ready, Frontends and Servers created and tagged, some not yet known to the workflow, no Bind yet',
    view: 'workflow',
    reached: (objects) => objects.some((o) => o.identifier === null),
  });
});

test('a worker SIGKILLed after the groups recorded every member\'s identifier in their heartbeats (lbaas shows them all created and deploying), with only readiness waits left: a new worker finishes the same run with exactly the desired objects, each created once, nothing untagged', async () => {
  await crashAndRecover({
    what: 'Backends ready, every Frontend and Server created and shown by lbaas from the groups\' heartbeat details, still deploying, no Bind yet',
    view: 'client',
    reached: (objects) => objects.length === 6 && objects.every((o) => o.identifier !== null && o.state === 'NewlyCreated'),
  });
});
