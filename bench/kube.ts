/**
 * `npm run bench -- --kube [--services N] [--seed N] [--no-fleet] [--fleet-first] [--no-write] [--kube-log FILE] [--kube-cpu-prof DIR] [--save-json FILE]`: `lbaas kube` at cluster scale, on a
 * real kube-apiserver (kube/local-apiserver.ts), beside the `lbaas apply` controller fleet of the same size.
 *
 * The cluster: 3 Nodes, N Services of type LoadBalancer created at once, each with 2 ports and both IP families
 * (`lbaas.anx.io/external-ip-families: IPv4,IPv6`), on 2 load balancers: the fleet's shape (bench/fleet.ts), 14
 * objects per load balancer. `lbaas kube` runs as the real CLI process under the service account of
 * examples/k8s-rbac.yaml; one worker at the settings of `lbaas worker` without environment. Phases:
 * - apply: from the first create until every Service has both addresses in its ingress;
 * - node join: a fourth Node, until the pool's revision for it has converged on every Service;
 * - flap: one Node NotReady and Ready again, until lbaas kube has seen it (a later node event it logs); 0 Engine
 *   writes and the same pool revision expected;
 * - delete: every Service deleted, until all are gone (their finalizers released after the teardowns).
 * Each phase: wall time, Engine requests and writes (the simulator's counters), and the Kubernetes API requests of
 * lbaas kube (the API server's audit log of its user, by verb and resource). Then the controller fleet
 * (bench/fleet.ts) of N services on a Temporal dev server and simulator of its own, as `npm run bench -- --fleet N`.
 * Publishes (bench/publish.ts) bench/results/kube.json and the `bench:kube` section of docs/benchmarks.md, and ends
 * with `summary: kube_services_per_min=…`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { parseAllDocuments } from 'yaml';
import type { CoreV1Api, KubeConfig, V1Service } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { LbaasClient } from '../client/service-client';
import { startChildWorker, type ChildWorker } from '../dev/child-worker';
import { drawPort } from '../common/ports';
import { startDevServer, type DevServer } from '../dev/devserver';
import { ensureTemporalServer } from '../dev/temporal-server';
import { apiClients, k8s, type K8sModule } from '../kube/client';
import { kubeconfigText, putNode, startLocalApiserver, type LocalApiserver } from '../kube/local-apiserver';
import { workflowsPath } from '../worker/main';
import { WORKER_DEFAULTS } from './defaults';
import { runFleet, type FleetResult } from './fleet';
import { FLEET_DEPLOY_MS, measurePhase, type PhaseCost } from './phase';
import { factTable, gitRevision, loadText, mdTable, publish } from './publish';
import { BENCH_TOKEN, startSimProcess, type SimProcess } from './sim-process';
import { mapLimit, sleep } from './util';
import { SERVERS } from './workload';
import { cacheBetween, devServerRequests, requestsBetween, SETTLE_MS as REQUESTS_SETTLE_MS, workerCacheCounts, type WorkflowCacheCounts } from './temporal-requests';

const CLUSTER = 'bench';
const POOL = `k8s-${CLUSTER}`;
const SA_USER = 'system:serviceaccount:kube-system:lbaas-kube';
const EXTERNAL = ['203.0.113.10', '2001:db8::10'];
/** Creates and deletes in flight at once: what `kubectl apply` of a large manifest or a CI job would send. */
const CLIENT_CONCURRENCY = 32;
/** How often a phase's end is checked (the watched Services counted, or one pool status query). */
const CHECK_EVERY_MS = 2000;
const JOINING = { name: 'node-4', address: '10.0.0.14' };
const REPO = path.join(__dirname, '..', '..');

export interface KubePhase {
  cost: PhaseCost;
  /** Requests lbaas kube made to the API server, by `<verb> <resource>[/<subresource>]`. */
  kubeRequests: Record<string, number>;
}

