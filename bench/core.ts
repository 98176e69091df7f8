/**
 * The core workload: one service (2 ports x 2 addresses x 3 servers) on 2 load balancers (the `-1lb` modes: on one), deploy delays 1000-3000
 * ms, converged from empty and then re-applied unchanged, in every mode: the product (Temporal, readiness polled
 * inside a heartbeating activity), the same with Temporal-retry-based polling (two schedules), and the waves
 * baseline. Each repetition uses one seed for all modes, so every mode draws its deploy delays from the same stream.
 */
import type { Client } from '@temporalio/client';
import type { DeployTimesOptions } from '../activities/deploy-times';
import type { PacingOptions } from '../activities/engine';
import { WORKER_DEFAULTS } from './defaults';
import type { AwaitReadyOptions } from '../activities/objects';
import { reconcileService } from '../workflows';
import { serviceTag, validateSpec } from '../domain';
import { loadBalancerBound } from './bound';
import { serviceRunHistory } from './history';
import type { MsRange, SimAdmin } from './sim-process';
import { median } from './util';
import { reconcileInWaves, type CountingEngine } from './waves';
import type { ChildWorker } from '../dev/child-worker';
import { CORE_SHAPE, coreSpec } from './workload';

export type ModeName =
  | 'heartbeat'
  | 'no-budget'
  | 'heartbeat-1lb'
  | 'no-budget-1lb'
  | 'unwatched'
  | 'prior'
  | 'no-recent-reads'
  | 'aim-25'
  | 'aim-75'
  | 'heartbeat-500'
  | 'retry'
  | 'retry-fast'
  | 'waves'
  | 'waves-jitter';
export type WorkerKind = 'heartbeat' | 'no-budget' | 'unwatched' | 'prior' | 'no-recent-reads' | 'aim-25' | 'aim-75' | 'tuned' | 'retry';

export interface Mode {
  name: ModeName;
  title: string;
  /** Which worker runs it (Temporal modes). */
  worker?: WorkerKind;
  /** The spec's readiness block (Temporal's retry policy for readiness waits); the spec default when absent. */
  specReadiness?: Record<string, unknown>;
  /** Waves modes: upstream's jitter factor (0: none). */
  wavesJitter?: number;
  /** Load balancers the service is on: 2 when absent (the core workload), 1 for its one-load-balancer variant. */
  loadBalancers?: 1 | 2;
  /** Informational modes are left out of `--quick` to keep it within 5 minutes. */
  quick: boolean;
}

/**
 * Readiness polling of each worker kind: the product default; `tuned` caps the poll interval; `retry` gives every
 * realizeObjects and settleObjects attempt a window of 0, so each attempt reads its objects once and fails NotReady,
 * and Temporal's retry policy (the spec's `readiness` block) does the polling.
 */
export const WORKER_READINESS: Record<WorkerKind, AwaitReadyOptions | undefined> = {
  heartbeat: undefined,
  'no-budget': undefined,
  unwatched: undefined,
  prior: undefined,
  'no-recent-reads': undefined,
  'aim-25': undefined,
  'aim-75': undefined,
  tuned: { pollMaxMs: 500 },
  retry: { windowMs: 0 },
};

/**
 * How each worker kind aims its readiness polls (activities/deploy-times.ts): the product default learns and aims at
 * the median and watches the deploys children wait for; `unwatched` aims every kind at the median (the product before
 * watching); `prior` never learns (the fixed 250 ms x 1.25 schedule of before, option `learn: false`); the `aim-*`
 * kinds show the trade-off between GETs and slack at other first-poll quantiles.
 */
export const WORKER_DEPLOY_TIMES: Partial<Record<WorkerKind, DeployTimesOptions>> = {
  unwatched: { watch: false },
  prior: { learn: false },
  'aim-25': { aim: 0.25 },
  'aim-75': { aim: 0.75 },
};

