/**
 * Records the workflow histories that test/workflow/replay.test.ts replays: real runs on a Temporal dev server and
 * the Engine simulator, each fetched with `handle.fetchHistory()` and written in Temporal's JSON history format
 * (history-json.ts) to
 * test/fixtures/histories/<name>.json (in the source tree, not in dist).
 *
 * (Over 300 lines: one scenario per recorded history, each a few lines of setup that only makes sense beside its
 * recording.)
 *
 * Regenerate them after a deliberate change of workflow code. Every type is PINNED: no later build replays a run,
 * and the entities move to a new build by continue-as-new, so no change needs a patch. legacy/ holds the histories
 * of the release before entities were PINNED (and older ones), which workflows/legacy/ replays; this script does not
 * write them (docs/architecture.md, "Versions and patches"):
 *
 *   # from the repository root
 *   npx tsc -p . && \
 *     node dist/test/helpers/record-histories.js [output directory]
 *
 * It starts its own dev server (or uses LBAAS_TEST_TEMPORAL_ADDRESS) and a simulator with a fixed seed. Names given
 * after the output directory record only those histories (the others keep the code they were recorded with).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { LbaasClient } from '../../client/service-client';
import { loadBalancerStatusQuery, workflowIds, workflowTypes } from '../../contract';
import { formatIssues, validateSpec } from '../../domain';
import { importServices } from '../../workflows/import';
import { admin, seedConverged, tagOf, type OracleSpec } from './engine-state';
import { historyToJson } from './history-json';
import { exampleSpec, seedLoadBalancer } from './fixtures';
import { startStack, stopTemporalServer, type Stack } from './stack';
import { Runs, until } from './workflows';

/** The histories this script writes, by file name (without .json). */
export const RECORDED = [
  'reconcile-service-converge',
  'reconcile-service-converge-child',
  'reconcile-lb-converge',
  'reconcile-lb-recover',
  'reconcile-lb-recreate',
  'reconcile-lb-not-converged',
  'reconcile-service-cleanup',
  'reconcile-service-busy-child',
  'plan-service',
  'service-controller',
  'service-controller-resync-pass',
  'service-controller-terminated-pass',
  'server-pool',
  'service-controller-pool',
  'pool-round',
  'import-services',
  'reconcile-service-plan-first',
  'reconcile-service-plan-first-child',
  'service-controller-pool-delta',
  'reconcile-pool-delta',
] as const;

type Name = (typeof RECORDED)[number];

const ORACLE: OracleSpec = exampleSpec([]) as unknown as OracleSpec;

