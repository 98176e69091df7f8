/**
 * One measured phase of a fleet benchmark (bench/throughput.ts, bench/fleet.ts): the simulator's request counters
 * reset before it, and its wall time, Engine requests and writes, and the CPU seconds of every process (and of the
 * whole machine) over it.
 */
import type { Client } from '@temporalio/client';
import type { ChildWorker } from '../dev/child-worker';
import type { MsRange, SimAdmin } from './sim-process';
import { machineCpuSeconds, procCpuSeconds } from './util';

/**
 * Deploys of 100-300 ms in every fleet run: the fleets measure the orchestrator, not the Engine's pace (the core
 * workload's 1-3 s deploys are what the convergence figures measure).
 */
export const FLEET_DEPLOY_MS: MsRange = { min: 100, max: 300 };

/** What a fleet benchmark (throughput, controller fleet) runs on. */
export interface FleetBenchOptions {
  client: Client;
  admin: SimAdmin;
  /** The one worker process under measurement (its memory is sampled). */
  worker: ChildWorker;
  taskQueue: string;
  services: number;
  seed: number;
  /** Other processes whose CPU time to account: the Temporal server, the simulator. */
  pids: Record<string, number>;
  log: (line: string) => void;
  /** `host:port` of the worker's SDK metrics (dev/child-worker.ts `metricsAddress`): its workflow cache per phase. */
  workerMetricsAddress?: string;
}

export interface PhaseCost {
  wallMs: number;
  requests: number;
  mutations: number;
  /** Requests the simulator answered 429. */
  throttled: number;
  /** CPU seconds per process (by the names given, plus `benchmark`, this process) over the phase. */
  cpuSeconds: Record<string, number>;
  /** Busy CPU seconds of the whole machine over the phase, other people's work included. */
  machineBusySeconds: number;
  /** Engine requests by `<METHOD> <route>` (the simulator's counters): where a phase's requests go. Absent in runs saved before it was counted. */
  byRoute?: Record<string, number>;
}

function cpuNow(pids: Record<string, number>): { procs: Record<string, number>; machine: number } {
  const procs = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, procCpuSeconds(pid)]));
  const u = process.cpuUsage();
  procs.benchmark = (u.user + u.system) / 1e6;
  return { procs, machine: machineCpuSeconds().busy };
}

/** Runs `body` as one measured phase; `pids` names the processes whose CPU time to account. */
export async function measurePhase<T>(admin: SimAdmin, pids: Record<string, number>, body: () => Promise<T>): Promise<{ cost: PhaseCost; value: T }> {
  await admin.resetStats();
  const cpu0 = cpuNow(pids);
  const t0 = Date.now();
  const value = await body();
  const wallMs = Date.now() - t0;
  const cpu1 = cpuNow(pids);
  const stats = await admin.stats();
  const cost: PhaseCost = {
    wallMs,
    requests: stats.total,
    mutations: stats.mutations,
    throttled: stats.throttled ?? 0,
    cpuSeconds: Object.fromEntries(Object.entries(cpu1.procs).map(([k, v]) => [k, v - (cpu0.procs[k] ?? NaN)])),
    machineBusySeconds: cpu1.machine - cpu0.machine,
    byRoute: stats.requests,
  };
  return { cost, value };
}