export interface KubeBenchResult {
  services: number;
  loadBalancers: number;
  objects: number;
  deployMs: { min: number; max: number };
  apply: KubePhase;
  /** The Temporal frontend's requests during the apply, by operation (bench/temporal-requests.ts); absent when not read. */
  applyTemporalRequests?: Record<string, number>;
  /** The worker's workflow cache over the apply (bench/temporal-requests.ts); absent when not read. */
  applyWorkflowCache?: WorkflowCacheCounts;
  servicesPerMinute: number;
  join: KubePhase;
  /** The node join's Services that reported the pool revision (N expected). */
  joinServices: number;
  flap: KubePhase;
  /** The pool revision moved during the flap (false expected). */
  flapMovedPool: boolean;
  remove: KubePhase;
  fleet?: FleetResult;
  date: string;
  revision: string;
  machine: string;
  loadAvg: { start: number[]; end: number[] };
}

const cpuText = (c: PhaseCost) =>
  `${Object.entries(c.cpuSeconds)
    .map(([k, v]) => `${k} ${v.toFixed(0)}`)
    .join(', ')}; machine busy ${c.machineBusySeconds.toFixed(0)}`;

const kubeTotal = (p: KubePhase) => Object.values(p.kubeRequests).reduce((a, b) => a + b, 0);

/** Servers a phase wrote (created or deleted), from its Engine requests by route. */
const serversWritten = (p: KubePhase) => (p.cost.byRoute?.['POST /api/LBaaS/v1/server.json'] ?? 0) + (p.cost.byRoute?.['DELETE /api/LBaaS/v1/server.json/{id}'] ?? 0);
/** Engine requests per Server written: the cost of a pool change against what it had to write (a pool-delta pass: at most 3). */
const perServer = (p: KubePhase) => (serversWritten(p) === 0 ? 'n/a' : (p.cost.requests / serversWritten(p)).toFixed(2));

