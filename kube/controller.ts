/**
 * The LoadBalancer controller of a Kubernetes cluster, as a Temporal client: it watches Services and Nodes (list+watch
 * informers that resume from their resourceVersion and list again after 410 Gone), keeps the node pool equal to the
 * member Nodes (kube/mapping.ts nodeExclusion), and for every Service that is ours applies its spec to the service's
 * controller workflow and reports back on the Service (finalizer, status.loadBalancer.ingress, Events). It never talks
 * to the Engine: the workers do. docs/kubernetes.md describes the behaviour; kube/mapping.ts the mapping.
 *
 * A sync is short and never waits for a pass: it applies (or starts a delete) and returns. A wait per service,
 * outside the work queue, learns when the pass has finished (in turns: a bounded number of Temporal polls at once,
 * kube/pass-waits.ts) and queues the Service again; that sync reports the
 * result (ingress, Events) or fails with the Warning and the queue's backoff. So the sync slots go to the Services
 * that have something to do, not to those whose load balancers are deploying.
 */
import { createHash, randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { ListWatch, V1Node, V1Service } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { sameMembers, type ServerSpec } from '../domain';
import { PoolNotFoundError } from '../client/pool-client';
import type { LbaasClient } from '../client/service-client';
import { untilAnswered, withinTurn } from '../client/update';
import { deleteUpdate, type PassResult } from '../contract';
import { httpStatus, statusMessage, type KubeTarget } from './client';
import { CLEANUP_FINALIZER, HOSTNAME_ANNOTATION, ingressOf, intentOf, nodeExclusion, nodeMembers, nodePoolName, serviceKey, serviceSpec, type KubeSettings } from './mapping';
import { LOAD_BALANCER_IPS_ANNOTATION, NOT_ENFORCED_REASON, unenforcedOptions, VIP_ADDRESSES_ANNOTATION, VIP_ALLOCATE, VIP_ANNOTATION, vipRequestOf } from './service-options';
import { allocateVips, releaseVips, vipPrefixes } from './vip';
import type { VipPrefix } from '../contract';
import type { KubeNode, KubeService } from './objects';
import { WorkQueue, type SyncOutcome } from './queue';
import { appliedHash, ServiceWrites } from './writes';
import { workflowIds, type ClusterDiscovery } from '../contract';
import { describeDiscovery, effectiveSettings, FIRST_DISCOVERY_RETRY_MS, runDiscovery } from './discovery';
import { KubePickupWatch } from './pickup-watch';
import { PassWaits, type Turn } from './pass-waits';

/** The queue key of the node pool; Service keys are `namespace/name` and never start with a colon. */
const POOL_KEY = ':node-pool';
/** The pickup watch's key of a running discovery (kube/pickup-watch.ts). */
const DISCOVERY_KEY = ':discovery';
/**
 * Services synced at once: a sync is a few short requests (Kubernetes and Temporal), never a wait for a pass. As many
 * as a CLI rollout of a fleet sends at once (bench/fleet.ts): enough to keep the workers busy, few enough that one
 * Temporal connection and the API server answer each promptly.
 */
const CONCURRENCY = 32;
/** How long stopping waits for the syncs in flight. */
const STOP_WAIT_MS = 10_000;
/** How long to wait before restarting an informer whose list or watch failed. */
const INFORMER_RESTART_MS = 2_000;

type Watched<T extends V1Service | V1Node> = ListWatch<T>;

/** How a pass the controller waited for ended, as far as reporting it needs. */
type Outcome = { converged: true; result: PassResult } | { converged: false; error: string };

/** A pass being waited for outside the queue: of the spec with this hash (apply), or the teardown (delete). */
interface Waiting {
  kind: 'apply' | 'delete';
  hash: string;
  uid: string;
  revision: number;
  outcome?: Outcome;
}

export class KubeController {
  readonly queue: WorkQueue;
  /** Says why a Service waits when no worker picks its workflow up (kube/pickup-watch.ts). */
  readonly pickup: KubePickupWatch;
  /** True once both informers have listed (start() resolved). */
  synced = false;
  readonly #writes: ServiceWrites;
  #services!: Watched<V1Service>;
  #nodes!: Watched<V1Node>;
  #leading = false;
  #stopped = false;
  /** The node pool's members as last written or read (null: not yet known). */
  #pool: ServerSpec[] | null = null;
  /** Ready Nodes that cannot be pool members; while any exists no Service is applied (as upstream). */
  #nodeProblems: string[] = [];
  /** Per Service key, the hash of the spec converged and reported by this process. */
  readonly #applied = new Map<string, string>();
  /** Per Service key, the pass being waited for; a newer apply replaces it (the older wait's outcome is dropped). */
  readonly #waiting = new Map<string, Waiting>();
  /** The waits' turns: a bounded number of Temporal polls at once, oldest first (kube/pass-waits.ts). */
  readonly #passWaits = new PassWaits();
  /** Per Service key, the unenforced options last said in a Warning (so a change is said once, not every sync). */
  readonly #noticed = new Map<string, string>();
  /**
   * Per Service key, the resourceVersion of the release's own status write, which still carries the finalizer the
   * release removes right after: a sync of that version is behind our own writes, not a Service to tear down again.
   */
  readonly #releasing = new Map<string, string>();
  /**
   * Per Service uid, the VIPs allocated (or adopted) by this process and the prefixes they came from: one allocation
   * workflow per Service and leadership term, not one per sync.
   */
  readonly #vips = new Map<string, { prefixes: string; addresses: string[] }>();
  /** The node set last logged (so a node update that changes no member logs nothing). */
  #poolLogged = '';
  /** The last successful discovery while leading (null: none yet, or discovery off). */
  #discovered: ClusterDiscovery | null = null;
  #discoveryTimer: NodeJS.Timeout | undefined;
  /** Bumped when leadership ends, so a discovery still running then is not taken into account. */
  #term = 0;

  constructor(
    readonly t: KubeTarget,
    readonly lbaas: LbaasClient,
    /** The flags; the Services are mapped with `settings`, which adds what discovery found. */
    readonly flags: KubeSettings,
    readonly identity: string,
    readonly log: (line: string) => void,
  ) {
    this.queue = new WorkQueue((key) => (key === POOL_KEY ? this.#syncPool() : this.#syncService(key)), CONCURRENCY, log);
    this.#writes = new ServiceWrites(t, identity);
    const { client, taskQueue } = lbaas;
    this.pickup = new KubePickupWatch({
      client,
      namespace: client.options.namespace,
      taskQueue,
      log,
      event: (svc, type, reason, message) => this.#writes.event(svc, type, reason, message).catch((err: unknown) => log(`${serviceKey(svc)}: could not record the event ${reason}: ${statusMessage(err)}`)),
    });
  }

  get leading(): boolean {
    return this.#leading;
  }

  /** The settings Services are mapped with: the flags, and what the last discovery found (kube/discovery.ts). */
  get settings(): KubeSettings {
    return effectiveSettings(this.flags, this.#discovered);
  }

  get poolName(): string {
    return nodePoolName(this.settings.clusterName);
  }

  /** Starts both informers and resolves once each has listed (the caches are whole). */
  async start(): Promise<void> {
    const { mod, config, core } = this.t;
    const watch = new mod.Watch(config);
    // Each list is logged: after the first, one means the watch could not resume (410 Gone: its resourceVersion was
    // compacted away) and the cache was rebuilt from a fresh list.
    const listed = <T extends { items: unknown[]; metadata?: { resourceVersion?: string } }>(what: string, list: () => Promise<T>) => async () => {
      const l = await list();
      this.log(`listed ${l.items.length} ${what} at resourceVersion ${l.metadata?.resourceVersion ?? '?'}`);
      return l;
    };
    this.#services = new mod.ListWatch<V1Service>('/api/v1/services', watch, listed('services', () => core.listServiceForAllNamespaces()), false);
    this.#nodes = new mod.ListWatch<V1Node>('/api/v1/nodes', watch, listed('nodes', () => core.listNode()), false);
    const onService = (svc: V1Service) => this.#enqueueService(svc as KubeService);
    for (const verb of ['add', 'update', 'delete'] as const) {
      this.#services.on(verb, onService);
      this.#nodes.on(verb, () => this.#leading && this.queue.add(POOL_KEY));
    }
    for (const [what, informer] of [
      ['services', this.#services],
      ['nodes', this.#nodes],
    ] as const) {
      informer.on('error', (err: unknown) => {
        if (this.#stopped) return;
        this.log(`watching ${what}: ${statusMessage(err)}; listing again in ${INFORMER_RESTART_MS / 1000} s`);
        setTimeout(() => void (!this.#stopped && informer.start()), INFORMER_RESTART_MS);
      });
    }
    await Promise.all([this.#services.start(), this.#nodes.start()]);
    // A failed first list reports through 'error' and is retried there; wait until both caches are whole.
    while (!this.#stopped && (this.#services.latestResourceVersion() === '' || this.#nodes.latestResourceVersion() === '')) {
      await new Promise((r) => setTimeout(r, 200));
    }
    this.synced = !this.#stopped;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.stopLeading();
    await Promise.all([this.#services?.stop(), this.#nodes?.stop()]);
  }

  /** Becomes the acting controller: the pool first; its first sync queues every Service from the caches. */
  startLeading(): void {
    this.#leading = true;
    this.pickup.start();
    this.queue.restart();
    this.queue.add(POOL_KEY);
    if (this.flags.discovery) void this.#discover(this.#term);
  }

  /**
   * One discovery, then the next one after the interval (sooner while none has succeeded). A change re-queues every
   * Service: its spec changes with the load balancers and addresses.
   */
  async #discover(term: number): Promise<void> {
    const discovery = this.flags.discovery;
    if (!discovery) return;
    let next = discovery.intervalMs;
    try {
      const workflowId = workflowIds.discoverRun(this.flags.clusterName, randomUUID());
      const found = await this.pickup.during(DISCOVERY_KEY, { workflowId, what: 'cluster discovery' }, () => runDiscovery(this.lbaas, this.flags.clusterName, discovery.tagPrefix, workflowId));
      if (term !== this.#term) return;
      const change = describeDiscovery(this.#discovered, found);
      this.#discovered = found;
      if (change !== null) {
        this.log(change);
        this.#enqueueAll();
      }
    } catch (err) {
      if (term !== this.#term) return;
      if (this.#discovered === null) next = Math.min(next, FIRST_DISCOVERY_RETRY_MS);
      const kept = this.#discovered === null ? 'no Service is applied until one succeeds' : 'keeping what was discovered last';
      this.log(`discovery failed: ${statusMessage(err)}; ${kept}; trying again in ${Math.round(next / 1000)} s`);
    }
    if (term !== this.#term || !this.#leading) return;
    this.#discoveryTimer = setTimeout(() => void this.#discover(term), next);
  }

  /** Stops acting; resolves when the syncs in flight have finished. What this process knew is forgotten. */
  async stopLeading(): Promise<void> {
    this.#leading = false;
    this.#term++;
    clearTimeout(this.#discoveryTimer);
    this.pickup.stop();
    // Syncs are short; one stuck on an unanswering API server or Temporal is not waited for beyond this: its writes
    // are idempotent (the same spec, the same status), so a new leader doing them again changes nothing. The passes
    // being waited for are forgotten: their outcomes arrive in an older term and are dropped.
    let timer: NodeJS.Timeout | undefined;
    const bounded = new Promise<void>((resolve) => (timer = setTimeout(resolve, STOP_WAIT_MS)));
    await Promise.race([this.queue.stop(), bounded]).finally(() => clearTimeout(timer));
    this.#applied.clear();
    this.#waiting.clear();
    this.#passWaits.clear();
    this.#vips.clear();
    this.#pool = null;
    this.#discovered = null;
  }

  #enqueueService(svc: KubeService): void {
    if (!this.#leading) return;
    // Foreign Services are not even queued: lbaas kube leaves them alone.
    if (intentOf(svc, this.settings) === 'ignore') return;
    this.queue.add(serviceKey(svc));
  }

  #enqueueAll(): void {
    for (const svc of this.#services.list()) this.#enqueueService(svc as KubeService);
  }

  #lookup(key: string): KubeService | undefined {
    const [namespace, name] = key.split('/') as [string, string];
    return this.#services.get(name, namespace) as KubeService | undefined;
  }

  async #syncPool(): Promise<SyncOutcome> {
    const nodes = this.#nodes.list() as unknown as KubeNode[];
    const { servers, unusable } = nodeMembers(nodes);
    const hadProblems = this.#nodeProblems.length > 0;
    const first = this.#pool === null;
    this.#nodeProblems = unusable;
    if (unusable.length > 0) {
      this.log(`node pool ${this.poolName} left unchanged: ${unusable.join('; ')}`);
      // Each Service gets its SyncLoadBalancerFailed naming the nodes.
      if (!hadProblems) this.#enqueueAll();
      return 'done';
    }
    if (this.#pool === null) {
      try {
        this.#pool = (await this.lbaas.pools.status(this.poolName)).servers;
      } catch (err) {
        if (!(err instanceof PoolNotFoundError)) throw err;
      }
    }
    // A node update that changes no member (its heartbeat, conditions, other labels) ends here: no Temporal request.
    if (this.#pool === null || !sameMembers(this.#pool, servers)) {
      const r = await this.pickup.during(POOL_KEY, { workflowId: workflowIds.pool(this.poolName), what: `node pool ${this.poolName}` }, () => this.lbaas.pools.set({ name: this.poolName, servers }));
      this.log(`node pool ${this.poolName}: revision ${r.revision}, ${servers.length} nodes (${servers.map((s) => s.name).join(', ') || 'none'})`);
      this.#pool = servers;
    }
    const excluded = nodes.flatMap((n) => {
      const why = nodeExclusion(n);
      return why === null ? [] : [`${n.metadata.name} (${why})`];
    });
    const shown = excluded.join(', ');
    if (shown !== this.#poolLogged && excluded.length > 0) this.log(`node pool ${this.poolName}: not members: ${shown}`);
    this.#poolLogged = shown;
    // Services held back by unusable nodes, or waiting for the pool to be known, go now.
    if (hadProblems || first) this.#enqueueAll();
    return 'done';
  }

  async #syncService(key: string): Promise<SyncOutcome> {
    const svc = this.#lookup(key);
    if (!svc) {
      this.pickup.done(key);
      this.#applied.delete(key);
      this.#noticed.delete(key);
      this.#releasing.delete(key);
      this.#stopWaiting(key);
      return 'done';
    }
    const intent = intentOf(svc, this.settings);
    if (intent === 'teardown') return this.#teardown(key, svc);
    this.#releasing.delete(key);
    if (intent === 'ignore') return 'done';
    return this.#ensure(key, svc);
  }

  async #ensure(key: string, svc: KubeService): Promise<SyncOutcome> {
    // A spec without the load balancers discovery would add tears down what lives on them: wait for the first one
    // (its success queues every Service again).
    if (this.flags.discovery && this.#discovered === null) {
      this.pickup.waiting(key, { behind: DISCOVERY_KEY, service: svc, what: 'waiting for the first discovery' });
      return 'done';
    }
    await this.#noticeUnenforced(key, svc);
    const waiting = this.#waiting.get(key);
    if (waiting?.kind === 'delete') {
      // Turned back into a LoadBalancer while its teardown runs: the controller takes no spec until that has ended.
      if (!waiting.outcome) return 'done';
      this.#stopWaiting(key);
    }
    const settings = this.settings;
    if (settings.loadBalancers.length === 0) {
      const tag = this.#discovered?.loadBalancerTag ?? '(discovery off)';
      await this.#event(svc, 'Warning', 'SyncLoadBalancerFailed', `Error syncing load balancer: no load balancer: none given with --load-balancer and none tagged ${tag}`);
      return 'done';
    }
    let mapped = serviceSpec(svc, settings);
    const reasons = mapped.ok ? this.#nodeProblems : mapped.reasons;
    if (!mapped.ok || reasons.length > 0) {
      // Nothing is applied; the Service or the Nodes must change first, and either change syncs it again. A pass
      // still being waited for is of a spec no longer wanted: its outcome is not reported.
      this.#stopWaiting(key);
      await this.#event(svc, 'Warning', 'SyncLoadBalancerFailed', `Error syncing load balancer: ${reasons.join('; ')}`);
      return 'done';
    }
    if (this.#pool === null) {
      this.pickup.waiting(key, { behind: POOL_KEY, service: svc, what: `waiting for the node pool ${this.poolName}` });
      return { retry: `waiting for the node pool ${this.poolName}` };
    }
    const vip = vipRequestOf(svc);
    if (vip.kind === 'allocate') {
      // Checked without it above: a Service that cannot be applied gets no address.
      const chosen = vipPrefixes(vip.families, this.#discovered, settings.clusterName);
      if (!chosen.ok) {
        this.#stopWaiting(key);
        await this.#event(svc, 'Warning', 'SyncLoadBalancerFailed', `Error syncing load balancer: ${chosen.reason}`);
        return 'done';
      }
      const got = await this.#vipsOf(key, svc, chosen.prefixes);
      if ('retry' in got) return got;
      svc = got.svc;
      mapped = serviceSpec(svc, settings, got.addresses);
      if (!mapped.ok) throw new Error(`the mapped spec with its VIPs did not validate: ${mapped.reasons.join('; ')}`);
    }
    const hash = specHash(mapped.spec, svc);
    // The condition is written with the ingress: a match means this spec was converged and reported, unless the
    // ingress was removed since (then report it again).
    const expectsIngress = (mapped.spec.externalAddresses as string[]).length > 0 || svc.metadata.annotations?.[HOSTNAME_ANNOTATION] !== undefined;
    const reported = appliedHash(svc) === hash && (!expectsIngress || (svc.status?.loadBalancer?.ingress?.length ?? 0) > 0);
    if (this.#applied.get(key) === hash || reported) {
      this.#stopWaiting(key);
      this.#applied.set(key, hash);
      return 'done';
    }
    if (waiting?.kind === 'apply' && waiting.hash === hash) {
      // Its pass is running; the wait queues the Service when it has finished.
      if (!waiting.outcome) return 'done';
      this.#stopWaiting(key);
      return this.#report(key, svc, hash, waiting);
    }
    await this.#event(svc, 'Normal', 'EnsuringLoadBalancer', 'Ensuring load balancer');
    if (!(svc.metadata.finalizers ?? []).includes(CLEANUP_FINALIZER)) {
      // Before anything exists on a load balancer, so a deleted Service always waits for its teardown. A 409 means
      // the Service changed meanwhile: its update event syncs it again.
      const patched = await this.#write(() => this.#writes.addFinalizer(svc));
      if (patched === null) return 'done';
      svc = patched;
    }
    // One update that applies and answers when the pass has finished; the sync returns once it is accepted.
    const uid = svc.metadata.uid;
    const applied = await this.pickup.during(key, { workflowId: workflowIds.controller(uid), service: svc, what: `applying to service ${uid}` }, () =>
      // The node pool was created or read in this term (#syncPool): no describe of it per Service.
      this.lbaas.applyAccepted(mapped.spec, mapped.validated, { poolKnown: true }),
    );
    this.log(`${key}: applied to service ${uid}; waiting for its pass`);
    const w: Waiting = { kind: 'apply', hash, uid, revision: 0 };
    this.#wait(key, svc, w, `the pass of service ${uid}`, async (withinMs) => {
      const answer = await applied.convergedWithin(withinMs);
      if (answer === null) return null;
      w.revision = answer.revision;
      return answer.result;
    });
    return 'done';
  }

  /**
   * The Service's VIPs: this process's, else allocated (or adopted) by the allocation workflow and recorded on the
   * Service. The finalizer goes on first, so that a Service with an address always has its teardown release it.
   */
  async #vipsOf(key: string, svc: KubeService, prefixes: VipPrefix[]): Promise<{ svc: KubeService; addresses: string[] } | { retry: string }> {
    const uid = svc.metadata.uid;
    const from = prefixes.map((p) => p.identifier).join(',');
    const known = this.#vips.get(uid);
    if (known?.prefixes === from) return { svc, addresses: known.addresses };
    if (!(svc.metadata.finalizers ?? []).includes(CLEANUP_FINALIZER)) {
      const patched = await this.#write(() => this.#writes.addFinalizer(svc));
      if (patched === null) return { retry: 'the Service changed while adding the finalizer' };
      svc = patched;
    }
    let vips;
    try {
      vips = (
        await this.pickup.during(key, { workflowId: workflowIds.vipAllocate(uid), service: svc, what: `allocating the VIP of service ${uid}` }, () =>
          allocateVips(this.lbaas, uid, prefixes, this.#claimedAddresses(svc)),
        )
      ).vips;
    } catch (err) {
      const why = `allocating the VIP (${VIP_ANNOTATION}: ${VIP_ALLOCATE}): ${failureText(err)}`;
      await this.#event(svc, 'Warning', 'SyncLoadBalancerFailed', `Error syncing load balancer: ${why}`);
      return { retry: why };
    }
    for (const v of vips) this.log(`${key}: VIP ${v.address} (address ${v.identifier} of prefix ${prefixes.find((p) => p.identifier === v.prefix)?.cidr ?? v.prefix}) ${v.how} for service ${uid}`);
    const addresses = vips.map((v) => v.address);
    this.#vips.set(uid, { prefixes: from, addresses });
    if (svc.metadata.annotations?.[VIP_ADDRESSES_ANNOTATION] !== addresses.join(',')) {
      const resourceVersion = await this.#writes.recordVips(svc, addresses);
      svc = { ...svc, metadata: { ...svc.metadata, annotations: { ...svc.metadata.annotations, [VIP_ADDRESSES_ANNOTATION]: addresses.join(',') }, ...(resourceVersion ? { resourceVersion } : {}) } };
    }
    return { svc, addresses };
  }

  /**
   * Addresses a new VIP must not be: the cluster's shared ones, and those other Services ask for by name (not IPAM
   * addresses of their own, so the prefix's list does not show them).
   */
  #claimedAddresses(except: KubeService): string[] {
    const out = new Set(this.settings.externalAddresses);
    for (const o of this.#services.list() as KubeService[]) {
      if (o.metadata.uid === except.metadata.uid) continue;
      if (o.spec?.loadBalancerIP) out.add(o.spec.loadBalancerIP);
      for (const a of (o.metadata.annotations?.[LOAD_BALANCER_IPS_ANNOTATION] ?? '').split(',')) if (a.trim() !== '') out.add(a.trim());
    }
    return [...out];
  }

  /** The outcome of the applied spec's pass, on the Service: ingress, annotation and Event, or the Warning and a retry. */
  async #report(key: string, svc: KubeService, hash: string, waited: Waiting): Promise<SyncOutcome> {
    const outcome = waited.outcome as Outcome;
    if (!outcome.converged) {
      await this.#event(svc, 'Warning', 'SyncLoadBalancerFailed', `Error syncing load balancer: ${outcome.error}`);
      return { retry: outcome.error };
    }
    const { result } = outcome;
    this.#applied.set(key, hash);
    const ingress = ingressOf(result.status, svc);
    await this.#writes.report(svc, ingress, hash);
    await this.#event(svc, 'Normal', 'EnsuredLoadBalancer', 'Ensured load balancer');
    this.log(`${key}: converged revision ${waited.revision} (pass ${result.pass}); ingress ${ingress.map((i) => i.ip ?? i.hostname).join(', ') || 'none'}`);
    return 'done';
  }

  async #teardown(key: string, svc: KubeService): Promise<SyncOutcome> {
    const uid = svc.metadata.uid;
    const releasing = this.#releasing.get(key);
    this.#releasing.delete(key);
    if (releasing !== undefined && releasing === svc.metadata.resourceVersion) return 'done';
    const waiting = this.#waiting.get(key);
    if (waiting?.kind === 'delete') {
      if (!waiting.outcome) return 'done';
      this.#stopWaiting(key);
      if (!waiting.outcome.converged) {
        await this.#event(svc, 'Warning', 'SyncLoadBalancerFailed', `Error deleting load balancer: ${waiting.outcome.error}`);
        return { retry: waiting.outcome.error };
      }
      this.log(`${key}: tore down service ${uid}`);
      return this.#release(key, svc);
    }
    // An apply's pass still running is superseded by the delete.
    this.#stopWaiting(key);
    await this.#event(svc, 'Normal', 'DeletingLoadBalancer', 'Deleting load balancer');
    if (!(await this.#controllerRunning(uid))) return this.#release(key, svc);
    const updateId = `delete-${randomUUID()}`;
    const update = await this.pickup.during(key, { workflowId: workflowIds.controller(uid), service: svc, what: `deleting service ${uid}` }, () =>
      untilAnswered(() => this.lbaas.controller(uid).startUpdate(deleteUpdate, { waitForStage: 'ACCEPTED', updateId }), { rpcTimeouts: 'throw' }),
    );
    this.log(`${key}: deleting service ${uid}; waiting for its teardown`);
    this.#wait(key, svc, { kind: 'delete', hash: '', uid, revision: 0 }, `deleting service ${uid}`, (withinMs) => withinTurn(this.lbaas.client.connection, withinMs, () => update.result()));
    return 'done';
  }

  /**
   * After the teardown: its VIPs released, the ingress cleared, the Event, and the finalizer last (only then may
   * Kubernetes delete it). The VIPs go after the teardown converged, when no Bind uses them any more.
   */
  async #release(key: string, svc: KubeService): Promise<SyncOutcome> {
    this.#applied.delete(key);
    const uid = svc.metadata.uid;
    if (svc.metadata.annotations?.[VIP_ADDRESSES_ANNOTATION] !== undefined || svc.metadata.annotations?.[VIP_ANNOTATION] === VIP_ALLOCATE || this.#vips.has(uid)) {
      try {
        const r = await this.pickup.during(key, { workflowId: workflowIds.vipRelease(uid), service: svc, what: `releasing the VIP of service ${uid}` }, () => releaseVips(this.lbaas, uid));
        const released = r.released.map((a) => `${a.address} (address ${a.identifier})`).join(', ') || 'none';
        this.log(`${key}: released the VIPs of service ${uid}: ${released}${r.skipped.length > 0 ? `; left alone: ${r.skipped.map((x) => `${x.identifier} (${x.reason})`).join('; ')}` : ''}`);
      } catch (err) {
        const why = `releasing the VIP: ${failureText(err)}`;
        await this.#event(svc, 'Warning', 'SyncLoadBalancerFailed', `Error deleting load balancer: ${why}`);
        return { retry: why };
      }
      this.#vips.delete(uid);
    }
    let current = svc;
    if (!svc.metadata.deletionTimestamp && ((svc.status?.loadBalancer?.ingress?.length ?? 0) > 0 || appliedHash(svc) !== undefined)) {
      const resourceVersion = await this.#writes.clearReport(svc);
      current = { ...svc, metadata: { ...svc.metadata, ...(resourceVersion ? { resourceVersion } : {}) } };
      if (resourceVersion) this.#releasing.set(key, resourceVersion);
    }
    await this.#event(current, 'Normal', 'DeletedLoadBalancer', 'Deleted load balancer');
    if ((await this.#write(() => this.#writes.release(current))) === null) {
      this.#releasing.delete(key);
      return { retry: 'the Service changed while removing the finalizer' };
    }
    return 'done';
  }

  /**
   * Waits for a pass outside the work queue, in turns shared with the other Services' waits (kube/pass-waits.ts),
   * then queues the Service so that a sync reports the outcome. A wait replaced or dropped (a newer apply, a delete,
   * leadership lost) takes no further turn, and an outcome that arrives after that is ignored.
   */
  #wait(key: string, svc: KubeService, w: Waiting, what: string, turn: Turn<PassResult>): void {
    this.#waiting.set(key, w);
    // A pass whose workflow no worker picks up is said on the Service (kube/pickup-watch.ts) while it is waited for.
    this.pickup.waiting(key, { workflowId: workflowIds.controller(w.uid), service: svc, what });
    const term = this.#term;
    const live = () => term === this.#term && this.#waiting.get(key) === w;
    const passName = w.kind === 'delete' ? 'teardown' : 'pass';
    this.#passWaits.add(turn, live, (answer) => {
      if (!live()) return;
      const outcome: Outcome = !answer.ok
        ? { converged: false, error: `waiting for the ${passName}: ${statusMessage(answer.error)}` }
        : answer.value.converged
          ? { converged: true, result: answer.value }
          : { converged: false, error: answer.value.error ?? `the ${passName} did not converge` };
      this.pickup.done(key);
      w.outcome = outcome;
      this.queue.add(key);
    });
  }

  #stopWaiting(key: string): void {
    if (this.#waiting.delete(key)) this.pickup.done(key);
  }

  /** The Service fields lbaas does not enforce, said in one Warning whenever they change (not on every sync). */
  async #noticeUnenforced(key: string, svc: KubeService): Promise<void> {
    const notes = unenforcedOptions(svc);
    const said = notes.join('\n');
    if ((this.#noticed.get(key) ?? '') === said) return;
    if (notes.length === 0) {
      this.#noticed.delete(key);
      return;
    }
    this.#noticed.set(key, said);
    await this.#event(svc, 'Warning', NOT_ENFORCED_REASON, notes.join('; '));
  }

  async #controllerRunning(uid: string): Promise<boolean> {
    try {
      return (await this.lbaas.controller(uid).describe()).status.name === 'RUNNING';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  }

  /** A metadata write and what it returns; null when the Service changed since it was read (409), which its next sync handles. */
  async #write<T>(fn: () => Promise<T>): Promise<T | null> {
    try {
      return await fn();
    } catch (err) {
      if (httpStatus(err) === 409) return null;
      throw err;
    }
  }

  async #event(svc: KubeService, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    if (type === 'Warning') this.log(`${serviceKey(svc)}: ${reason}: ${message}`);
    try {
      await this.#writes.event(svc, type, reason, message);
    } catch (err) {
      this.log(`${serviceKey(svc)}: could not record the event ${reason}: ${statusMessage(err)}`);
    }
  }
}

/** What a converged sync depends on: the spec and the hostname annotation (the ingress). */
export function specHash(spec: Record<string, unknown>, svc: KubeService): string {
  const hostname = svc.metadata.annotations?.[HOSTNAME_ANNOTATION] ?? '';
  return `sha256:${createHash('sha256').update(JSON.stringify({ spec, hostname })).digest('hex').slice(0, 32)}`;
}

/** A workflow failure's innermost message (the activity's ApplicationFailure says what the Engine refused). */
function failureText(err: unknown): string {
  let e = err as { message?: string; cause?: unknown } | undefined;
  let text = statusMessage(err);
  while (e?.cause && typeof e.cause === 'object') {
    e = e.cause as { message?: string; cause?: unknown };
    if (e.message) text = e.message;
  }
  return text;
}