async function record(stack: Stack, out: string, only: string[]): Promise<void> {
  const runs = new Runs(stack.client, stack.taskQueue);
  const sim = stack.sim;
  if (only.length > 0) {
    for (const name of only) {
      if (name === 'service-controller') await recordController(stack, out);
      else if (name === 'service-controller-resync-pass') await recordResyncPass(stack, out);
      else if (name === 'service-controller-terminated-pass') await recordTerminatedPass(stack, out, name);
      else if (name === 'server-pool' || name === 'service-controller-pool' || name === 'pool-round') await recordPool(stack, out);
      else if (name === 'import-services') await recordImport(stack, out);
      else if (name === 'reconcile-service-plan-first' || name === 'reconcile-service-plan-first-child') await recordPlanFirst(stack, out);
      else if (name === 'service-controller-pool-delta' || name === 'reconcile-pool-delta') await recordPoolDelta(stack, out);
      else throw new Error(`only service-controller, service-controller-resync-pass, service-controller-terminated-pass, server-pool, service-controller-pool, pool-round, import-services, reconcile-service-plan-first(-child), service-controller-pool-delta and reconcile-pool-delta can be recorded alone (got ${name})`);
    }
    return;
  }
  const save = async (name: Name, handle: WorkflowHandle) => {
    const history = await handle.fetchHistory();
    writeFileSync(path.join(out, `${name}.json`), `${JSON.stringify(historyToJson(history), null, 1)}\n`);
    process.stderr.write(`recorded ${name}: ${history.events?.length ?? 0} events\n`);
  };
  const settle = async (handle: WorkflowHandle) => {
    try {
      await handle.result();
    } catch {
      // Failed runs are recorded as they are.
    }
  };

  // Converge from empty through reconcileService (parent and child) on one load balancer.
  {
    const lb = seedLoadBalancer(sim, 'lb-service');
    const uid = 'record-service-converge';
    const h = await runs.service({ spec: exampleSpec([lb], { serviceUid: uid }) });
    await settle(h);
    await save('reconcile-service-converge', h);
    await save('reconcile-service-converge-child', stack.client.workflow.getHandle(workflowIds.loadBalancer(uid, lb)));
  }
  // Converge from empty through reconcileLoadBalancer started directly.
  {
    const lb = seedLoadBalancer(sim, 'lb-direct');
    const h = await runs.loadBalancer({ spec: exampleSpec([lb], { serviceUid: 'record-lb-converge' }), loadBalancer: lb });
    await settle(h);
    await save('reconcile-lb-converge', h);
  }
  // Faults: a Server in DeploymentError, a Frontend stuck NewlyCreated that settles later, a stray tagged Bind; per policy.
  for (const policy of ['recover', 'recreate'] as const) {
    const lb = seedLoadBalancer(sim, `lb-${policy}`);
    const uid = `record-lb-${policy}`;
    const ids = seedConverged(sim, lb, ORACLE, { tags: [tagOf(uid)] });
    await admin.patch(sim, ids['server node-2.https.web.default.prod'] as string, { state: 'DeploymentError' });
    const slow = ids['frontend http.web.default.prod'] as string;
    await admin.patch(sim, slow, { state: 'NewlyCreated', force: true });
    sim.seedObject({
      kind: 'bind',
      fields: { name: 'v4.old.web.default.prod', address: '203.0.113.10', port: 8080, ssl: false, frontend: slow },
      state: 'Deployed',
      tags: [tagOf(uid)],
    });
    const h = await runs.loadBalancer({ spec: exampleSpec([lb], { serviceUid: uid, failedResources: policy }), loadBalancer: lb });
    await until('the slow Frontend awaited', async () => (await h.query(loadBalancerStatusQuery)).phase === 'creating' && (sim.stats().requests['GET /api/LBaaS/v1/frontend.json/{id}'] ?? 0) > 0);
    await admin.patch(sim, slow, { state: 'Deployed' });
    await settle(h);
    await save(`reconcile-lb-${policy}`, h);
  }
  // A reconciliation that cannot converge: every deploy fails, two passes allowed.
  {
    const lb = seedLoadBalancer(sim, 'lb-failing');
    sim.setFaults({ seed: 1, rates: { deploymentError: 1 } });
    const h = await runs.loadBalancer({ spec: exampleSpec([lb], { serviceUid: 'record-lb-not-converged' }), loadBalancer: lb, maxPasses: 2 });
    await settle(h);
    sim.setFaults({});
    await save('reconcile-lb-not-converged', h);
  }
  // A load balancer dropped from the spec: reconcileService's cleanup child.
  {
    const keep = seedLoadBalancer(sim, 'lb-keep');
    const drop = seedLoadBalancer(sim, 'lb-drop');
    const uid = 'record-service-cleanup';
    await settle(await runs.service({ spec: exampleSpec([keep, drop], { serviceUid: uid }) }));
    const h = await runs.service({ spec: exampleSpec([keep], { serviceUid: uid }) });
    await settle(h);
    await save('reconcile-service-cleanup', h);
  }
  // reconcileService finding its child's id busy: refused start, timer, retry.
  {
    const lb = seedLoadBalancer(sim, 'lb-busy');
    const uid = 'record-service-busy';
    const ids = seedConverged(sim, lb, ORACLE, { tags: [tagOf(uid)] });
    const slow = ids['backend http.web.default.prod'] as string;
    await admin.patch(sim, slow, { state: 'NewlyCreated', force: true });
    const spec = exampleSpec([lb], { serviceUid: uid });
    const running = await runs.loadBalancer({ spec, loadBalancer: lb });
    await until('the running reconciliation waiting', async () => (await running.query(loadBalancerStatusQuery)).phase === 'creating');
    const h = await runs.service({ spec });
    await until('the parent refused and waiting', async () => ((await h.fetchHistory()).events ?? []).some((e) => e.timerStartedEventAttributes));
    await admin.patch(sim, slow, { state: 'Deployed' });
    await settle(h);
    await save('reconcile-service-busy-child', h);
  }
  // planService over drift and a dropped load balancer.
  {
    const lb = seedLoadBalancer(sim, 'lb-plan');
    const other = seedLoadBalancer(sim, 'lb-plan-dropped');
    const uid = 'record-plan';
    const ids = seedConverged(sim, lb, ORACLE, { tags: [tagOf(uid)] });
    seedConverged(sim, other, ORACLE, { tags: [tagOf(uid)] });
    await admin.delete(sim, ids['server node-1.http.web.default.prod'] as string);
    await admin.patch(sim, ids['server node-2.https.web.default.prod'] as string, { state: 'DeploymentError' });
    const h = await runs.plan({ spec: exampleSpec([lb], { serviceUid: uid }) });
    await settle(h);
    await save('plan-service', h);
  }
  await recordController(stack, out);
  await recordResyncPass(stack, out);
  await recordTerminatedPass(stack, out, 'service-controller-terminated-pass');
  await recordImport(stack, out);
  await recordPlanFirst(stack, out);
  await recordPool(stack, out);
  await recordPoolDelta(stack, out);
  await runs.terminateRunning();
}