/** The audit events of lbaas kube's user written since byte `from`: one per request (a watch counted when it starts). */
async function auditCounts(file: string, from: number): Promise<Record<string, number>> {
  const bytes = await readFile(file).catch(() => Buffer.alloc(0));
  const text = bytes.subarray(from).toString('utf8');
  const out: Record<string, number> = {};
  // The last line may still be being written: only whole lines count (it is counted by the next phase).
  for (const line of text.slice(0, text.lastIndexOf('\n') + 1).split('\n')) {
    if (!line.trim()) continue;
    const e = JSON.parse(line) as { stage?: string; verb?: string; user?: { username?: string }; objectRef?: { resource?: string; subresource?: string } };
    if (e.user?.username !== SA_USER) continue;
    const counted = e.verb === 'watch' ? e.stage === 'ResponseStarted' : e.stage === 'ResponseComplete';
    if (!counted) continue;
    const key = `${e.verb} ${e.objectRef?.resource ?? '?'}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

/** Where the audit log's whole lines end (a line being written belongs to what comes after). */
const wholeLinesEnd = (file: string) => (existsSync(file) ? readFileSync(file).lastIndexOf(0x0a) + 1 : 0);

interface KubeCli {
  child: ChildProcess;
  output(): string;
  saw(re: RegExp, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

function startKubeCli(args: string[], env: NodeJS.ProcessEnv, cpuProfDir?: string): KubeCli {
  // A CPU profile of lbaas kube (written when it exits, at the end of the run): where its CPU seconds go.
  const prof = cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', cpuProfDir] : [];
  const child = spawn(process.execPath, [...prof, path.join(REPO, 'bin', 'lbaas.js'), 'kube', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr?.on('data', (c: Buffer) => (out += c.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    output: () => out,
    async saw(re, timeoutMs = 120_000) {
      const deadline = Date.now() + timeoutMs;
      while (!re.test(out)) {
        if (child.exitCode !== null) throw new Error(`lbaas kube exited (${child.exitCode}):\n${out.slice(-3000)}`);
        if (Date.now() > deadline) throw new Error(`lbaas kube did not print ${String(re)} within ${timeoutMs / 1000} s:\n${out.slice(-3000)}`);
        await sleep(200);
      }
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

function serviceBody(i: number) {
  return {
    metadata: { name: `svc-${i}`, namespace: 'default', annotations: { 'lbaas.anx.io/external-ip-families': 'IPv4,IPv6' } },
    spec: {
      type: 'LoadBalancer',
      ports: [
        { name: 'http', port: 80, protocol: 'TCP' },
        { name: 'https', port: 443, protocol: 'TCP' },
      ],
    },
  };
}

interface WatchedServices {
  /** The benchmark's Services (`svc-…`) as last seen, by name. */
  items: Map<string, V1Service>;
  stop(): void;
}

/**
 * The benchmark's Services from one list and then a watch, listing again when the watch ends. A phase's end used to be
 * a LIST of every Service each CHECK_EVERY_MS: at 1,000 Services that was a few MB serialized by kube-apiserver and
 * parsed here every 2 s, CPU taken from the processes measured on the same CPUs (the fleet's end costs one Temporal
 * long poll per service instead).
 */
async function watchServices(mod: K8sModule, kc: KubeConfig, core: CoreV1Api, log: (l: string) => void): Promise<WatchedServices> {
  const items = new Map<string, V1Service>();
  let stopped = false;
  let current: AbortController | undefined;
  const ours = (s: V1Service) => s.metadata?.name?.startsWith('svc-') === true;
  const watch = new mod.Watch(kc);
  const start = async (): Promise<void> => {
    const list = await core.listNamespacedService({ namespace: 'default' });
    items.clear();
    for (const s of list.items) if (ours(s)) items.set(s.metadata?.name as string, s);
    let resourceVersion = list.metadata?.resourceVersion;
    current = await watch.watch(
      '/api/v1/namespaces/default/services',
      { resourceVersion, allowWatchBookmarks: true },
      (type: string, obj: V1Service) => {
        if (type === 'BOOKMARK') resourceVersion = obj.metadata?.resourceVersion;
        if (!ours(obj)) return;
        if (type === 'DELETED') items.delete(obj.metadata?.name as string);
        else if (type === 'ADDED' || type === 'MODIFIED') items.set(obj.metadata?.name as string, obj);
      },
      (err: unknown) => {
        if (stopped) return;
        if (err) log(`watching the Services: ${(err as Error).message ?? String(err)}; listing again`);
        setTimeout(() => void start().catch((e: unknown) => log(`listing the Services: ${(e as Error).message}`)), err ? 1000 : 0);
      },
    );
  };
  await start();
  return {
    items,
    stop() {
      stopped = true;
      current?.abort();
    },
  };
}

async function runKubePhases(o: { services: number; seed: number; log: (l: string) => void; bundlePath: string; dir: string; kubeLog?: string; cpuProfDir?: string }): Promise<Omit<KubeBenchResult, 'fleet' | 'date' | 'revision' | 'machine' | 'loadAvg'>> {
  const { log, services } = o;
  let server: DevServer | null = null;
  let sim: SimProcess | null = null;
  let worker: ChildWorker | null = null;
  let api: LocalApiserver | null = null;
  let kube: KubeCli | null = null;
  let connection: Connection | null = null;
  let watched: WatchedServices | null = null;
  try {
    const saToken = randomBytes(16).toString('hex');
    const auditLog = path.join(o.dir, 'audit.log');
    log('starting kube-apiserver, a Temporal dev server, the simulator and a worker');
    [server, sim, api] = await Promise.all([
      startDevServer({ progress: o.log }),
      startSimProcess({ seed: o.seed, deployMs: FLEET_DEPLOY_MS }),
      startLocalApiserver({ dir: path.join(o.dir, 'kube'), extraTokens: { [saToken]: SA_USER }, audit: { logPath: auditLog, users: [SA_USER] }, progress: log }),
    ]);
    const taskQueue = `bench-kube-${randomUUID().slice(0, 8)}`;
    const workerMetrics = `127.0.0.1:${await drawPort(new Set())}`;
    worker = await startChildWorker({
      metricsAddress: workerMetrics,
      temporalAddress: server.address,
      namespace: server.namespace,
      taskQueue,
      engineUrl: sim.url,
      token: BENCH_TOKEN,
      bundlePath: o.bundlePath,
      echo: false,
      ...(WORKER_DEFAULTS.pacing ? { pacing: WORKER_DEFAULTS.pacing } : {}),
      heapMiB: WORKER_DEFAULTS.heapMiB,
    });
    await worker.ready;
    connection = await Connection.connect({ address: server.address });
    const lbaas = new LbaasClient(new Client({ connection, namespace: server.namespace }), taskQueue);
    const lbs = [await sim.admin.seedLoadBalancer('bench-kube-a', '198.51.100.40'), await sim.admin.seedLoadBalancer('bench-kube-b', '198.51.100.41')];

    const mod = await k8s();
    const kc = new mod.KubeConfig();
    kc.loadFromFile(api.kubeconfig);
    // The benchmark's creates and deletes on kept-alive connections too: a TLS handshake per request would be CPU of
    // the benchmark and of kube-apiserver counted in the phases.
    const { core } = apiClients(mod, kc);
    const objects = mod.KubernetesObjectApi.makeApiClient(kc);
    for (const doc of parseAllDocuments(readFileSync(path.join(REPO, 'examples', 'k8s-rbac.yaml'), 'utf8'))) await objects.create(doc.toJS());
    const saKubeconfig = path.join(o.dir, 'kubeconfig-lbaas-kube');
    writeFileSync(saKubeconfig, kubeconfigText(api.url, path.join(api.dir, 'certs', 'apiserver.crt'), 'lbaas-kube', saToken));
    for (const n of SERVERS) await putNode(core, n.name, [['InternalIP', n.address]]);

    const flags = ['--kubeconfig', saKubeconfig, '--cluster-name', CLUSTER, ...lbs.flatMap((lb) => ['--load-balancer', lb]), ...EXTERNAL.flatMap((a) => ['--external-address', a]), '--auto-discover-load-balancer', 'false'];
    kube = startKubeCli(flags, { PATH: process.env.PATH, HOME: process.env.HOME, TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: server.namespace, LBAAS_TASK_QUEUE: taskQueue }, o.cpuProfDir);
    await kube.saw(/became the leader/);
    await kube.saw(new RegExp(`node pool ${POOL}: revision \\d+, 3 nodes`));
    const pids = { temporal: server.process.pid ?? -1, simulator: sim.child.pid ?? -1, worker: worker.pid, 'lbaas kube': kube.child.pid ?? -1, 'kube-apiserver': api.pids().apiserver, etcd: api.pids().etcd };
    const running = kube;

    const phase = async (name: string, body: () => Promise<void>): Promise<KubePhase> => {
      const from = wholeLinesEnd(auditLog);
      const { cost } = await measurePhase((sim as SimProcess).admin, pids, body);
      // The audit backend writes as requests complete; a moment lets the last ones reach the file.
      await sleep(1000);
      const kubeRequests = await auditCounts(auditLog, from);
      const p = { cost, kubeRequests };
      log(`${name}: ${(cost.wallMs / 1000).toFixed(1)} s, ${cost.requests} Engine requests (${cost.mutations} writes), ${kubeTotal(p)} Kubernetes API requests by lbaas kube; CPU s ${cpuText(cost)}`);
      return p;
    };
    watched = await watchServices(mod, kc, core, log);
    const ours = () => [...(watched as WatchedServices).items.values()];

    const requestsBefore = await devServerRequests(pids.temporal);
    const cacheBefore = await workerCacheCounts(workerMetrics);
    log(`apply: creating ${services} Services at once`);
    const apply = await phase('apply', async () => {
      await mapLimit(
        Array.from({ length: services }, (_, i) => i),
        CLIENT_CONCURRENCY,
        (i) => core.createNamespacedService({ namespace: 'default', body: serviceBody(i) }),
      );
      for (;;) {
        const items = ours();
        const done = items.filter((s) => (s.status?.loadBalancer?.ingress ?? []).length === EXTERNAL.length).length;
        if (done === services) break;
        if (running.child.exitCode !== null) throw new Error(`lbaas kube exited:\n${running.output().slice(-3000)}`);
        log(`apply: ${done} of ${services} Services have their ingress`);
        await sleep(CHECK_EVERY_MS);
      }
    });

    if (requestsBefore !== null) await sleep(REQUESTS_SETTLE_MS);
    const requestsAfter = requestsBefore === null ? null : await devServerRequests(pids.temporal);
    const applyTemporalRequests = requestsBefore && requestsAfter ? requestsBetween(requestsBefore, requestsAfter) : undefined;
    const cacheAfter = await workerCacheCounts(workerMetrics);
    const applyWorkflowCache = cacheBefore && cacheAfter ? cacheBetween(cacheBefore, cacheAfter) : undefined;
    if (applyWorkflowCache) log(`apply: workflow cache ${JSON.stringify(applyWorkflowCache)}`);
    log(`node join: ${JOINING.name}`);
    let joinServices = 0;
    const join = await phase('node join', async () => {
      await putNode(core, JOINING.name, [['InternalIP', JOINING.address]]);
      let revision = 0;
      for (;;) {
        const st = await lbaas.pools.status(POOL);
        if (st.servers.some((s) => s.name === JOINING.name)) {
          revision = st.revision;
          break;
        }
        await sleep(500);
      }
      const w = await lbaas.pools.waitConverged(POOL, revision);
      joinServices = w.services.length;
      if (!w.converged || w.services.length !== services) throw new Error(`the node join converged on ${w.services.length} of ${services} Services`);
    });

    log('flap: node-1 NotReady and Ready again');
    const before = (await lbaas.pools.status(POOL)).revision;
    const flap = await phase('flap', async () => {
      await putNode(core, 'node-1', [['InternalIP', '10.0.0.11']], false);
      await putNode(core, 'node-1', [['InternalIP', '10.0.0.11']], true);
      // A node event after the flap that lbaas kube logs: the flap's events were synced before it.
      await core.createNode({ body: { metadata: { name: 'flap-sentinel', labels: { 'node.kubernetes.io/exclude-from-external-load-balancers': 'true' } } } });
      await running.saw(/not members: flap-sentinel/);
    });
    const flapMovedPool = (await lbaas.pools.status(POOL)).revision !== before;

    log(`delete: deleting ${services} Services`);
    const remove = await phase('delete', async () => {
      await mapLimit(
        Array.from({ length: services }, (_, i) => i),
        CLIENT_CONCURRENCY,
        (i) => core.deleteNamespacedService({ name: `svc-${i}`, namespace: 'default' }),
      );
      for (;;) {
        const left = ours().length;
        if (left === 0) break;
        log(`delete: ${left} Services left`);
        await sleep(CHECK_EVERY_MS);
      }
    });
    return {
      services,
      loadBalancers: lbs.length,
      objects: services * lbs.length * 14,
      deployMs: FLEET_DEPLOY_MS,
      apply,
      ...(applyTemporalRequests ? { applyTemporalRequests } : {}),
      ...(applyWorkflowCache ? { applyWorkflowCache } : {}),
      servicesPerMinute: (services / apply.cost.wallMs) * 60_000,
      join,
      joinServices,
      flap,
      flapMovedPool,
      remove,
    };
  } finally {
    watched?.stop();
    await kube?.stop();
    if (o.kubeLog && kube) writeFileSync(o.kubeLog, kube.output());
    await worker?.stop().catch(() => {});
    await connection?.close();
    await sim?.stop();
    await server?.stop();
    await api?.stop();
  }
}

async function runFleetBeside(o: { services: number; seed: number; log: (l: string) => void; bundlePath: string }): Promise<FleetResult> {
  const [srv, sim] = await Promise.all([startDevServer({ progress: o.log }), startSimProcess({ seed: o.seed, deployMs: FLEET_DEPLOY_MS })]);
  const connection = await Connection.connect({ address: srv.address });
  const taskQueue = `bench-ctl-${randomUUID().slice(0, 8)}`;
  const workerMetricsAddress = `127.0.0.1:${await drawPort(new Set())}`;
  const worker = await startChildWorker({ metricsAddress: workerMetricsAddress, temporalAddress: srv.address, namespace: srv.namespace, taskQueue, engineUrl: sim.url, token: BENCH_TOKEN, bundlePath: o.bundlePath, ...(WORKER_DEFAULTS.pacing ? { pacing: WORKER_DEFAULTS.pacing } : {}), heapMiB: WORKER_DEFAULTS.heapMiB });
  try {
    await worker.ready;
    const client = new Client({ connection, namespace: srv.namespace });
    return { workerNodeHeapMiB: WORKER_DEFAULTS.heapMiB, ...(await runFleet({ client, admin: sim.admin, worker, taskQueue, services: o.services, seed: o.seed, pids: { temporal: srv.process.pid ?? -1, simulator: sim.child.pid ?? -1 }, log: o.log, workerMetricsAddress })) };
  } finally {
    await worker.stop().catch(() => {});
    await connection.close();
    await sim.stop();
    await srv.stop();
  }
}

/** Rows of counts by key (a request kind, a process), one column per phase; the largest first. */
function countRows(columns: readonly Record<string, number>[], digits = 0): (string | number)[][] {
  const keys = [...new Set(columns.flatMap((c) => Object.keys(c)))];
  const total = (k: string) => columns.reduce((a, c) => a + (c[k] ?? 0), 0);
  return keys.sort((a, b) => total(b) - total(a)).map((k) => [k, ...columns.map((c) => (c[k] === undefined ? '' : (c[k] as number).toFixed(digits)))]);
}

/** The `bench:kube` section: the run, the phases, their Kubernetes and Engine requests, CPU, and the fleet beside it. */
export function kubeSection(r: KubeBenchResult, command: string): string {
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const f = r.fleet;
  const parts = [
    factTable([
      ['command', `\`${command}\``],
      ['commit', r.revision],
      ['date', r.date],
      ['machine', r.machine],
      ['load average', loadText(r.loadAvg.start, r.loadAvg.end)],
      ['workload', `${r.services} Services x ${r.loadBalancers} load balancers over 3 Nodes, ${r.objects} Engine objects, deploys ${r.deployMs.min}-${r.deployMs.max} ms`],
    ]),
    mdTable(
      ['phase', 'wall', 'rate', 'Engine requests (writes)', 'Kubernetes API requests'],
      [
        ['apply: created until every ingress is written', s(r.apply.cost.wallMs), `${r.servicesPerMinute.toFixed(0)} services/min`, `${r.apply.cost.requests} (${r.apply.cost.mutations})`, kubeTotal(r.apply)],
        ['node join: until every Service has its Servers', s(r.join.cost.wallMs), `${(r.join.cost.requests / r.services).toFixed(1)} Engine requests/service, ${perServer(r.join)} per Server written (${serversWritten(r.join)})`, `${r.join.cost.requests} (${r.join.cost.mutations})`, kubeTotal(r.join)],
        ['NotReady/Ready flap', s(r.flap.cost.wallMs), r.flapMovedPool ? 'pool revision moved' : 'pool revision unchanged', `${r.flap.cost.requests} (${r.flap.cost.mutations})`, kubeTotal(r.flap)],
        ['delete: until every Service is gone', s(r.remove.cost.wallMs), `${((r.services / r.remove.cost.wallMs) * 60_000).toFixed(0)} services/min`, `${r.remove.cost.requests} (${r.remove.cost.mutations})`, kubeTotal(r.remove)],
      ],
      true,
    ),
    mdTable(['Kubernetes API requests of lbaas kube', 'apply', 'node join', 'delete'], countRows([r.apply.kubeRequests, r.join.kubeRequests, r.remove.kubeRequests]), true),
    mdTable(['Engine requests of the node join', 'requests'], countRows([r.join.cost.byRoute ?? {}]), true),
    mdTable(
      ['CPU seconds', 'apply', 'delete', ...(f ? ['`lbaas apply` fleet: apply'] : [])],
      countRows([{ ...r.apply.cost.cpuSeconds, 'machine busy': r.apply.cost.machineBusySeconds }, { ...r.remove.cost.cpuSeconds, 'machine busy': r.remove.cost.machineBusySeconds }, ...(f ? [{ ...f.apply.cpuSeconds, 'machine busy': f.apply.machineBusySeconds }] : [])]),
      true,
    ),
  ];
  if (r.applyTemporalRequests) parts.push(temporalRequestsTable(r.applyTemporalRequests, r.services, f?.applyTemporalRequests, f?.services));
  if (r.applyWorkflowCache) {
    const c = [r.applyWorkflowCache, ...(f?.applyWorkflowCache ? [f.applyWorkflowCache] : [])];
    parts.push(
      mdTable(
        ["The worker's workflow cache, apply", '`lbaas kube`', ...(c.length > 1 ? ['`lbaas apply` fleet'] : [])],
        [
          ['workflow tasks on a cached run (hits)', ...c.map((x) => x.hits)],
          ['runs rebuilt from their history (misses)', ...c.map((x) => x.misses)],
          ['runs evicted to make room', ...c.map((x) => x.forcedEvictions)],
        ],
        true,
      ),
    );
  }
  if (f) {
    parts.push(
      mdTable(
        ['phase', '`lbaas kube`', `\`lbaas apply\` fleet (${f.services} services)`],
        [
          ['apply', `${s(r.apply.cost.wallMs)}, ${r.servicesPerMinute.toFixed(0)} services/min, ${r.apply.cost.requests} Engine requests`, `${s(f.apply.wallMs)}, ${f.servicesPerMinute.toFixed(0)} services/min, ${f.apply.requests} Engine requests`],
          ['node join', `${s(r.join.cost.wallMs)}, ${r.join.cost.requests} Engine requests (${r.join.cost.mutations} writes)`, f.nodeChange ? `${s(f.nodeChange.wallMs)}, ${f.nodeChange.requests} Engine requests (${f.nodeChange.mutations} writes)` : 'n/a'],
          ['delete', `${s(r.remove.cost.wallMs)}, ${r.remove.cost.requests} Engine requests`, `${s(f.remove.wallMs)}, ${f.remove.requests} Engine requests`],
        ],
        true,
      ),
    );
  }
  parts.push(`\`${summaryLine(r)}\``);
  return parts.join('\n\n');
}