/**
 * The Engine budget of each worker kind: the default of `lbaas worker` (bench/defaults.ts) for all but `no-budget`,
 * which shows what that budget costs on this workload.
 */
export const WORKER_PACING: Record<WorkerKind, PacingOptions | null> = {
  heartbeat: WORKER_DEFAULTS.pacing,
  'no-budget': null,
  unwatched: WORKER_DEFAULTS.pacing,
  prior: WORKER_DEFAULTS.pacing,
  'no-recent-reads': WORKER_DEFAULTS.pacing,
  'aim-25': WORKER_DEFAULTS.pacing,
  'aim-75': WORKER_DEFAULTS.pacing,
  tuned: WORKER_DEFAULTS.pacing,
  retry: WORKER_DEFAULTS.pacing,
};

/**
 * The worker switches of the kinds that turn one mechanism off (dev/worker-process.ts): the product path stays the
 * default, and only these bench workers leave it.
 */
export const WORKER_SWITCHES: Partial<Record<WorkerKind, { recentReads?: false }>> = {
  'no-recent-reads': { recentReads: false },
};

/**
 * The same-run A/B (`npm run bench -- --core`): each mode is the default worker with exactly one latency mechanism
 * turned off, run in the same repetitions on the same seeds as `heartbeat`.
 */
export const AB_MECHANISMS: readonly { mechanism: string; mode: ModeName; off: string }[] = [
  { mechanism: 'learned deploy-time quantiles (activities/deploy-times.ts)', mode: 'prior', off: 'every deploy polled on the fixed prior schedule: 250 ms, then gaps x 1.25 up to 500 ms' },
  { mechanism: 'recent-reads cache (activities/engine/recent-reads.ts)', mode: 'no-recent-reads', off: "a round's closing observation reads every object again" },
];

export const MODES: readonly Mode[] = [
  {
    name: 'heartbeat',
    title:
      'Temporal (the product), siblings created and awaited in one realizeObjects activity, their children started when it returns; Bind and Server deploys polled at the learned median deploy time, then at quantiles halving what is left; Backend and Frontend deploys (what children wait for) watched: from the learned 10th percentile every eighth of the spread',
    worker: 'heartbeat',
    quick: true,
  },
  { name: 'no-budget', title: 'the same without an Engine request budget (every mode above and below runs at the default budget of `lbaas worker`)', worker: 'no-budget', quick: true },
  { name: 'heartbeat-1lb', title: 'the product on the same service on ONE load balancer (its bound is one load balancer\'s chain of deploys)', worker: 'heartbeat', loadBalancers: 1, quick: true },
  { name: 'no-budget-1lb', title: 'the same service on one load balancer without an Engine request budget', worker: 'no-budget', loadBalancers: 1, quick: true },
  { name: 'unwatched', title: 'the same with every deploy polled on the median-aimed schedule (no watched kinds: the product before watching)', worker: 'unwatched', quick: true },
  { name: 'prior', title: 'the same with polls not aimed (never learns: 250 ms x 1.25, max 500 ms, the schedule of before)', worker: 'prior', quick: true },
  { name: 'no-recent-reads', title: "the same with a round's closing observation reading every object again (recent-reads cache off)", worker: 'no-recent-reads', quick: false },
  { name: 'aim-25', title: 'the same aiming the first poll of Binds and Servers at the learned 25th percentile (more GETs, less slack)', worker: 'aim-25', quick: false },
  { name: 'aim-75', title: 'the same aiming the first poll of Binds and Servers at the learned 75th percentile (fewer GETs, more slack)', worker: 'aim-75', quick: false },
  { name: 'heartbeat-500', title: 'the same with polls capped at 500 ms (readiness option pollMaxMs: 500, an existing option)', worker: 'tuned', quick: false },
  { name: 'retry', title: 'Temporal, retry-based polling: settleObjects attempts of one GET each, retried on the spec default readiness policy (1 s x 1.5)', worker: 'retry', quick: true },
  {
    name: 'retry-fast',
    title: 'Temporal, retry-based polling of settleObjects on the heartbeat schedule (spec readiness 250ms x 1.25, max 1s)',
    worker: 'retry',
    quick: true,
    specReadiness: { initialInterval: '250ms', backoffCoefficient: 1.25, maximumInterval: '1s', maximumAttempts: 200 },
  },
  { name: 'waves', title: 'Waves baseline (upstream controller: all Backends, then Frontends and Servers, then Binds; polls 1 s x 1.5, no jitter)', wavesJitter: 0, quick: true },
  { name: 'waves-jitter', title: "the waves baseline with upstream's jitter (every wait stretched by a random 0-150 %), for information", wavesJitter: 1.5, quick: false },
];

