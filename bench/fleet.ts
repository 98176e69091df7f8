/**
 * The controller fleet (`npm run bench -- --fleet N`): N services x 2 load balancers, all on one server pool of three
 * nodes (as the Kubernetes controller puts a cluster's nodes in one pool), applied at once to one worker through
 * their controllers, as `lbaas apply` does; then a no-op full resync through the Schedule's workflow (fullResync,
 * which signals every controller found in visibility); then a node change: a fourth node added to the pool, fanned
 * out to every service; then every service deleted. Measures each phase's wall time, Engine requests and writes, CPU
 * per process, the worker's peak RSS and the history sizes of a sample of workflows.
 *
 * A phase ends when the controllers say so: converged at the applied revision (their waitConverged update), a pass
 * finished after the resync signal (their status query), the pool's waitConverged for the node change, closed after
 * the delete (describe).
 */
import type { Client } from '@temporalio/client';
import { LbaasClient } from '../client/service-client';
import { validateSpec } from '../domain';
import { fullResync } from '../workflows';
import { workflowIds } from '../contract';
import type { MsRange, SimAdmin } from './sim-process';
import { FLEET_DEPLOY_MS, measurePhase, type FleetBenchOptions, type PhaseCost } from './phase';
import { mapLimit, procMemory, quantile, sleep } from './util';
import { CORE_SHAPE, fleetSpec, SERVERS } from './workload';
import { cacheBetween, devServerRequests, requestsBetween, SETTLE_MS as REQUESTS_SETTLE_MS, workerCacheCounts, type WorkflowCacheCounts } from './temporal-requests';

/** Client calls in flight at once (applies, status queries, deletes): a CLI fleet rollout would not send more. */
const CLIENT_CONCURRENCY = 32;
/** How often the phase's end is checked while the controllers work. */
const CHECK_EVERY_MS = 2000;
/** The fleet's server pool, and the node the node change adds to it. */
const FLEET_POOL = 'bench-ctl-nodes';
const JOINING_NODE = { name: 'node-4', address: '10.0.0.14' };

/** What one phase of the fleet cost (bench/phase.ts). */
export type FleetPhaseFigures = PhaseCost;

export interface FleetResult {
  services: number;
  loadBalancers: number;
  objects: number;
  deployMs: MsRange;
  apply: FleetPhaseFigures;
  /** The Temporal frontend's requests during the apply, by operation (bench/temporal-requests.ts); absent when not read. */
  applyTemporalRequests?: Record<string, number>;
  /** The worker's workflow cache over the apply (bench/temporal-requests.ts), when its metrics were served. */
  applyWorkflowCache?: WorkflowCacheCounts;
  servicesPerMinute: number;
  /** Per service: from its apply to its converged pass. */
  serviceP50Ms: number;
  serviceP95Ms: number;
  noop: FleetPhaseFigures;
  /** Controllers the full resync signalled. */
  resyncSignalled: number;
  /** A fourth node added to the fleet's pool, until every service converged on it (absent in runs saved before it). */
  nodeChange?: FleetPhaseFigures;
  remove: FleetPhaseFigures;
  /** Objects tagged for the fleet left after the delete (0 expected). */
  leftAfterDelete: number;
  /** The worker's VmHWM right after the apply: its peak during the apply (the target's figure). */
  workerPeakRssBytes: number;
  /** Its VmHWM at the end of the run: the peak over every phase, apply to delete (absent in runs saved before it). */
  workerRunPeakRssBytes?: number;
  /** The worker's node heap limit (`--max-old-space-size`) when the benchmark set one. */
  workerNodeHeapMiB?: number;
  workerIdleRssBytes: number;
  /** History events of one controller (read after the apply and the no-op resync, before the node change) and of the fullResync run. */
  controllerEvents: number;
  fullResyncEvents: number;
}

/** One measured phase whose body only waits for the fleet's controllers. */
const phase = async (admin: SimAdmin, pids: Record<string, number>, body: () => Promise<void>): Promise<FleetPhaseFigures> => (await measurePhase(admin, pids, body)).cost;

