/**
 * `npm run test:limits`: one server pool with 50,000 services using it (LBAAS_LIMITS_POOL_SERVICES to change it). The
 * pool and its delivery round are the real workflows on the real worker and dev server; 2 of the services are real
 * controllers on the simulator, the others are stand-ins: `serviceController` runs started with a start delay of
 * hours and `LbaasServerPool` naming the pool, so visibility lists them as the round lists any controller, a signal
 * lands in their history (Temporal dispatches no workflow task for a signal during a start delay), and no worker
 * spends a task on each. A node joins; the test measures the round end to end, checks that every service was
 * signalled the new revision exactly by count and, in a sample, by reading the stand-ins' histories, and prints the
 * time, the round's runs (continue-as-new), and the history sizes and events of the pool and the round
 * (docs/architecture.md, "Server pools", quotes them).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { LbaasClient } from '../../client/service-client';
import { mapLimit } from '../../activities/state';
import { poolMembersSignal, poolServicesQuery, searchAttributes, workflowIds, workflowTypes, type PoolRoundResult } from '../../contract';
import { validateSpec } from '../../domain';
import { exampleSpec, seedLoadBalancer } from '../helpers/fixtures';
import { startStack, stopTemporalServer, type Stack } from '../helpers/stack';

const SERVICES = Number(process.env.LBAAS_LIMITS_POOL_SERVICES ?? 50_000);
const REAL = 2;
const POOL = 'fanout';

let stack: Stack;
let lbaas: LbaasClient;
const figures: string[] = [];
const say = (line: string) => {
  figures.push(line);
  process.stdout.write(`# ${line}\n`);
};
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

before(async () => {
  stack = await startStack({ sim: { deployMs: { min: 1, max: 5 } } });
  lbaas = new LbaasClient(stack.client, stack.taskQueue);
});
after(async () => {
  if (figures.length > 0) process.stdout.write(`# pool fan-out figures:\n${figures.map((f) => `#   ${f}`).join('\n')}\n`);
  await stack?.stop();
  await stopTemporalServer();
});

const standIn = (i: number) => `fanout-${String(i).padStart(6, '0')}`;

async function count(query: string): Promise<number> {
  return (await stack.client.workflow.count(query)).count;
}

async function historyOf(workflowId: string, runId?: string): Promise<{ events: number; bytes: number }> {
  const d = await stack.client.workflow.getHandle(workflowId, runId).describe();
  return { events: d.historyLength, bytes: d.historySize ?? 0 };
}

test(`a pool with ${SERVICES.toLocaleString('en')} services: a node joining reaches every one of them, in one delivery round of bounded history`, { timeout: 60 * 60_000 }, async () => {
  await lbaas.pools.set({ name: POOL, servers: [{ name: 'node-1', address: '10.0.0.11' }, { name: 'node-2', address: '10.0.0.12' }] });
  const lb = seedLoadBalancer(stack.sim, 'lb-fanout');
  const real = Array.from({ length: REAL }, (_, i) => `fanout-real-${i}`);
  for (const uid of real) {
    const raw = exampleSpec([lb], { serviceUid: uid, nameSuffix: uid, externalAddresses: ['203.0.113.10'], serverPool: POOL });
    delete raw.servers;
    const v = validateSpec(raw);
    assert.ok(v.ok);
    const { revision } = await lbaas.apply(raw, v.spec);
    assert.equal((await lbaas.waitConverged(uid, revision)).converged, true);
  }

  const standIns = SERVICES - REAL;
  const t0 = Date.now();
  let started = 0;
  await mapLimit(
    Array.from({ length: standIns }, (_, i) => i),
    64,
    async (i) => {
      const uid = standIn(i);
      await stack.client.workflow.start(workflowTypes.serviceController, {
        workflowId: workflowIds.controller(uid),
        taskQueue: stack.taskQueue,
        args: [{ v: 2, serviceUid: uid }],
        startDelay: '6h',
        typedSearchAttributes: [
          { key: searchAttributes.serverPool, value: POOL },
          { key: searchAttributes.serviceUid, value: uid },
        ],
      });
      if (++started % 5_000 === 0) process.stdout.write(`# ${started} stand-ins started (${seconds(Date.now() - t0)})\n`);
    },
  );
  say(`${standIns.toLocaleString('en')} stand-in services started in ${seconds(Date.now() - t0)}`);
  const query = poolServicesQuery(stack.taskQueue, POOL);
  const t1 = Date.now();
  while ((await count(query)) < SERVICES) await new Promise((r) => setTimeout(r, 1_000));
  say(`visibility listed all ${SERVICES.toLocaleString('en')} ${seconds(Date.now() - t1)} later`);

  const joinAt = Date.now();
  const change = await lbaas.pools.add(POOL, [{ name: 'node-3', address: '10.0.0.13' }]);
  assert.deepEqual({ revision: change.revision, services: change.services }, { revision: 2, services: SERVICES });
  const round = (await lbaas.pools.members(POOL)).round;
  assert.equal(round?.revision, 2);
  const result = (await stack.client.workflow.getHandle(round?.workflowId as string).result()) as PoolRoundResult;
  const roundMs = Date.now() - joinAt;
  assert.deepEqual(result, { pool: POOL, revision: 2, listed: SERVICES, signalled: SERVICES, gone: 0 });
  say(`node join: the delivery round signalled ${result.signalled.toLocaleString('en')} services in ${seconds(roundMs)} (${Math.round(result.signalled / (roundMs / 1000))} per second)`);

  // The real controllers converge the new member.
  for (const uid of real) {
    for (;;) {
      const s = await lbaas.status(uid);
      if (s.lastPass?.poolRevision === 2 && s.phase === 'Converged') break;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  say(`the ${REAL} real controllers converged revision 2 ${seconds(Date.now() - joinAt)} after the join`);

  // A sample of stand-ins, spread over the listing, each holds exactly one poolMembers signal: revision 2's change.
  const sample = Array.from({ length: 25 }, (_, k) => standIn(Math.floor((k * (standIns - 1)) / 24)));
  for (const uid of sample) {
    const history = await stack.client.workflow.getHandle(workflowIds.controller(uid)).fetchHistory();
    const signals = (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === poolMembersSignal.name);
    assert.equal(signals.length, 1, uid);
    const data = signals[0]?.workflowExecutionSignaledEventAttributes?.input?.payloads?.[0]?.data;
    const message = JSON.parse(Buffer.from(data as Uint8Array).toString('utf8')) as Record<string, unknown>;
    // What changed since revision 1 (the previous round's), not every member.
    assert.deepEqual(message, { v: 2, pool: POOL, revision: 2, delta: { base: 1, upsert: [{ name: 'node-3', address: '10.0.0.13' }], remove: [] } }, uid);
  }

  // History: the round's runs (it continues as new past 1,000 events) and the pool's.
  const runs: { events: number; bytes: number }[] = [];
  for await (const run of stack.client.workflow.list({ query: `WorkflowId = '${round?.workflowId}'` })) runs.push(await historyOf(run.workflowId, run.runId));
  const pool = await historyOf(workflowIds.pool(POOL));
  const largest = runs.reduce((a, b) => (b.bytes > a.bytes ? b : a), { events: 0, bytes: 0 });
  say(`the round: ${runs.length} runs, ${runs.reduce((n, r) => n + r.events, 0)} events in all, the largest run ${largest.events} events / ${(largest.bytes / 1024).toFixed(0)} KiB`);
  say(`the pool: ${pool.events} events / ${(pool.bytes / 1024).toFixed(1)} KiB of history (members and revision only: the same at any number of services)`);
  for (const r of runs) assert.ok(r.events <= 1_100 && r.bytes < 4 * 1024 * 1024, `a round run stays bounded (${r.events} events, ${r.bytes} bytes)`);
  assert.ok(pool.events < 100, `the pool's history does not grow with its services (${pool.events} events)`);

  // The pool's status counts the services from visibility (the stand-ins have not finished a pass: pending).
  const t2 = Date.now();
  const counts = await lbaas.pools.counts(POOL, 2);
  assert.deepEqual(counts, { revision: 2, services: SERVICES, converged: REAL, failed: 0, pending: SERVICES - REAL });
  say(`the pool's counts for revision 2 (three visibility counts) in ${seconds(Date.now() - t2)}`);
});
