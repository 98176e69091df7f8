/**
 * The core workload against the simulator's two profiles, side by side: `ideal` (the kind Engine) and `realistic`
 * (the real Engine's manners, simulator/README.md: 429 without Retry-After at 5 requests/s per token with a burst of
 * 10, deleted objects listed for 2-5 s, a tag index 1-4 s behind, overlapping tag requests failing, sparse answers).
 *
 * Three phases per profile, as an operator meets them: apply from empty, re-apply with one port dropped, delete.
 * Each phase is checked (exact object count, no duplicates, nothing untagged, nothing left after delete) and measured:
 * wall time, Engine requests, 429s received, the worker's time spent backing off, tag POSTs per created object.
 * Both run on a worker with the product's default budget (adaptive from 10 requests/s, burst 10: more than the
 * realistic Engine grants, so the shared backoff and the AIMD rate are what keep the 429s down). Target: at most 5 % of requests answered 429.
 */
import type { Client } from '@temporalio/client';
import type { PacingOptions } from '../activities/engine';
import { engineBudgetFromEnv } from '../worker/engine-settings';
import { serviceTag } from '../domain';
import type { AdminObject } from '../simulator';
import { reconcileService } from '../workflows';
import { CORE_DEPLOY_MS } from './core';
import type { ChildWorker } from '../dev/child-worker';
import type { SimAdmin } from './sim-process';
import { CORE_SHAPE, coreSpec } from './workload';

export const REALISTIC_429_TARGET = 0.05;

export interface RealisticPhase {
  name: 'apply' | 'drop a port' | 'delete';
  wallMs: number;
  requests: number;
  /** Requests the simulator refused with 429. */
  throttled: number;
  mutations: number;
  creates: number;
  tagPosts: number;
  /** Time the worker's Engine client held every request back after a 429. */
  backoffMs: number;
  /** Objects tagged for the service afterwards, and what was expected. */
  objects: number;
  expected: number;
  duplicates: number;
  untagged: number;
}

export interface RealisticRun {
  profile: 'ideal' | 'realistic';
  budget: string;
  phases: RealisticPhase[];
}

export interface RealisticContext {
  client: Client;
  admin: SimAdmin;
  seed: number;
  /** Starts a worker process (dev/child-worker.ts) on the task queue with that Engine budget, and waits until it polls. */
  startWorker: (taskQueue: string, pacing?: PacingOptions) => Promise<ChildWorker>;
  log: (line: string) => void;
}

const SCENARIOS: { profile: RealisticRun['profile']; pacing?: PacingOptions }[] = [
  // Both on the budget `lbaas worker` has without environment.
  { profile: 'ideal', pacing: engineBudgetFromEnv({}).pacing },
  { profile: 'realistic', pacing: engineBudgetFromEnv({}).pacing },
];

const countRoutes = (byRoute: Record<string, number>, pattern: RegExp) => Object.entries(byRoute).reduce((a, [r, n]) => a + (pattern.test(r) ? n : 0), 0);

/** Objects under `lbs` (by their parent chain), the load balancers themselves left out. */
function objectsUnder(all: AdminObject[], lbs: string[]): AdminObject[] {
  const byId = new Map(all.map((o) => [o.identifier, o]));
  const lbOf = (o: AdminObject): string | undefined => {
    if (o.kind === 'backend' || o.kind === 'frontend') return String(o.fields.load_balancer);
    const parent = byId.get(String(o.kind === 'bind' ? o.fields.frontend : o.fields.backend));
    return parent ? lbOf(parent) : undefined;
  };
  return all.filter((o) => o.kind !== 'loadbalancer' && lbs.includes(lbOf(o) ?? ''));
}