export const CORE_DEPLOY_MS: MsRange = { min: 1000, max: 3000 };

export interface Phase {
  wallMs: number;
  requests: number;
  mutations: number;
  byRoute: Record<string, number>;
  /** Temporal modes: by activity type; waves: by purpose. */
  byPurpose: Record<string, number>;
  /** Median Engine request latency seen by the reconciler in this phase. */
  latencyMedianMs: number;
  /** Temporal modes: median gap between consecutive readiness GETs of one object, by ordinal (1st gap, 2nd, ...). */
  pollGaps: { medianMs: number; count: number }[];
  /** Temporal modes: readiness GETs in all, and per polled object. */
  readinessGets?: number;
  pollsPerObject?: number[];
  /** History events (Temporal modes): the reconcileService run, and each reconcileLoadBalancer run by load balancer. */
  events: { service: number; perLoadBalancer: Record<string, number> } | null;
}

export interface LoadBalancerFigures {
  loadBalancer: string;
  /** From the start of the reconciliation until this load balancer's reconciliation finished. */
  convergedMs: number;
  boundMs: number;
  deployChainMs: number;
  levels: number;
  /** From the start until the Engine finished deploying the last object here. */
  engineDoneMs: number;
  /** From the start until the first Backend was created here. */
  firstCreateMs: number;
  /** Per Frontend, Bind and Server: from its parent's deploy finishing to its own create. */
  reactionsMs: number[];
  /** The reactions split (bench/bound.ts): the readiness poll's overshoot, and from the GET that saw the parent ready to the child's create. */
  noticesMs?: number[];
  handoffsMs?: number[];
  /** From the last deploy here to the first GET that answered it (part of the tail). */
  lastNoticeMs?: number;
}

export interface CoreRun {
  mode: ModeName;
  rep: number;
  seed: number;
  serviceUid: string;
  apply: Phase;
  noop: Phase;
  loadBalancers: LoadBalancerFigures[];
  /** Max over the load balancers. */
  serviceBoundMs: number;
}

export interface CoreContext {
  client: Client;
  admin: SimAdmin;
  workers: Record<WorkerKind, { process: ChildWorker; taskQueue: string }>;
  waves: CountingEngine;
  log: (line: string) => void;
}

async function measure(ctx: CoreContext, mode: Mode, run: () => Promise<{ events: Phase['events'] }>): Promise<Phase> {
  await ctx.admin.resetStats();
  const worker = mode.worker ? ctx.workers[mode.worker].process : null;
  if (worker) await worker.stats(true);
  ctx.waves.reset();
  const t0 = Date.now();
  const { events } = await run();
  const wallMs = Date.now() - t0;
  const stats = await ctx.admin.stats();
  let byPurpose: Record<string, number>;
  let latencyMedianMs: number;
  let pollGaps: Phase['pollGaps'] = [];
  let polls: Pick<Phase, 'readinessGets' | 'pollsPerObject'> = {};
  if (worker) {
    const w = await worker.stats(true);
    byPurpose = w.byActivity;
    latencyMedianMs = median(w.latenciesMs);
    pollGaps = w.pollGaps.map((gaps) => ({ medianMs: median(gaps), count: gaps.length }));
    polls = { readinessGets: w.pollsPerObject.reduce((a, b) => a + b, 0), pollsPerObject: w.pollsPerObject };
  } else {
    byPurpose = { ...ctx.waves.counters };
    latencyMedianMs = median(ctx.waves.latencies);
  }
  return { wallMs, requests: stats.total, mutations: stats.mutations, byRoute: stats.requests, byPurpose, latencyMedianMs, pollGaps, ...polls, events };
}