const historyLength = async (client: Client, workflowId: string, runId?: string) => (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events?.length ?? NaN;

/** Told when each phase starts ('apply', 'resync', 'node change', 'delete') and when the run ends ('end'): for a memory profile. */
export type PhaseListener = (phase: string) => void;

export async function runFleet(o: FleetBenchOptions, onPhase: PhaseListener = () => undefined): Promise<FleetResult> {
  const lbs = [await o.admin.seedLoadBalancer('bench-ctl-a', '198.51.100.30'), await o.admin.seedLoadBalancer('bench-ctl-b', '198.51.100.31')];
  const specs = Array.from({ length: o.services }, (_, i) => {
    const { servers: _inline, ...shape } = fleetSpec(i, lbs);
    const raw = { ...shape, serviceUid: `bench-ctl-${i}`, serverPool: FLEET_POOL };
    const v = validateSpec(raw);
    if (!v.ok) throw new Error(`fleet spec ${i} is invalid: ${JSON.stringify(v.issues)}`);
    return { raw, spec: v.spec };
  });
  await o.admin.setDeploy(o.seed, FLEET_DEPLOY_MS);
  const lbaas = new LbaasClient(o.client, o.taskQueue);
  await lbaas.pools.set({ name: FLEET_POOL, servers: SERVERS });
  const pids = { ...o.pids, worker: o.worker.pid };
  const idle = procMemory(o.worker.pid);
  let sampling = true;
  let sampledPeak = 0;
  const sampler = (async () => {
    while (sampling) {
      sampledPeak = Math.max(sampledPeak, procMemory(o.worker.pid)?.rssBytes ?? 0);
      await sleep(500);
    }
  })();

  try {
    o.log(`fleet: applying ${o.services} services x ${lbs.length} load balancers through their controllers`);
    const perService: number[] = [];
    // Each controller's pass number after the apply: the resync phase ends when every controller has passed it.
    const before = new Map<string, number>();
    const requestsBefore = o.pids.temporal === undefined ? null : await devServerRequests(o.pids.temporal);
    const cacheBefore = await workerCacheCounts(o.workerMetricsAddress);
    onPhase('apply');
    const apply = await phase(o.admin, pids, async () => {
      const applied = await mapLimit(specs, CLIENT_CONCURRENCY, async (s) => ({ s, started: Date.now(), ...(await lbaas.apply(s.raw, s.spec)) }));
      await mapLimit(applied, CLIENT_CONCURRENCY, async (a) => {
        const r = await lbaas.waitConverged(a.s.spec.serviceUid, a.revision);
        if (!r.converged) throw new Error(`fleet: ${a.s.spec.serviceUid} did not converge: ${r.error ?? ''}`);
        perService.push(Date.now() - a.started);
        before.set(a.s.spec.serviceUid, r.pass);
      });
    });
    if (requestsBefore !== null) await sleep(REQUESTS_SETTLE_MS);
    const requestsAfter = requestsBefore === null || o.pids.temporal === undefined ? null : await devServerRequests(o.pids.temporal);
    const applyTemporalRequests = requestsBefore && requestsAfter ? requestsBetween(requestsBefore, requestsAfter) : undefined;
    const cacheAfter = await workerCacheCounts(o.workerMetricsAddress);
    const applyWorkflowCache = cacheBefore && cacheAfter ? cacheBetween(cacheBefore, cacheAfter) : undefined;
    if (applyWorkflowCache) o.log(`fleet: workflow cache over the apply: ${JSON.stringify(applyWorkflowCache)}`);
    const afterApply = procMemory(o.worker.pid);
    o.log(`fleet: converged in ${(apply.wallMs / 1000).toFixed(1)} s, ${apply.requests} requests; worker peak RSS so far ${((afterApply?.hwmBytes ?? 0) / 2 ** 20).toFixed(0)} MiB`);

    o.log('fleet: no-op full resync (the Schedule workflow, fullResync)');
    let signalled = 0;
    let resyncRun = '';
    onPhase('resync');
    const noop = await phase(o.admin, pids, async () => {
      const since = new Date(Date.now() - 1000).toISOString();
      const handle = await o.client.workflow.start(fullResync, { taskQueue: o.taskQueue, workflowId: `bench/fleet-resync-${Date.now()}`, args: [{}] });
      resyncRun = handle.workflowId;
      const r = await handle.result();
      signalled = r.signalled.length;
      // While the passes run, count the finished ones in visibility (one request per check): a status query per
      // controller every few seconds, 1000 at a time, competes with the passes for the worker and failed at 1000
      // services. The status of each controller is read once they are all done.
      const ended = (status: string) => `WorkflowType = 'reconcileService' AND TaskQueue = '${o.taskQueue}' AND StartTime >= '${since}' AND ExecutionStatus = '${status}'`;
      for (;;) {
        const [completed, failed] = [(await o.client.workflow.count(ended('Completed'))).count, (await o.client.workflow.count(ended('Failed'))).count];
        if (failed > 0) throw new Error(`fleet: ${failed} resync passes failed`);
        if (completed >= specs.length) break;
        await sleep(CHECK_EVERY_MS);
      }
      let pending = specs.map((s) => s.spec.serviceUid);
      while (pending.length > 0) {
        const done = await mapLimit(pending, CLIENT_CONCURRENCY, async (uid) => {
          const st = await lbaas.status(uid);
          return (st.lastPass?.pass ?? 0) > (before.get(uid) ?? 0) && st.running === null;
        });
        pending = pending.filter((_, i) => !done[i]);
        if (pending.length > 0) await sleep(CHECK_EVERY_MS);
      }
    });
    o.log(`fleet: resync in ${(noop.wallMs / 1000).toFixed(1)} s, ${noop.requests} requests, ${noop.mutations} writes`);
    const controllerEvents = await historyLength(o.client, workflowIds.controller(specs[0]?.spec.serviceUid ?? ''));
    const fullResyncEvents = await historyLength(o.client, resyncRun);

    o.log(`fleet: node change (${JOINING_NODE.name} added to pool ${FLEET_POOL})`);
    onPhase('node change');
    const nodeChange = await phase(o.admin, pids, async () => {
      const { revision } = await lbaas.pools.add(FLEET_POOL, [JOINING_NODE]);
      const w = await lbaas.pools.waitConverged(FLEET_POOL, revision);
      if (!w.converged || w.services.length !== specs.length) throw new Error(`fleet: the node change converged on ${w.services.length} of ${specs.length} services`);
    });
    o.log(`fleet: node change in ${(nodeChange.wallMs / 1000).toFixed(1)} s, ${nodeChange.requests} requests, ${nodeChange.mutations} writes`);

    o.log('fleet: deleting every service');
    onPhase('delete');
    const remove = await phase(o.admin, pids, async () => {
      await mapLimit(specs, CLIENT_CONCURRENCY, (s) => lbaas.startDelete(s.spec.serviceUid));
      let pending = specs.map((s) => s.spec.serviceUid);
      while (pending.length > 0) {
        const open = await mapLimit(pending, CLIENT_CONCURRENCY, async (uid) => (await lbaas.controller(uid).describe()).status.name === 'RUNNING');
        pending = pending.filter((_, i) => open[i]);
        if (pending.length > 0) await sleep(CHECK_EVERY_MS);
      }
    });
    onPhase('end');
    const left = (await o.admin.objects()).filter((x) => x.tags.some((t) => t.startsWith('anxccm-svc-uid=bench-ctl-'))).length;
    o.log(`fleet: deleted in ${(remove.wallMs / 1000).toFixed(1)} s, ${left} tagged objects left`);
    return {
      services: o.services,
      loadBalancers: lbs.length,
      objects: o.services * lbs.length * CORE_SHAPE.objectsPerLoadBalancer,
      deployMs: FLEET_DEPLOY_MS,
      apply,
      ...(applyTemporalRequests ? { applyTemporalRequests } : {}),
      ...(applyWorkflowCache ? { applyWorkflowCache } : {}),
      servicesPerMinute: (o.services / apply.wallMs) * 60_000,
      serviceP50Ms: quantile(perService, 0.5),
      serviceP95Ms: quantile(perService, 0.95),
      noop,
      resyncSignalled: signalled,
      nodeChange,
      remove,
      leftAfterDelete: left,
      workerPeakRssBytes: afterApply?.hwmBytes ?? sampledPeak,
      workerRunPeakRssBytes: procMemory(o.worker.pid)?.hwmBytes ?? sampledPeak,
      workerIdleRssBytes: idle?.rssBytes ?? NaN,
      controllerEvents,
      fullResyncEvents,
    };
  } finally {
    sampling = false;
    await sampler;
  }
}