export async function runRealistic(ctx: RealisticContext): Promise<RealisticRun[]> {
  const runs: RealisticRun[] = [];
  for (const scenario of SCENARIOS) {
    const taskQueue = `bench-${scenario.profile}-${ctx.seed}-${Date.now()}`;
    const worker = await ctx.startWorker(taskQueue, scenario.pacing);
    try {
      await ctx.admin.call('PUT', '/_sim/faults', { profile: 'ideal', seed: ctx.seed, deployMs: { min: 10, max: 20 } });
      const warm = await ctx.admin.seedLoadBalancer(`bench-${scenario.profile}-warmup`, '198.51.100.98');
      const warmUid = `bench-warmup-${scenario.profile}-${ctx.seed}`;
      await ctx.client.workflow.execute(reconcileService, { taskQueue, workflowId: `bench/${warmUid}`, args: [{ spec: coreSpec(warmUid, [warm]) }] });
      await ctx.admin.call('PUT', '/_sim/faults', { profile: scenario.profile, seed: ctx.seed, deployMs: CORE_DEPLOY_MS });

      const lbs = [
        await ctx.admin.seedLoadBalancer(`bench-${scenario.profile}-a`, '198.51.100.20'),
        await ctx.admin.seedLoadBalancer(`bench-${scenario.profile}-b`, '198.51.100.21'),
      ];
      const uid = `bench-${scenario.profile}-s${ctx.seed}`;
      const full = coreSpec(uid, lbs);
      const oneLess = { ...full, ports: { http: (full.ports as Record<string, unknown>).http } };
      const steps: { name: RealisticPhase['name']; input: { spec: unknown; teardown?: boolean }; expected: number }[] = [
        { name: 'apply', input: { spec: full }, expected: CORE_SHAPE.objectsPerLoadBalancer * lbs.length },
        { name: 'drop a port', input: { spec: oneLess }, expected: (CORE_SHAPE.objectsPerLoadBalancer / 2) * lbs.length },
        { name: 'delete', input: { spec: oneLess, teardown: true }, expected: 0 },
      ];
      const phases: RealisticPhase[] = [];
      for (const step of steps) {
        await ctx.admin.resetStats();
        const before = await worker.stats(true);
        const t0 = Date.now();
        const result = await ctx.client.workflow.execute(reconcileService, { taskQueue, workflowId: `bench/${uid}/${step.name.replace(/ /g, '-')}`, args: [step.input] });
        const wallMs = Date.now() - t0;
        if (!result.converged) throw new Error(`${uid} ${step.name} did not converge: ${result.error ?? ''}`);
        const stats = await ctx.admin.stats();
        const after = await worker.stats(true);
        const all = await ctx.admin.objects();
        const under = objectsUnder(all, lbs);
        const tagged = under.filter((o) => o.tags.includes(serviceTag(uid)));
        // Names repeat across load balancers by design: a duplicate is a second object of one name on one load balancer.
        const names = new Set(lbs.flatMap((lb) => objectsUnder(all, [lb]).filter((o) => o.tags.includes(serviceTag(uid))).map((o) => `${lb} ${o.kind} ${o.name}`)));
        const phase: RealisticPhase = {
          name: step.name,
          wallMs,
          requests: stats.total,
          throttled: stats.throttled,
          mutations: stats.mutations,
          creates: countRoutes(stats.requests, /^POST \/api\/LBaaS\/v1\/\w+\.json$/),
          tagPosts: countRoutes(stats.requests, /^POST \/api\/core\/v1\/resource\.json\/\{id\}\/tags\//),
          backoffMs: after.backoffMs - before.backoffMs,
          objects: tagged.length,
          expected: step.expected,
          duplicates: tagged.length - names.size,
          untagged: under.length - tagged.length,
        };
        phases.push(phase);
        ctx.log(
          `${scenario.profile} ${step.name}: ${(wallMs / 1000).toFixed(1)} s, ${phase.requests} requests, ${phase.throttled} answered 429, backoff ${(phase.backoffMs / 1000).toFixed(1)} s, ${phase.objects}/${phase.expected} objects`,
        );
        if (phase.objects !== phase.expected || phase.duplicates > 0 || phase.untagged > 0) {
          throw new Error(`${uid} ${step.name}: ${phase.objects} objects tagged (expected ${phase.expected}), ${phase.duplicates} duplicates, ${phase.untagged} untagged`);
        }
      }
      const budget = scenario.pacing ? `${scenario.pacing.requestsPerSecond}/s, burst ${scenario.pacing.burst}` : 'none';
      runs.push({ profile: scenario.profile, budget, phases });
    } finally {
      await worker.stop();
    }
  }
  await ctx.admin.call('PUT', '/_sim/faults', { profile: 'ideal' });
  return runs;
}

/** 429s over requests across the realistic profile's three phases. */
export function realistic429Share(runs: readonly RealisticRun[]): number | null {
  const r = runs.find((x) => x.profile === 'realistic');
  if (!r) return null;
  const requests = r.phases.reduce((a, p) => a + p.requests, 0);
  return requests === 0 ? 0 : r.phases.reduce((a, p) => a + p.throttled, 0) / requests;
}

const s = (ms: number) => (ms / 1000).toFixed(1);

/** Table rows: one per profile and phase. */
export function realisticRows(runs: readonly RealisticRun[]): string[][] {
  const header = ['profile', 'worker budget', 'phase', 'converged in', 'requests', '429s', '429 share', 'backing off', 'creates', 'tag POSTs', 'objects'];
  const rows = runs.flatMap((r) =>
    r.phases.map((p) => [
      r.profile,
      r.budget,
      p.name,
      `${s(p.wallMs)} s`,
      String(p.requests),
      String(p.throttled),
      `${((p.throttled / Math.max(1, p.requests)) * 100).toFixed(1)} %`,
      `${s(p.backoffMs)} s`,
      String(p.creates),
      String(p.tagPosts),
      `${p.objects}/${p.expected}`,
    ]),
  );
  return [header, ...rows];
}

/** Rows as aligned plain-text columns. */
export function textTable(rows: readonly string[][]): string {
  const widths = (rows[0] ?? []).map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)) + 2);
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i] ?? 0)).join('').trimEnd()).join('\n');
}
