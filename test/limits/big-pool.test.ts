/**
 * Temporal's limits at the sizes the validator accepts, on the real dev server and the simulator over HTTP: a pool of
 * 1,023 nodes used by one service with 4 ports and 2 external addresses on 2 load balancers (4 Backends, 4 Frontends,
 * 8 Binds and 4,092 Servers: 4,108 objects per load balancer), then a node joins. Every step converges with no
 * workflow task failure anywhere; the join writes exactly the joining node's 8 Servers; a no-op resync writes
 * nothing; `lbaas status` and `lbaas list` answer; the delete leaves nothing tagged. The file prints its times, the
 * Engine requests of each step, and the largest event and history it saw (docs/scaling.md quotes them).
 *
 * Run by `npm run test:limits` (not by `npm test`: it takes minutes on a shared machine).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as proto from '@temporalio/proto';
import { LbaasClient } from '../../client/service-client';
import { validateSpec, type ServerSpec } from '../../domain';
import { seedLoadBalancer, taggedLines } from '../helpers/fixtures';
import { writeRequests } from '../helpers/engine-state';
import { cliEnv, runCli } from '../helpers/cli';
import { startStack, stopTemporalServer, temporalServer, type Stack } from '../helpers/stack';
import type { PoolMembersMessage } from '../../contract';

const NODES = 1023;
const PORTS = { p1: { external: 81, internal: 30081 }, p2: { external: 82, internal: 30082 }, p3: { external: 83, internal: 30083 }, p4: { external: 84, internal: 30084 } };
const ADDRESSES = ['203.0.113.10', '2001:db8::10'];
const UID = 'big-pool-svc';
const TAG = `anxccm-svc-uid=${UID}`;
const PER_LB = 4 * (2 + ADDRESSES.length) + 4 * NODES;

let stack: Stack;
let lbaas: LbaasClient;
let lbs: string[];
let env: NodeJS.ProcessEnv;
const startedAt = Date.now();

const node = (i: number): ServerSpec => ({ name: `node-${String(i).padStart(4, '0')}`, address: `10.${Math.floor(i / 250)}.${i % 250}.${1 + (i % 7)}` });

before(async () => {
  // Fast deploys: the test is about Temporal's limits, not about waiting for the Engine.
  stack = await startStack({ sim: { deployMs: { min: 1, max: 5 } } });
  lbaas = new LbaasClient(stack.client, stack.taskQueue);
  lbs = [seedLoadBalancer(stack.sim, 'lb-big-a'), seedLoadBalancer(stack.sim, 'lb-big-b')];
  const srv = await temporalServer();
  env = cliEnv({ address: srv.address, namespace: stack.namespace, taskQueue: stack.taskQueue });
});

after(async () => {
  await stack?.stop();
  await stopTemporalServer();
});

function spec(): Record<string, unknown> {
  return {
    serviceUid: UID,
    nameSuffix: 'big.default',
    loadBalancers: lbs,
    externalAddresses: ADDRESSES,
    ports: PORTS,
    serverPool: 'nodes',
    readiness: { initialInterval: '100ms', backoffCoefficient: 1.5, maximumInterval: '1s', maximumAttempts: 20 },
  };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const total = (stats: ReturnType<Stack['sim']['stats']>) => stats.total;

test(`a pool of ${NODES} nodes, 4 ports, 2 addresses, 2 load balancers (${PER_LB} objects each) converges`, async () => {
  const t0 = Date.now();
  await lbaas.pools.set({ name: 'nodes', servers: Array.from({ length: NODES }, (_, i) => node(i + 1)) });
  const raw = spec();
  const v = validateSpec(raw);
  if (!v.ok) throw new Error(JSON.stringify(v.issues));
  const { revision } = await lbaas.apply(raw, v.spec);
  const r = await lbaas.waitConverged(UID, revision);
  assert.equal(r.converged, true, r.error);
  assert.equal(taggedLines(stack.sim, TAG).length, 2 * PER_LB);
  for (const lb of lbs) assert.deepEqual({ converged: r.loadBalancers[lb]?.converged, created: r.loadBalancers[lb]?.created }, { converged: true, created: PER_LB });
  console.log(`# big pool: first apply converged in ${seconds(Date.now() - t0)}, ${total(stack.sim.stats())} Engine requests`);
});

test('lbaas status and lbaas list answer, with every object of both load balancers', async () => {
  const st = await runCli(['status', UID, '-o', 'json'], { env, timeoutMs: 120_000 });
  assert.equal(st.code, 0, st.stderr);
  const s = JSON.parse(st.stdout) as { phase: string; objects: { loadBalancer: string; state: string }[]; loadBalancers: Record<string, { converged: boolean }> };
  assert.equal(s.phase, 'Converged');
  assert.deepEqual(Object.keys(s.loadBalancers).sort(), [...lbs].sort());
  for (const lb of lbs) {
    const mine = s.objects.filter((o) => o.loadBalancer === lb);
    assert.equal(mine.length, PER_LB, `objects listed for ${lb}`);
    assert.ok(mine.every((o) => o.state === 'Deployed'), `every object on ${lb} is Deployed`);
  }
  const list = await runCli(['list', '-o', 'json'], { env, timeoutMs: 60_000 });
  assert.equal(list.code, 0, list.stderr);
  assert.deepEqual((JSON.parse(list.stdout) as { serviceUid: string; phase: string }[]).map((e) => [e.serviceUid, e.phase]), [[UID, 'Converged']]);
  console.log(`# big pool: lbaas status took ${st.ms} ms (${st.stdout.length} bytes), lbaas list ${list.ms} ms`);
});

test("a node join writes exactly the joining node's 8 Servers (4 ports x 2 load balancers)", async () => {
  stack.sim.resetStats();
  const t0 = Date.now();
  const joined = node(NODES + 1);
  const change = await lbaas.pools.add('nodes', [joined]);
  const pool = await lbaas.pools.waitConverged('nodes', change.revision);
  assert.equal(pool.converged, true, JSON.stringify(pool.services));
  const stats = stack.sim.stats();
  assert.deepEqual(writeRequests(stats), { 'POST /api/LBaaS/v1/server.json': 8, 'POST /api/core/v1/resource.json/{id}/tags/{tag}': 8 });
  assert.equal(taggedLines(stack.sim, TAG).filter((l) => l.startsWith(`server ${joined.name}.`)).length, 8);
  // The pool sent the controller what changed, not its 1,024 members.
  const history = await lbaas.controller(UID).fetchHistory();
  const signals = (history.events ?? []).flatMap((e) => {
    const a = e.workflowExecutionSignaledEventAttributes;
    return a?.signalName === 'poolMembers' ? [JSON.parse(Buffer.from(a.input?.payloads?.[0]?.data ?? new Uint8Array()).toString('utf8')) as PoolMembersMessage] : [];
  });
  assert.deepEqual(signals.at(-1), { pool: 'nodes', revision: change.revision, delta: { base: change.revision - 1, upsert: [joined], remove: [] } });
  console.log(`# big pool: node join converged in ${seconds(Date.now() - t0)}, ${total(stats)} Engine requests for 8 Server writes`);
});

test('a no-op resync makes no Engine write', async () => {
  const before = (await lbaas.status(UID)).lastPass?.pass ?? 0;
  stack.sim.resetStats();
  const t0 = Date.now();
  await lbaas.resync(UID);
  for (;;) {
    const st = await lbaas.status(UID);
    if ((st.lastPass?.pass ?? 0) > before && st.running === null) {
      assert.equal(st.lastPass?.converged, true, st.lastPass?.error);
      break;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const stats = stack.sim.stats();
  assert.deepEqual(writeRequests(stats), {});
  console.log(`# big pool: no-op resync in ${seconds(Date.now() - t0)}, ${total(stats)} Engine requests`);
});

test('delete removes everything the service owns on both load balancers', async () => {
  const t0 = Date.now();
  const r = await lbaas.delete(UID);
  assert.equal(r.converged, true, r.error);
  assert.deepEqual(taggedLines(stack.sim, TAG), []);
  console.log(`# big pool: delete converged in ${seconds(Date.now() - t0)}`);
});

test('no workflow task failed anywhere; the largest event and history stay far below Temporal limits', async () => {
  const History = proto.temporal.api.history.v1.History;
  const Event = proto.temporal.api.history.v1.HistoryEvent;
  const failed = proto.temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED;
  let largestEvent = { bytes: 0, where: '' };
  let largestHistory = { bytes: 0, events: 0, where: '' };
  const failures: string[] = [];
  for await (const wf of stack.client.workflow.list({ query: `TaskQueue = '${stack.taskQueue}'` })) {
    const history = await stack.client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
    const events = history.events ?? [];
    const bytes = History.encode(history).finish().length;
    if (bytes > largestHistory.bytes) largestHistory = { bytes, events: events.length, where: wf.workflowId };
    for (const e of events) {
      const size = Event.encode(e).finish().length;
      if (size > largestEvent.bytes) largestEvent = { bytes: size, where: `${wf.workflowId} event ${String(e.eventId)}` };
      if (e.eventType === failed) failures.push(`${wf.workflowId}: ${e.workflowTaskFailedEventAttributes?.failure?.message ?? ''}`);
    }
  }
  console.log(`# big pool: largest event ${(largestEvent.bytes / 1024).toFixed(0)} KiB (${largestEvent.where}); largest history ${(largestHistory.bytes / 1024).toFixed(0)} KiB, ${largestHistory.events} events (${largestHistory.where}); whole file ${seconds(Date.now() - startedAt)}`);
  assert.deepEqual(failures, []);
  // Temporal's defaults: 2 MiB per payload (an event carries at most a few), 50 MiB and 51,200 events per history.
  assert.ok(largestEvent.bytes < 2 * 1024 * 1024, `largest event ${largestEvent.bytes} bytes (${largestEvent.where})`);
  assert.ok(largestHistory.bytes < 10 * 1024 * 1024 && largestHistory.events < 10_240, `largest history ${JSON.stringify(largestHistory)}`);
});