/**
 * reconcileService planning before its children (workflows/reconcile-service.ts): one observation, then a load balancer
 * already converged (no child), one empty (a child handed its observation) and one dropped from the spec (a cleanup
 * child handed its observation). Writes reconcile-service-plan-first.json and, for the child that converges,
 * reconcile-service-plan-first-child.json.
 */
async function recordPlanFirst(stack: Stack, out: string): Promise<void> {
  const runs = new Runs(stack.client, stack.taskQueue);
  const sim = stack.sim;
  const [done, empty, dropped] = [seedLoadBalancer(sim, 'lb-plan-first-done'), seedLoadBalancer(sim, 'lb-plan-first-empty'), seedLoadBalancer(sim, 'lb-plan-first-dropped')];
  const uid = 'record-plan-first';
  seedConverged(sim, done, ORACLE, { tags: [tagOf(uid)] });
  seedConverged(sim, dropped, ORACLE, { tags: [tagOf(uid)] });
  const h = await runs.service({ spec: exampleSpec([done, empty], { serviceUid: uid }) });
  await h.result();
  for (const [name, handle] of [
    ['reconcile-service-plan-first', h],
    ['reconcile-service-plan-first-child', stack.client.workflow.getHandle(workflowIds.loadBalancer(uid, empty))],
  ] as const) {
    const history = await handle.fetchHistory();
    writeFileSync(path.join(out, `${name}.json`), `${JSON.stringify(historyToJson(history), null, 1)}\n`);
    process.stderr.write(`recorded ${name}: ${history.events?.length ?? 0} events\n`);
  }
}

/**
 * importServices over two load balancers: a service laid out by the upstream controller on both, one that cannot be
 * rebuilt exactly (a server missing on one), and a load balancer id that does not exist.
 */
async function recordImport(stack: Stack, out: string): Promise<void> {
  const sim = stack.sim;
  const [lb1, lb2] = [seedLoadBalancer(sim, 'lb-import-1'), seedLoadBalancer(sim, 'lb-import-2')];
  for (const lb of [lb1, lb2]) seedConverged(sim, lb, ORACLE, { tags: [tagOf('record-import')] });
  seedConverged(sim, lb1, ORACLE, { tags: [tagOf('record-import-uneven')] });
  seedConverged(sim, lb2, { ...ORACLE, servers: ORACLE.servers.slice(0, 1) }, { tags: [tagOf('record-import-uneven')] });
  const handle = await stack.client.workflow.start(importServices, {
    workflowId: 'record-import',
    taskQueue: stack.taskQueue,
    args: [{ loadBalancers: [lb1, lb2, 'f'.repeat(32)] }],
  });
  await handle.result();
  const history = await handle.fetchHistory();
  writeFileSync(path.join(out, 'import-services.json'), `${JSON.stringify(historyToJson(history), null, 1)}\n`);
  process.stderr.write(`recorded import-services: ${history.events?.length ?? 0} events\n`);
}

/**
 * A controller's whole life: apply (update-with-start), a second revision that supersedes the pass in flight,
 * waitConverged, a resync, and delete, which tears down and completes the workflow.
 */