/**
 * The Temporal frontend's requests during the apply by operation: lbaas kube's, the fleet's when it ran and was read,
 * and the difference per Service (what the kube path asks of Temporal that the fleet's does not, or the reverse).
 */
export function temporalRequestsTable(kube: Record<string, number>, services: number, fleet?: Record<string, number>, fleetServices?: number): string {
  const ops = [...new Set([...Object.keys(kube), ...Object.keys(fleet ?? {})])].sort((a, b) => (kube[b] ?? 0) + (fleet?.[b] ?? 0) - ((kube[a] ?? 0) + (fleet?.[a] ?? 0)) || a.localeCompare(b));
  const per = (n: number | undefined, of: number) => (n ?? 0) / of;
  const rows = ops.map((op) => [
    op,
    kube[op] ?? 0,
    ...(fleet && fleetServices ? [fleet[op] ?? 0, (per(kube[op], services) - per(fleet[op], fleetServices)).toFixed(2)] : []),
  ]);
  const head = ['Temporal frontend requests, apply', '`lbaas kube`', ...(fleet ? ['`lbaas apply` fleet', 'kube - fleet per Service'] : [])];
  return mdTable(head, rows, true);
}

export function summaryLine(r: KubeBenchResult): string {
  return [
    'summary:',
    `kube_services=${r.services}`,
    `kube_services_per_min=${r.servicesPerMinute.toFixed(0)}`,
    `kube_apply_kube_requests_per_service=${(kubeTotal(r.apply) / r.services).toFixed(1)}`,
    `kube_join_engine_requests=${r.join.cost.requests}`,
    `kube_join_engine_writes=${r.join.cost.mutations}`,
    `kube_join_servers_written=${serversWritten(r.join)}`,
    `kube_join_engine_requests_per_server=${perServer(r.join)}`,
    `kube_flap_engine_writes=${r.flap.cost.mutations}`,
    `kube_delete_s=${(r.remove.cost.wallMs / 1000).toFixed(1)}`,
    ...(r.fleet ? [`fleet_services_per_min=${r.fleet.servicesPerMinute.toFixed(0)}`] : []),
  ].join(' ');
}