export async function runCore(ctx: CoreContext, mode: Mode, rep: number, seed: number): Promise<CoreRun> {
  const lbs = [await ctx.admin.seedLoadBalancer(`bench-${mode.name}-${rep}-a`, '198.51.100.10')];
  if ((mode.loadBalancers ?? 2) === 2) lbs.push(await ctx.admin.seedLoadBalancer(`bench-${mode.name}-${rep}-b`, '198.51.100.11'));
  const serviceUid = `bench-${mode.name}-r${rep}-s${seed}`;
  const raw = coreSpec(serviceUid, lbs, mode.specReadiness);
  const valid = validateSpec(raw);
  if (!valid.ok) throw new Error(`benchmark spec is invalid: ${JSON.stringify(valid.issues)}`);
  await ctx.admin.setDeploy(seed, CORE_DEPLOY_MS);

  let started = 0;
  const perLbDone: Record<string, number> = {};
  const once = async (label: string, recordDone: boolean): Promise<{ events: Phase['events'] }> => {
    started = Date.now();
    if (mode.worker) {
      const w = ctx.workers[mode.worker];
      const handle = await ctx.client.workflow.start(reconcileService, { taskQueue: w.taskQueue, workflowId: `bench/${serviceUid}/${label}`, args: [{ spec: raw }] });
      const result = await handle.result();
      if (!result.converged) throw new Error(`${serviceUid} did not converge: ${result.error ?? ''}`);
      const h = await serviceRunHistory(ctx.client, handle);
      if (recordDone) for (const c of h.children) perLbDone[c.loadBalancer] = c.closedAt - started;
      return { events: { service: h.events, perLoadBalancer: Object.fromEntries(h.children.map((c) => [c.loadBalancer, c.events])) } };
    }
    const result = await reconcileInWaves(ctx.waves.engine, valid.spec, mode.wavesJitter ? { jitter: { factor: mode.wavesJitter, seed } } : {});
    if (recordDone) for (const l of result.loadBalancers) perLbDone[l.loadBalancer] = l.finishedAt - started;
    return { events: null };
  };

  const apply = await measure(ctx, mode, () => once('apply', true));
  const applyStarted = started;
  const objects = await ctx.admin.objects(serviceTag(serviceUid));
  const expected = CORE_SHAPE.objectsPerLoadBalancer * lbs.length;
  if (objects.length !== expected) throw new Error(`${serviceUid}: ${objects.length} objects tagged, expected ${expected}`);
  const loadBalancers = lbs.map((lb) => {
    const b = loadBalancerBound(objects, lb, apply.latencyMedianMs);
    return {
      loadBalancer: lb,
      convergedMs: perLbDone[lb] ?? NaN,
      boundMs: b.boundMs,
      deployChainMs: b.deployChainMs,
      levels: b.levels,
      engineDoneMs: b.lastDeployedAt - applyStarted,
      firstCreateMs: b.firstCreatedAt - applyStarted,
      reactionsMs: b.reactionsMs,
      noticesMs: b.noticesMs,
      handoffsMs: b.handoffsMs,
      lastNoticeMs: b.lastNoticeMs,
    };
  });
  const noop = await measure(ctx, mode, () => once('reapply', false));
  const after = await ctx.admin.objects(serviceTag(serviceUid));
  if (after.length !== expected) throw new Error(`${serviceUid}: the re-apply left ${after.length} objects, expected ${expected}`);
  return { mode: mode.name, rep, seed, serviceUid, apply, noop, loadBalancers, serviceBoundMs: Math.max(...loadBalancers.map((l) => l.boundMs)) };
}