async function recordController(stack: Stack, out: string): Promise<void> {
  const sim = stack.sim;
  const lbaas = new LbaasClient(stack.client, stack.taskQueue);
  const lb = seedLoadBalancer(sim, 'lb-controller');
  const uid = 'record-controller';
  const valid = (raw: Record<string, unknown>) => {
    const r = validateSpec(raw);
    if (!r.ok) throw new Error(formatIssues(r.issues));
    return r.spec;
  };
  const rev1 = exampleSpec([lb], { serviceUid: uid });
  const rev2 = exampleSpec([lb], { serviceUid: uid, ports: { http: { external: 8080, internal: 30080 } } });
  await lbaas.apply(rev1, valid(rev1));
  await until('the first pass creating', () => (sim.stats().requests['POST /api/LBaaS/v1/backend.json'] ?? 0) > 0);
  const { revision } = await lbaas.apply(rev2, valid(rev2));
  await lbaas.waitConverged(uid, revision);
  await lbaas.resync(uid);
  await until('the resync pass', async () => ((await lbaas.status(uid)).lastPass?.pass ?? 0) >= 3);
  await lbaas.delete(uid);
  const handle = lbaas.controller(uid);
  await handle.result();
  const history = await handle.fetchHistory();
  writeFileSync(path.join(out, 'service-controller.json'), `${JSON.stringify(historyToJson(history), null, 1)}\n`);
  process.stderr.write(`recorded service-controller: ${history.events?.length ?? 0} events\n`);
}

/** A controller from apply to delete with a resync waited for (`lbaas resync UID --wait`: the resyncPass update). */
async function recordResyncPass(stack: Stack, out: string): Promise<void> {
  const lbaas = new LbaasClient(stack.client, stack.taskQueue);
  const lb = seedLoadBalancer(stack.sim, 'lb-controller-resync');
  const uid = 'record-controller-resync';
  const raw = exampleSpec([lb], { serviceUid: uid });
  const r = validateSpec(raw);
  if (!r.ok) throw new Error(formatIssues(r.issues));
  const { revision } = await lbaas.apply(raw, r.spec);
  await lbaas.waitConverged(uid, revision);
  const pass = await lbaas.resyncAndWait(uid);
  if (!pass.converged || pass.pass !== 2) throw new Error(`the resync pass: ${JSON.stringify({ pass: pass.pass, converged: pass.converged, error: pass.error })}`);
  await lbaas.delete(uid);
  const handle = lbaas.controller(uid);
  await handle.result();
  const history = await handle.fetchHistory();
  writeFileSync(path.join(out, 'service-controller-resync-pass.json'), `${JSON.stringify(historyToJson(history), null, 1)}\n`);
  process.stderr.write(`recorded service-controller-resync-pass: ${history.events?.length ?? 0} events\n`);
}

/**
 * A controller whose first pass is terminated from outside (as the stranded-run sweep, worker/stranded.ts, or an
 * operator does) while it creates: the controller runs a fresh pass, which converges; then delete. `file` is the name
 * written: recorded with an earlier build's code it is the old branch of the patch terminated-pass-not-failed
 * (legacy/, docs/architecture.md "Versions and patches").
 */
async function recordTerminatedPass(stack: Stack, out: string, file: string): Promise<void> {
  const lbaas = new LbaasClient(stack.client, stack.taskQueue);
  const lb = seedLoadBalancer(stack.sim, 'lb-controller-terminated');
  const uid = 'record-controller-terminated';
  const raw = exampleSpec([lb], { serviceUid: uid });
  const r = validateSpec(raw);
  if (!r.ok) throw new Error(formatIssues(r.issues));
  const posts = () => stack.sim.stats().requests['POST /api/LBaaS/v1/backend.json'] ?? 0;
  const before = posts();
  // Slow deploys keep the first pass running until it is terminated.
  stack.sim.setFaults({ deployMs: 3000 });
  try {
    await lbaas.apply(raw, r.spec);
    await until('the first pass creating', () => posts() > before, 30_000);
    await stack.client.workflow.getHandle(workflowIds.pass(uid, 1)).terminate('recorded: a pass terminated from outside');
  } finally {
    stack.sim.setFaults({});
  }
  await until('a later pass converged', async () => {
    const last = (await lbaas.status(uid)).lastPass;
    return last !== null && last.pass >= 2 && last.converged;
  }, 60_000);
  await lbaas.delete(uid);
  const handle = lbaas.controller(uid);
  await handle.result();
  const history = await handle.fetchHistory();
  writeFileSync(path.join(out, `${file}.json`), `${JSON.stringify(historyToJson(history), null, 1)}\n`);
  process.stderr.write(`recorded ${file}: ${history.events?.length ?? 0} events\n`);
}

/**
 * A server pool and a controller that uses it, both to the end: the pool is created, the service reads its members
 * and converges them, a node is added (a delivery round signals the service), the service is deleted, the pool
 * deleted. Writes server-pool.json, service-controller-pool.json and pool-round.json (the round of the added node).
 */