export async function runKubeBench(argv: string[]): Promise<void> {
  const value = (name: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
  const services = Number(value('--services') ?? 1000);
  const seed = Number(value('--seed') ?? 42);
  if (!Number.isInteger(services) || services < 1) throw new Error(`--services: expected an integer >= 1, got ${value('--services')}`);
  if (services > 1300) throw new Error(`--services: at most 1300 (2 nodePorts each from the API server's 2,768)`);
  const log = (l: string) => process.stderr.write(`[bench kube ${new Date().toISOString().slice(11, 19)}] ${l}\n`);
  const loadStart = os.loadavg();
  await ensureTemporalServer({ which: ['server'], progress: log });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lbaas-bench-kube-'));
  try {
    const quiet = { info() {}, warn() {}, error: console.error, debug() {}, trace() {}, log() {} };
    const bundle = await bundleWorkflowCode({ workflowsPath, logger: quiet as never });
    const bundlePath = path.join(dir, 'workflows.js');
    writeFileSync(bundlePath, bundle.code);
    const kubeLog = value('--kube-log');
    const cpuProf = value('--kube-cpu-prof');
    const withFleet = !argv.includes('--no-fleet');
    // --fleet-first: the fleet before lbaas kube, to see whether the order of the two runs moves their figures.
    const fleetFirst = withFleet && argv.includes('--fleet-first');
    const runFleetNow = () => {
      log(`the lbaas apply controller fleet of ${services} services`);
      return runFleetBeside({ services, seed, log, bundlePath });
    };
    let fleet: FleetResult | undefined = fleetFirst ? await runFleetNow() : undefined;
    const kube = await runKubePhases({ services, seed, log, bundlePath, dir, ...(kubeLog ? { kubeLog: path.resolve(kubeLog) } : {}), ...(cpuProf ? { cpuProfDir: path.resolve(cpuProf) } : {}) });
    if (withFleet && !fleetFirst) fleet = await runFleetNow();
    const cpus = os.availableParallelism?.() ?? os.cpus().length;
    const r: KubeBenchResult = {
      ...kube,
      ...(fleet ? { fleet } : {}),
      date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
      revision: gitRevision(),
      machine: `${cpus} CPUs (${os.cpus()[0]?.model?.trim() ?? 'unknown'}), Node ${process.version}`,
      loadAvg: { start: loadStart, end: os.loadavg() },
    };
    const command = `npm run bench -- --kube${services !== 1000 ? ` --services ${services}` : ''}${fleet ? '' : ' --no-fleet'}${fleetFirst ? ' --fleet-first' : ''}`;
    const section = kubeSection(r, command);
    process.stdout.write(`${section}\n`);
    const save = value('--save-json');
    if (save) writeFileSync(save, JSON.stringify(r, null, 1));
    if (!argv.includes('--no-write')) process.stdout.write(`wrote ${publish({ name: 'kube', doc: 'docs/benchmarks.md', results: r, section }).join(', ')}\n`);
    process.stdout.write(`${summaryLine(r)}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
