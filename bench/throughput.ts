/**
 * Throughput: N services x 2 load balancers applied at once (one reconcileService each) to one worker process, then
 * a no-op full resync of all of them (reconcileService again for each, nothing changed in between).
 */
import type { Client } from '@temporalio/client';
import { reconcileService } from '../workflows';
import type { MsRange, SimAdmin } from './sim-process';
import { FLEET_DEPLOY_MS, measurePhase, type FleetBenchOptions } from './phase';
import { mapLimit, procMemory, quantile, sleep } from './util';
import { CORE_SHAPE, fleetSpec } from './workload';

/** How many workflow starts the benchmark client has in flight at once. */
export const START_CONCURRENCY = 32;

export interface FleetPhase {
  wallMs: number;
  requests: number;
  mutations: number;
  /** Per service: from its start call to its result. */
  serviceP50Ms: number;
  serviceP95Ms: number;
  converged: number;
  /** CPU seconds used during the phase, per process (temporal, simulator, worker, benchmark) and by the machine. */
  cpuSeconds: Record<string, number>;
  machineBusySeconds: number;
}

export interface ThroughputResult {
  services: number;
  loadBalancers: number;
  objects: number;
  deployMs: MsRange;
  apply: FleetPhase;
  servicesPerMinute: number;
  noop: FleetPhase;
  /** Peak resident memory of the worker process over its lifetime (VmHWM), after the apply and after the resync. */
  workerPeakRssBytes: number;
  workerPeakRssAfterResyncBytes: number;
  /** Resident memory of the idle worker before the apply. */
  workerIdleRssBytes: number;
}

export async function applyAll(client: Client, admin: SimAdmin, taskQueue: string, specs: Record<string, unknown>[], label: string, pids: Record<string, number>): Promise<FleetPhase> {
  const { cost, value: results } = await measurePhase(admin, pids, async () => {
    const pending = await mapLimit(specs, START_CONCURRENCY, async (spec) => {
      const started = Date.now();
      const handle = await client.workflow.start(reconcileService, { taskQueue, workflowId: `bench/${String(spec.serviceUid)}/${label}`, args: [{ spec }] });
      // Wrapped, so that results are awaited outside the start limit: all services converge concurrently.
      const done = handle.result().then(
        (r) => ({ ms: Date.now() - started, converged: r.converged, error: r.error ?? null }),
        (err: unknown) => ({ ms: Date.now() - started, converged: false, error: String(err) }),
      );
      return { done };
    });
    return Promise.all(pending.map((p) => p.done));
  });
  const failed = results.find((r) => !r.converged);
  if (failed) throw new Error(`throughput (${label}): ${results.filter((r) => !r.converged).length} services did not converge, e.g. ${failed.error ?? ''}`);
  const ms = results.map((r) => r.ms);
  return {
    wallMs: cost.wallMs,
    requests: cost.requests,
    mutations: cost.mutations,
    serviceP50Ms: quantile(ms, 0.5),
    serviceP95Ms: quantile(ms, 0.95),
    converged: results.filter((r) => r.converged).length,
    cpuSeconds: cost.cpuSeconds,
    machineBusySeconds: cost.machineBusySeconds,
  };
}

export async function runThroughput(o: FleetBenchOptions): Promise<ThroughputResult> {
  const lbs = [await o.admin.seedLoadBalancer('bench-fleet-a', '198.51.100.20'), await o.admin.seedLoadBalancer('bench-fleet-b', '198.51.100.21')];
  const specs = Array.from({ length: o.services }, (_, i) => fleetSpec(i, lbs));
  await o.admin.setDeploy(o.seed, FLEET_DEPLOY_MS);
  const idle = procMemory(o.worker.pid);

  let sampling = true;
  let sampledPeak = 0;
  const sampler = (async () => {
    while (sampling) {
      sampledPeak = Math.max(sampledPeak, procMemory(o.worker.pid)?.rssBytes ?? 0);
      await sleep(250);
    }
  })();

  o.log(`throughput: applying ${o.services} services x ${lbs.length} load balancers`);
  const pids = { ...o.pids, worker: o.worker.pid };
  const apply = await applyAll(o.client, o.admin, o.taskQueue, specs, 'apply', pids);
  const afterApply = procMemory(o.worker.pid);
  o.log(`throughput: no-op resync of ${o.services} services`);
  const noop = await applyAll(o.client, o.admin, o.taskQueue, specs, 'resync', pids);
  const afterResync = procMemory(o.worker.pid);
  sampling = false;
  await sampler;
  if (apply.converged !== o.services || noop.converged !== o.services) throw new Error(`throughput: only ${apply.converged}/${noop.converged} of ${o.services} services converged`);

  return {
    services: o.services,
    loadBalancers: lbs.length,
    objects: o.services * lbs.length * CORE_SHAPE.objectsPerLoadBalancer,
    deployMs: FLEET_DEPLOY_MS,
    apply,
    servicesPerMinute: (o.services / apply.wallMs) * 60_000,
    noop,
    workerPeakRssBytes: afterApply?.hwmBytes ?? sampledPeak,
    workerPeakRssAfterResyncBytes: afterResync?.hwmBytes ?? sampledPeak,
    workerIdleRssBytes: idle?.rssBytes ?? NaN,
  };
}