async function recordPool(stack: Stack, out: string): Promise<void> {
  const lbaas = new LbaasClient(stack.client, stack.taskQueue);
  const lb = seedLoadBalancer(stack.sim, 'lb-pool');
  const uid = 'record-pool-service';
  await lbaas.pools.set({ name: 'record-pool', servers: [{ name: 'node-1', address: '10.0.0.11' }] });
  const raw = exampleSpec([lb], { serviceUid: uid, serverPool: 'record-pool' });
  delete raw.servers;
  const r = validateSpec(raw);
  if (!r.ok) throw new Error(formatIssues(r.issues));
  const { revision } = await lbaas.apply(raw, r.spec);
  await lbaas.waitConverged(uid, revision);
  const added = await lbaas.pools.add('record-pool', [{ name: 'node-2', address: '10.0.0.12' }]);
  await lbaas.pools.waitConverged('record-pool', added.revision);
  const round = (await lbaas.pools.members('record-pool')).round;
  if (round?.revision !== added.revision) throw new Error(`the pool names no round of revision ${added.revision}`);
  await lbaas.delete(uid);
  await until('the service gone from visibility', async () => (await lbaas.pools.status('record-pool')).services.length === 0);
  await lbaas.pools.delete('record-pool');
  for (const [name, handle] of [
    ['service-controller-pool', lbaas.controller(uid)],
    ['server-pool', lbaas.pools.handle('record-pool')],
    ['pool-round', stack.client.workflow.getHandle(round.workflowId)],
  ] as const) {
    await handle.result();
    const history = await handle.fetchHistory();
    writeFileSync(path.join(out, `${name}.json`), `${JSON.stringify(historyToJson(history), null, 1)}\n`);
    process.stderr.write(`recorded ${name}: ${history.events?.length ?? 0} events\n`);
  }
}

/**
 * Pool-delta passes (workflows/reconcile-delta.ts): a pool service converges with a full pass, then a node joins and
 * another leaves, each a delta pass; then the service is deleted. Writes service-controller-pool-delta.json (the
 * controller) and reconcile-pool-delta.json (the join's delta pass).
 */
async function recordPoolDelta(stack: Stack, out: string): Promise<void> {
  const lbaas = new LbaasClient(stack.client, stack.taskQueue);
  const lb = seedLoadBalancer(stack.sim, 'lb-pool-delta');
  const uid = 'record-pool-delta';
  const pool = 'record-pool-delta';
  await lbaas.pools.set({ name: pool, servers: [{ name: 'node-1', address: '10.0.0.11' }] });
  const raw = exampleSpec([lb], { serviceUid: uid, nameSuffix: uid, serverPool: pool });
  delete raw.servers;
  const r = validateSpec(raw);
  if (!r.ok) throw new Error(formatIssues(r.issues));
  const { revision } = await lbaas.apply(raw, r.spec);
  await lbaas.waitConverged(uid, revision);
  const joined = await lbaas.pools.add(pool, [{ name: 'node-2', address: '10.0.0.12' }]);
  await lbaas.pools.waitConverged(pool, joined.revision);
  const delta = stack.client.workflow.getHandle(workflowIds.pass(uid, 2));
  if ((await delta.describe()).type !== workflowTypes.reconcilePoolDelta) throw new Error('the join did not run a pool-delta pass');
  const left = await lbaas.pools.remove(pool, ['node-1']);
  await lbaas.pools.waitConverged(pool, left.revision);
  await lbaas.delete(uid);
  await until('the unsubscribe', async () => (await lbaas.pools.status(pool)).services.length === 0);
  await lbaas.pools.delete(pool);
  for (const [name, handle] of [
    ['service-controller-pool-delta', lbaas.controller(uid)],
    ['reconcile-pool-delta', delta],
  ] as const) {
    await handle.result();
    const history = await handle.fetchHistory();
    writeFileSync(path.join(out, `${name}.json`), `${JSON.stringify(historyToJson(history), null, 1)}\n`);
    process.stderr.write(`recorded ${name}: ${history.events?.length ?? 0} events\n`);
  }
}

async function main(): Promise<void> {
  const out = path.resolve(process.argv[2] ?? path.join(__dirname, '..', '..', '..', 'test', 'fixtures', 'histories'));
  mkdirSync(out, { recursive: true });
  const stack = await startStack({ sim: { seed: 20 }, activities: { readiness: { pollFirstMs: 20, pollMaxMs: 100 } } });
  try {
    await record(stack, out, process.argv.slice(3));
  } finally {
    await stack.stop();
    await stopTemporalServer();
  }
  process.stderr.write(`histories written to ${out}\n`);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`record-histories: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  });
}
