/**
 * Temporal's limits at the sizes the validator accepts, on the real dev server and the simulator over HTTP, for one
 * shape of a pool used by one service (big-pool.test.ts, cluster-pool.test.ts): the pool's service converges, a node
 * joins and leaves again, a no-op resync runs, the service is deleted. Every step converges with no workflow task
 * failure anywhere; the join and the leave write exactly that node's Servers, at most 3 Engine requests per Server
 * written (pool-delta passes); a no-op resync writes nothing; `lbaas status` and `lbaas list`
 * answer; the delete leaves nothing tagged. Each step prints its time and Engine requests, and the last test the
 * largest event and history seen (docs/scaling.md quotes them).
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

export interface PoolShape {
  /** Printed before each figure, e.g. `big pool`. */
  label: string;
  /** Members before the join (one more joins). */
  nodes: number;
  ports: number;
  addresses: string[];
  loadBalancers: number;
}

/** The tests of one pool shape, in order (node:test runs a file's top-level tests one after the other). */
export function poolAtLimits(shape: PoolShape): void {
  const { label, nodes: NODES, addresses: ADDRESSES } = shape;
  const PORTS = Object.fromEntries(Array.from({ length: shape.ports }, (_, i) => [`p${i + 1}`, { external: 81 + i, internal: 30081 + i }]));
  const UID = `${label.replace(/\W+/g, '-')}-svc`;
  const TAG = `anxccm-svc-uid=${UID}`;
  const PER_LB = shape.ports * (2 + ADDRESSES.length) + shape.ports * NODES;
  const JOIN_WRITES = shape.ports * shape.loadBalancers;

  let stack: Stack;
  let lbaas: LbaasClient;
  let lbs: string[];
  let env: NodeJS.ProcessEnv;
  const startedAt = Date.now();

  before(async () => {
    // Fast deploys: the test is about Temporal's limits, not about waiting for the Engine.
    stack = await startStack({ sim: { deployMs: { min: 1, max: 5 } } });
    lbaas = new LbaasClient(stack.client, stack.taskQueue);
    lbs = Array.from({ length: shape.loadBalancers }, (_, i) => seedLoadBalancer(stack.sim, `lb-limits-${i}`));
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
      nameSuffix: 'limits.default',
      loadBalancers: lbs,
      externalAddresses: ADDRESSES,
      ports: PORTS,
      serverPool: 'nodes',
      readiness: { initialInterval: '100ms', backoffCoefficient: 1.5, maximumInterval: '1s', maximumAttempts: 20 },
    };
  }

  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const total = (stats: ReturnType<Stack['sim']['stats']>) => stats.total;

  test(`a pool of ${NODES} nodes, ${shape.ports} ports, ${ADDRESSES.length} addresses, ${shape.loadBalancers} load balancers (${PER_LB} objects each) converges`, async () => {
    const t0 = Date.now();
    await lbaas.pools.set({ name: 'nodes', servers: Array.from({ length: NODES }, (_, i) => node(i + 1)) });
    const raw = spec();
    const v = validateSpec(raw);
    if (!v.ok) throw new Error(JSON.stringify(v.issues));
    const { revision } = await lbaas.apply(raw, v.spec);
    const r = await lbaas.waitConverged(UID, revision);
    assert.equal(r.converged, true, r.error);
    assert.equal(taggedLines(stack.sim, TAG).length, shape.loadBalancers * PER_LB);
    for (const lb of lbs) assert.deepEqual({ converged: r.loadBalancers[lb]?.converged, created: r.loadBalancers[lb]?.created }, { converged: true, created: PER_LB });
    console.log(`# ${label}: first apply converged in ${seconds(Date.now() - t0)}, ${total(stack.sim.stats())} Engine requests`);
  });

  test('lbaas status and lbaas list answer, with every object of every load balancer', async () => {
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
    console.log(`# ${label}: lbaas status took ${st.ms} ms (${st.stdout.length} bytes), lbaas list ${list.ms} ms`);
  });

  test(`a node join writes exactly the joining node's ${JOIN_WRITES} Servers (${shape.ports} ports x ${shape.loadBalancers} load balancers)`, async () => {
    stack.sim.resetStats();
    const t0 = Date.now();
    const joined = node(NODES + 1);
    const change = await lbaas.pools.add('nodes', [joined]);
    const pool = await lbaas.pools.waitConverged('nodes', change.revision);
    assert.equal(pool.converged, true, JSON.stringify(pool.services));
    const stats = stack.sim.stats();
    assert.deepEqual(writeRequests(stats), { 'POST /api/LBaaS/v1/server.json': JOIN_WRITES, 'POST /api/core/v1/resource.json/{id}/tags/{tag}': JOIN_WRITES });
    assert.equal(taggedLines(stack.sim, TAG).filter((l) => l.startsWith(`server ${joined.name}.`)).length, JOIN_WRITES);
    // The pool sent the controller what changed, not all its members.
    const history = await lbaas.controller(UID).fetchHistory();
    const signals = (history.events ?? []).flatMap((e) => {
      const a = e.workflowExecutionSignaledEventAttributes;
      return a?.signalName === 'poolMembers' ? [JSON.parse(Buffer.from(a.input?.payloads?.[0]?.data ?? new Uint8Array()).toString('utf8')) as PoolMembersMessage] : [];
    });
    assert.deepEqual(signals.at(-1), { v: 2, pool: 'nodes', revision: change.revision, delta: { base: change.revision - 1, upsert: [joined], remove: [] } });
    console.log(`# ${label}: node join converged in ${seconds(Date.now() - t0)}, ${total(stats)} Engine requests for ${JOIN_WRITES} Servers written (${(total(stats) / JOIN_WRITES).toFixed(2)} per Server; ${JSON.stringify(stats.requests)})`);
    // A pool-delta pass (workflows/reconcile-delta.ts): only the joining node's Servers are read or written.
    assert.ok(total(stats) / JOIN_WRITES <= 3, `${total(stats)} Engine requests for ${JOIN_WRITES} Servers written`);
  });

  test(`a node leave deletes exactly the leaving node's ${JOIN_WRITES} Servers, at most 3 Engine requests per Server`, async () => {
    stack.sim.resetStats();
    const t0 = Date.now();
    const leaving = node(NODES + 1);
    const change = await lbaas.pools.remove('nodes', [leaving.name]);
    const pool = await lbaas.pools.waitConverged('nodes', change.revision);
    assert.equal(pool.converged, true, JSON.stringify(pool.services));
    const stats = stack.sim.stats();
    assert.deepEqual(writeRequests(stats), { 'DELETE /api/LBaaS/v1/server.json/{id}': JOIN_WRITES });
    assert.equal(taggedLines(stack.sim, TAG).filter((l) => l.startsWith(`server ${leaving.name}.`)).length, 0);
    assert.equal(taggedLines(stack.sim, TAG).length, shape.loadBalancers * PER_LB);
    console.log(`# ${label}: node leave converged in ${seconds(Date.now() - t0)}, ${total(stats)} Engine requests for ${JOIN_WRITES} Servers written (${(total(stats) / JOIN_WRITES).toFixed(2)} per Server; ${JSON.stringify(stats.requests)})`);
    assert.ok(total(stats) / JOIN_WRITES <= 3, `${total(stats)} Engine requests for ${JOIN_WRITES} Servers written`);
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
    console.log(`# ${label}: no-op resync in ${seconds(Date.now() - t0)}, ${total(stats)} Engine requests`);
  });

  test('delete removes everything the service owns on its load balancers', async () => {
    const t0 = Date.now();
    const r = await lbaas.delete(UID);
    assert.equal(r.converged, true, r.error);
    assert.deepEqual(taggedLines(stack.sim, TAG), []);
    console.log(`# ${label}: delete converged in ${seconds(Date.now() - t0)}`);
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
    console.log(`# ${label}: largest event ${(largestEvent.bytes / 1024).toFixed(0)} KiB (${largestEvent.where}); largest history ${(largestHistory.bytes / 1024).toFixed(0)} KiB, ${largestHistory.events} events (${largestHistory.where}); whole file ${seconds(Date.now() - startedAt)}`);
    assert.deepEqual(failures, []);
    // Temporal's defaults: 2 MiB per payload (an event carries at most a few), 50 MiB and 51,200 events per history.
    assert.ok(largestEvent.bytes < 2 * 1024 * 1024, `largest event ${largestEvent.bytes} bytes (${largestEvent.where})`);
    assert.ok(largestHistory.bytes < 10 * 1024 * 1024 && largestHistory.events < 10_240, `largest history ${JSON.stringify(largestHistory)}`);
  });
}

/** A node's name and an address unique among 62,500 nodes. */
function node(i: number): ServerSpec {
  return { name: `node-${String(i).padStart(5, '0')}`, address: `10.${Math.floor(i / 250) % 250}.${i % 250}.${1 + Math.floor(i / 62_500)}` };
}
