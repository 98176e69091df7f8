/**
 * The baseline: the upstream controller's way of reconciling (k8s-anexia-ccm `reconciliation.go`), as a plain async
 * reconciler without Temporal, on the project's Engine client and planner.
 *
 * Per load balancer, all load balancers concurrently (upstream `multirecon`): read the load balancer; then in a loop
 * read the service's state (list by tag, then for every tagged resource its Core resource and its typed object, no
 * cache), create whatever can be created now (one after the other, create then tag, as upstream does), and wait for
 * all of them. What can be created is what the planner wants created and whose parent exists and is ready, so the
 * waves emerge as upstream's do: all Backends; then all Frontends and Servers; then all Binds; then a pass that finds
 * nothing to do. Each wave waits for its slowest object: every object is read once right away, then the not-ready
 * ones after 1 s, 1.5 s, 2.25 s, ... (upstream `wait.ExponentialBackoff{Duration: 1s, Factor: 1.5, Cap: 5m}`).
 * Upstream also adds jitter (`Jitter: 1.5`: each wait is stretched by a random 0-150 %); the baseline leaves it out
 * by definition, unless asked (`jitter`; measured as its own mode). Finally the state is read once more for the status (upstream `Status()`).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { EngineClient, stateName } from '../activities/engine';
import { IdentifierCache, observeService } from '../activities/state';
import { Prng } from '../simulator/prng';
import { desiredObjects, planLoadBalancer, serviceTag } from '../domain';
import type { Kind, PlannedObject, ServiceSpec, Snapshot } from '../domain/types';
import { sleep } from './util';

const WAVES_POLL = { firstMs: 1000, backoff: 1.5, capMs: 300_000, steps: 30 } as const;

const LINK_FIELD: Record<Exclude<Kind, 'backend'>, string> = { frontend: 'default_backend', bind: 'frontend', server: 'backend' };

export interface WavesLoadBalancerResult {
  loadBalancer: string;
  /** When this load balancer's reconciliation (including the status read) finished (epoch ms). */
  finishedAt: number;
  /** Passes of the loop, including the last one that found nothing to do. */
  passes: number;
  created: number;
}

/** What an Engine request of the baseline is for. */
export type WavesPurpose = 'loadBalancer' | 'observe' | 'create' | 'tag' | 'poll';

const purposeOf = new AsyncLocalStorage<WavesPurpose>();
const as = <T>(purpose: WavesPurpose, fn: () => Promise<T>): Promise<T> => purposeOf.run(purpose, fn);

/** An Engine client for the baseline that counts its requests by purpose and records their latency. */
export class CountingEngine {
  readonly engine: EngineClient;
  counters: Record<WavesPurpose, number> = { loadBalancer: 0, observe: 0, create: 0, tag: 0, poll: 0 };
  latencies: number[] = [];

  constructor(baseUrl: string, token: string) {
    this.engine = new EngineClient({
      baseUrl,
      token,
      onResponse: (e) => {
        this.latencies.push(e.durationMs);
        const p = purposeOf.getStore();
        if (p) this.counters[p]++;
      },
    });
  }

  reset(): void {
    this.counters = { loadBalancer: 0, observe: 0, create: 0, tag: 0, poll: 0 };
    this.latencies = [];
  }
}

export interface WavesResult {
  loadBalancers: WavesLoadBalancerResult[];
}

interface Ref {
  kind: Kind;
  identifier: string;
  name: string;
}

export interface WavesOptions {
  /** Upstream's jitter: every wait is stretched by a random factor in [0, jitter); seeded for reproducibility. */
  jitter?: { factor: number; seed: number };
}

/** Reconciles `spec` on all its load balancers the upstream way; resolves when every one has converged. */
export async function reconcileInWaves(engine: EngineClient, spec: ServiceSpec, opts: WavesOptions = {}): Promise<WavesResult> {
  const tag = serviceTag(spec.serviceUid);
  const rng = opts.jitter ? new Prng(opts.jitter.seed, 7) : null;
  const jittered = (ms: number) => (rng && opts.jitter ? ms + rng.next() * opts.jitter.factor * ms : ms);

  const retrieve = async (loadBalancer: string): Promise<Snapshot> => {
    const groups = await as('observe', () => observeService(engine, new IdentifierCache(), spec.serviceUid));
    return { loadBalancer, objects: groups.get(loadBalancer) ?? [] };
  };

  const waitForResources = async (objects: Ref[]): Promise<void> => {
    let pending = objects;
    let interval: number = WAVES_POLL.firstMs;
    for (let step = 0; step < WAVES_POLL.steps; step++) {
      const next: Ref[] = [];
      for (const o of pending) {
        const state = stateName((await as('poll', () => engine.get(o.kind, o.identifier))).state);
        if (state === 'DeploymentError') throw new Error(`waves baseline: ${o.kind} ${o.name} failed to deploy`);
        if (state === 'NewlyCreated' || state === 'Updating') next.push(o);
      }
      pending = next;
      if (pending.length === 0) return;
      await sleep(jittered(interval));
      interval = Math.min(WAVES_POLL.capMs, interval * WAVES_POLL.backoff);
    }
    throw new Error(`waves baseline: ${pending.length} objects not ready after ${WAVES_POLL.steps} polls`);
  };

  const reconcileOne = async (loadBalancer: string): Promise<WavesLoadBalancerResult> => {
    await as('loadBalancer', () => engine.get('loadbalancer', loadBalancer));
    const desired = desiredObjects(spec, loadBalancer);
    let created = 0;
    for (let pass = 1; ; pass++) {
      const plan = planLoadBalancer(desired, await retrieve(loadBalancer), spec.failedResources);
      if (plan.destroy.length > 0) throw new Error('waves baseline: the benchmark never needs destroys; found some');
      const byKey = new Map<string, PlannedObject>(plan.objects.map((p) => [p.desired.key, p]));
      const progressing = plan.objects.filter((p) => p.action.type === 'wait');
      if (progressing.length > 0) {
        await waitForResources(progressing.map((p) => ({ kind: p.desired.kind, identifier: (p.action as { identifier: string }).identifier, name: p.desired.name })));
        continue;
      }
      const parentId = (p: PlannedObject): string | null => {
        if (p.desired.parent === null) return loadBalancer;
        const parent = byKey.get(p.desired.parent);
        return parent?.action.type === 'keep' ? parent.action.identifier : null;
      };
      const wave = plan.objects.filter((p) => p.action.type === 'create' && parentId(p) !== null);
      if (wave.length === 0) {
        if (plan.objects.some((p) => p.action.type !== 'keep')) throw new Error('waves baseline: stuck with objects it cannot create');
        await retrieve(loadBalancer);
        return { loadBalancer, finishedAt: Date.now(), passes: pass, created };
      }
      const refs: Ref[] = [];
      for (const p of wave) {
        const d = p.desired;
        const body = d.kind === 'backend' ? d.fields : { ...d.fields, [LINK_FIELD[d.kind]]: parentId(p) };
        const object = await as('create', () => engine.create(d.kind, body as never));
        await as('tag', () => engine.tag(object.identifier, tag));
        refs.push({ kind: d.kind, identifier: object.identifier, name: d.name });
        created++;
      }
      await waitForResources(refs);
    }
  };

  return { loadBalancers: await Promise.all(spec.loadBalancers.map(reconcileOne)) };
}
