/**
 * The Engine budget run: a fleet applied at once to one worker whose Engine client is held to BUDGET_RPS requests/s,
 * against a simulator that answers 429 to a token above the same rate. Goodput is the share of the budget spent on
 * requests the Engine answered (not 429) while the fleet converged; the 429 share says how well the worker's token
 * bucket and shared backoff (activities/engine/pacing.ts) kept below the Engine's limit. Target: goodput
 * at least 90 % of the budget, at most 2 % of requests answered 429.
 */
import type { Client } from '@temporalio/client';
import type { PacingOptions } from '../activities/engine';
import type { ChildWorker } from '../dev/child-worker';
import { reconcileService } from '../workflows';
import type { MsRange, SimAdmin } from './sim-process';
import { mapLimit } from './util';
import { fleetSpec } from './workload';

/** The benchmark's budget: 20 requests/s, with a burst of as many (one second's worth). */
export const BUDGET_RPS = 20;
/** Short deploys keep the fleet's demand above the budget for the whole run, so the budget, not the Engine, paces it. */
const BUDGET_DEPLOY_MS: MsRange = { min: 100, max: 300 };

export interface BudgetResult {
  services: number;
  requestsPerSecond: number;
  wallMs: number;
  requests: number;
  throttled: number;
  /** Answered requests per second over the budget. */
  goodput: number;
  throttledShare: number;
  /**
   * Answered requests per second in each window of WINDOW_MS from the first start, and the 429s in it: where the
   * budget went unused (a slow climb back after a 429, idle gaps, the start and the tail).
   */
  windows?: { answeredPerSecond: number; throttled: number }[];
}

/** Width of the windows in which the run's rate is sampled. */
const WINDOW_MS = 5000;

export async function runBudget(o: {
  client: Client;
  admin: SimAdmin;
  startWorker: (taskQueue: string, pacing: PacingOptions) => Promise<ChildWorker>;
  services: number;
  seed: number;
  log: (line: string) => void;
}): Promise<BudgetResult> {
  const taskQueue = `bench-budget-${Date.now()}`;
  const worker = await o.startWorker(taskQueue, { requestsPerSecond: BUDGET_RPS, burst: BUDGET_RPS });
  try {
    const lbs = [await o.admin.seedLoadBalancer('bench-budget-a', '198.51.100.40'), await o.admin.seedLoadBalancer('bench-budget-b', '198.51.100.41')];
    await o.admin.call('PUT', '/_sim/faults', { profile: 'ideal', seed: o.seed, deployMs: BUDGET_DEPLOY_MS, rateLimit: { rps: BUDGET_RPS, burst: BUDGET_RPS, retryAfter: false } });
    await o.admin.resetStats();
    o.log(`budget: ${o.services} services x 2 load balancers under ${BUDGET_RPS} requests/s`);
    const t0 = Date.now();
    const results = await mapLimit(
      Array.from({ length: o.services }, (_, i) => ({ ...fleetSpec(i, lbs), serviceUid: `bench-budget-${i}` })),
      32,
      async (spec) => o.client.workflow.start(reconcileService, { taskQueue, workflowId: `bench/${spec.serviceUid}/budget`, args: [{ spec }] }),
    );
    const windows: { answeredPerSecond: number; throttled: number }[] = [];
    let sampling = true;
    const sampler = (async () => {
      let last = { total: 0, throttled: 0 };
      while (sampling) {
        await new Promise((resolve) => setTimeout(resolve, WINDOW_MS));
        const now = await o.admin.stats();
        windows.push({ answeredPerSecond: (now.total - now.throttled - (last.total - last.throttled)) / (WINDOW_MS / 1000), throttled: now.throttled - last.throttled });
        last = now;
      }
    })();
    const outcomes = await Promise.all(results.map((h) => h.result()));
    const wallMs = Date.now() - t0;
    sampling = false;
    await sampler;
    const stats = await o.admin.stats();
    const failed = outcomes.filter((r) => !r.converged).length;
    if (failed > 0) throw new Error(`budget: ${failed} services did not converge`);
    const answered = stats.total - stats.throttled;
    const r = {
      services: o.services,
      requestsPerSecond: BUDGET_RPS,
      wallMs,
      requests: stats.total,
      throttled: stats.throttled,
      goodput: answered / ((wallMs / 1000) * BUDGET_RPS),
      throttledShare: stats.total === 0 ? 0 : stats.throttled / stats.total,
      windows,
    };
    o.log(`budget: ${(wallMs / 1000).toFixed(1)} s, ${r.requests} requests, ${r.throttled} answered 429, goodput ${(r.goodput * 100).toFixed(0)} % of the budget; answered/s per ${WINDOW_MS / 1000} s (429s): ${windows.map((w) => `${w.answeredPerSecond.toFixed(1)}${w.throttled ? ` (${w.throttled})` : ''}`).join(' ')}`);
    return r;
  } finally {
    await o.admin.call('PUT', '/_sim/faults', { profile: 'ideal', rateLimit: null });
    await worker.stop();
  }
}
