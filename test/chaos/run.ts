/**
 * The chaos run (`npm run chaos`): services applied through LbaasClient while the Engine simulator injects faults,
 * worker processes are SIGKILLed at seeded moments and started again, and the Temporal dev server is stopped and
 * started again once on the same SQLite file and port. Then, faults off, every controller's latest revision must
 * converge, and the invariants of invariants.ts must hold over the Engine's objects, every workflow history and
 * every log. Prints what was injected and each invariant held/broken; exits non-zero when one broke.
 *
 *   node dist/test/chaos/run.js [--services 12] [--seed S] [--duration 120s] [--kills 6] [--keep]
 *
 * test/chaos/chaos.test.ts runs a reduced version inside the test suite.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { freePort, startDevServer, type DevServer } from '../../client/devserver';
import { LbaasClient } from '../../client/service-client';
import { ensureTemporalCli } from '../../client/temporal-path';
import { startSimulator, type AdminObject, type RunningSimulator } from '../../simulator';
import { Prng } from '../../simulator/prng';
import { parseDuration } from '../../domain';
import { containsText, everyCreatedObjectTagged, exactlyDesired, foreignUntouched, noDuplicates, type Invariant } from './invariants';
import { changedSpec, seedForeign, serviceSpec, validated, type ChaosService } from './specs';
import { WorkerPool } from './workers';

export interface FaultRates {
  serverError: number;
  rateLimited: number;
  dropAfterCommit: number;
  deploymentError: number;
}

export interface ChaosOptions {
  services: number;
  seed: number;
  /** Worker SIGKILLs, at seeded moments of the chaos window. */
  kills: number;
  /** Length of the chaos window (faults on), from the first apply. */
  durationMs: number;
  /** Stop and start the Temporal dev server once, mid-window. */
  serverRestart: boolean;
  /** Worker processes at a time. */
  workers: number;
  /** Services that get a second, changed revision mid-window. */
  changed: number;
  rates: FaultRates;
  deployMs: { min: number; max: number };
  /** Bound on waiting for every controller's latest revision to converge once faults are off. */
  convergeTimeoutMs: number;
  /** Service 2 shares service 0's name suffix (and port names) on load balancer A. */
  sharedSuffix: boolean;
  /**
   * Leave the foreign objects as new as the run instead of an hour old. A retried create adopts untagged objects with
   * its exact name and fields that are younger than the activity (less a 5 minute clock-skew margin), so fresh
   * look-alikes are expected to be adopted: this shows that window, it is not a realistic Engine.
   */
  freshForeign: boolean;
  /** Keep the work directory (SQLite file, logs) even when every invariant held. */
  keep: boolean;
  temporalPath?: string;
  progress?: (line: string) => void;
}

export const DEFAULT_OPTIONS: ChaosOptions = {
  services: 12,
  seed: 1,
  kills: 6,
  durationMs: 120_000,
  serverRestart: true,
  workers: 2,
  changed: 4,
  rates: { serverError: 0.1, rateLimited: 0.1, dropAfterCommit: 0.1, deploymentError: 0.1 },
  deployMs: { min: 50, max: 400 },
  convergeTimeoutMs: 600_000,
  sharedSuffix: true,
  freshForeign: false,
  keep: false,
};

export interface Injected {
  serverError: number;
  rateLimited: number;
  dropAfterCommit: number;
  deploymentError: number;
  workerKills: number;
  /** Worker exits we did not cause; `whileServerDown` ones are a worker refusing to start without Temporal. */
  workerOwnExits: { name: string; how: string; whileServerDown: boolean }[];
  workerStarts: number;
  serverRestarts: number;
  serverDownMs: number;
  revisionsApplied: number;
  resyncsAfterFaultsOff: number;
  engineRequests: number;
  engineUnauthorized: number;
}

export interface ChaosReport {
  options: Omit<ChaosOptions, 'progress'>;
  injected: Injected;
  invariants: Invariant[];
  ok: boolean;
  timings: { setupMs: number; chaosMs: number; convergeMs: number; checkMs: number; totalMs: number };
  workDir: string;
  workflowsScanned: number;
}

/** Stops whatever a run in progress has started; set while a run is in progress (for SIGINT/SIGTERM). */
let abortRun: (() => Promise<void>) | null = null;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

/** Runs `fn` until it succeeds or `timeoutMs` passes (Temporal may be restarting). */
async function retrying<T>(what: string, fn: () => Promise<T>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`${what}: ${(err as Error).message}`);
      await sleep(1000);
    }
  }
}

async function adminJson(sim: RunningSimulator, method: string, route: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${sim.url}${route}`, {
    method,
    ...(body !== undefined ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${route}: ${res.status} ${text}`);
  return text === '' ? undefined : JSON.parse(text);
}

const allObjects = async (sim: RunningSimulator) => ((await adminJson(sim, 'GET', '/_sim/objects')) as { objects: AdminObject[] }).objects;

export async function runChaos(input: Partial<ChaosOptions> = {}): Promise<ChaosReport> {
  const o: ChaosOptions = { ...DEFAULT_OPTIONS, ...input, rates: { ...DEFAULT_OPTIONS.rates, ...input.rates } };
  const started = Date.now();
  const say = (line: string) => o.progress?.(`[chaos ${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s] ${line}`);
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-chaos-'));
  // Distinctive, so that finding it anywhere cannot be a coincidence.
  const token = `chaos-engine-token-${randomBytes(12).toString('hex')}`;
  const prng = new Prng(o.seed, 7);
  const injected: Injected = {
    serverError: 0,
    rateLimited: 0,
    dropAfterCommit: 0,
    deploymentError: 0,
    workerKills: 0,
    workerOwnExits: [],
    workerStarts: 0,
    serverRestarts: 0,
    serverDownMs: 0,
    revisionsApplied: 0,
    resyncsAfterFaultsOff: 0,
    engineRequests: 0,
    engineUnauthorized: 0,
  };

  const simLogFile = path.join(workDir, 'simulator.log');
  const simLog = createWriteStream(simLogFile);
  const countFaults = (line: string) => {
    if (line.includes('[fault serverError]')) injected.serverError++;
    else if (line.includes('[fault rateLimited]')) injected.rateLimited++;
    else if (line.includes('[fault dropAfterCommit')) injected.dropAfterCommit++;
    else if (line.startsWith('deploy ') && line.endsWith('-> DeploymentError')) injected.deploymentError++;
    else if (line.includes(' -> 401')) injected.engineUnauthorized++;
  };
  const sim = await startSimulator({
    port: 0,
    token,
    seed: o.seed,
    deployMs: o.deployMs,
    log: (line) => {
      countFaults(line);
      simLog.write(`${line}\n`);
    },
  });

  let server: DevServer | null = null;
  let connection: Connection | null = null;
  let pool: WorkerPool | null = null;
  const invariants: Invariant[] = [];
  const timings = { setupMs: 0, chaosMs: 0, convergeMs: 0, checkMs: 0, totalMs: 0 };
  let workflowsScanned = 0;
  let ok = false;
  abortRun = async () => {
    await pool?.stop();
    await server?.stop();
    await sim.close();
  };
  try {
    // --- the Engine before the run: two load balancers, foreign objects, snapshot ---------------------------------
    const lbs = [0, 1].map((i) =>
      sim.seedObject({ kind: 'loadbalancer', fields: { name: `chaos-lb-${'ab'[i]}`, ip_address: `198.51.100.${i + 1}` }, state: 'Deployed' }),
    ) as [string, string];
    const services: ChaosService[] = Array.from({ length: o.services }, (_, i) => {
      const raw = serviceSpec(o.seed, i, lbs, { sharedSuffix: o.sharedSuffix });
      return { uid: raw.serviceUid as string, revisions: [raw] };
    });
    const outsider = await seedForeign(
      { seed: async (s) => ((await adminJson(sim, 'POST', '/_sim/objects', s)) as { identifier: string }).identifier },
      o.seed,
      lbs,
      services.map((s) => s.revisions[0] as Record<string, unknown>),
    );
    // Foreign objects predate the run, as they would on a real Engine: an hour old.
    if (!o.freshForeign) for (const obj of sim.sim.store.byId.values()) obj.createdAt -= 3_600_000;
    const before = Object.fromEntries((await allObjects(sim)).map((x) => [x.identifier, x]));
    say(`simulator ${sim.url}: 2 load balancers, ${Object.keys(before).length - 2} foreign objects (untagged look-alikes, and tagged for ${outsider})`);
    const faults = (rates: FaultRates) => adminJson(sim, 'PUT', '/_sim/faults', { seed: o.seed, deployMs: o.deployMs, rates });
    await faults(o.rates);

    // --- Temporal, workers --------------------------------------------------------------------------------------
    const temporalPath = o.temporalPath ?? (await ensureTemporalCli({ progress: (l) => say(l) }));
    const port = await freePort();
    const dbFile = path.join(workDir, 'temporal.db');
    const serverLog = path.join(workDir, 'temporal-server.log');
    const startServer = () => startDevServer({ temporalPath, port, dbFile, logFile: serverLog, startTimeoutMs: 120_000 });
    server = await startServer();
    say(`Temporal dev server ${server.address} (SQLite ${dbFile})`);
    connection = await Connection.connect({ address: server.address });
    const client = new Client({ connection, namespace: server.namespace });
    const taskQueue = `chaos-${o.seed}`;
    const lbaas = new LbaasClient(client, taskQueue);
    const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_') && !k.startsWith('LBAAS_') && k !== 'ANEXIA_TOKEN'));
    Object.assign(env, {
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_NAMESPACE: server.namespace,
      LBAAS_TASK_QUEUE: taskQueue,
      ANEXIA_ENGINE_URL: sim.url,
      ANEXIA_TOKEN: token,
    });
    pool = new WorkerPool({ slots: o.workers, env, logDir: workDir, event: say });
    pool.start();
    await pool.waitAllReady(180_000);
    timings.setupMs = Date.now() - started;

    // --- the chaos window ---------------------------------------------------------------------------------------
    const latest = new Map<string, number>();
    const apply = async (svc: ChaosService, raw: Record<string, unknown>) => {
      const { revision } = await retrying(`apply ${svc.uid}`, () => lbaas.apply(raw, validated(raw)));
      latest.set(svc.uid, revision);
      injected.revisionsApplied++;
      say(`applied ${svc.uid} revision ${revision}`);
    };
    const t0 = Date.now();
    await Promise.all(services.map((s) => apply(s, s.revisions[0] as Record<string, unknown>)));

    type Event = { at: number; what: string; run: () => Promise<void> };
    const serverDown: { from: number; to: number }[] = [];
    const events: Event[] = [];
    for (let k = 0; k < o.kills; k++) {
      events.push({
        at: Math.round(o.durationMs * (0.05 + 0.9 * prng.next())),
        what: 'kill',
        run: async () => {
          const victim = await pool!.kill((n) => prng.int(0, n - 1), prng.int(0, 2000));
          say(victim ? `SIGKILL ${victim}` : 'no polling worker to kill');
        },
      });
    }
    if (o.serverRestart) {
      events.push({
        at: Math.round(o.durationMs * (0.4 + 0.2 * prng.next())),
        what: 'server restart',
        run: async () => {
          say('stopping the Temporal dev server');
          const down = Date.now();
          serverDown.push({ from: down, to: Number.POSITIVE_INFINITY });
          await server!.stop();
          await sleep(1000);
          server = await startServer();
          injected.serverDownMs = Date.now() - down;
          // A worker started just before the server came back may still fail to connect: two seconds of grace.
          (serverDown[serverDown.length - 1] as { to: number }).to = Date.now() + 2000;
          injected.serverRestarts++;
          say(`Temporal dev server back on ${server.address} after ${injected.serverDownMs} ms`);
        },
      });
    }
    const reapplies: Promise<void>[] = [];
    const order = services.map((_, i) => i).sort(() => prng.next() - 0.5);
    const changing = order.slice(0, Math.min(o.changed, services.length));
    events.push({
      at: Math.round(o.durationMs * 0.3),
      what: 'changed revisions',
      run: async () => {
        changing.forEach((i, variant) => {
          const svc = services[i] as ChaosService;
          const raw = changedSpec(svc.revisions[0] as Record<string, unknown>, variant, lbs);
          svc.revisions.push(raw);
          reapplies.push(apply(svc, raw));
        });
      },
    });
    events.sort((a, b) => a.at - b.at);
    for (const e of events) {
      await sleep(t0 + e.at - Date.now());
      await e.run();
    }
    await sleep(t0 + o.durationMs - Date.now());
    await Promise.all(reapplies);
    await faults({ serverError: 0, rateLimited: 0, dropAfterCommit: 0, deploymentError: 0 });
    timings.chaosMs = Date.now() - t0;
    say('faults off; waiting for every controller to converge on its latest revision');

    // --- convergence ----------------------------------------------------------------------------------------------
    const c0 = Date.now();
    const deadline = c0 + o.convergeTimeoutMs;
    const notConverged: string[] = [];
    await Promise.all(
      services.map(async (svc) => {
        const revision = latest.get(svc.uid) as number;
        const why = await convergeOne(connection as Connection, lbaas, svc.uid, revision, deadline, () => injected.resyncsAfterFaultsOff++);
        if (why) notConverged.push(`${svc.uid} revision ${revision}: ${why}`);
        else say(`${svc.uid} converged on revision ${revision}`);
      }),
    );
    invariants.push({
      name: `every controller converged on its latest revision (within ${Math.round(o.convergeTimeoutMs / 1000)} s)`,
      held: notConverged.length === 0,
      detail: notConverged.length ? notConverged : [`${services.length} controllers in ${((Date.now() - c0) / 1000).toFixed(1)} s`],
    });
    // Nothing may still be working on the Engine when the objects are judged.
    const stray = await quiesce(client, 60_000);
    invariants.push({
      name: 'no reconciliation still running after convergence',
      held: stray.length === 0,
      detail: stray.length ? stray : ['only the controllers are running'],
    });
    timings.convergeMs = Date.now() - c0;

    // --- invariants -------------------------------------------------------------------------------------------------
    const k0 = Date.now();
    const objects = await allObjects(sim);
    const finalSpecs = services.map((s) => validated(s.revisions[s.revisions.length - 1] as Record<string, unknown>));
    const objInput = { objects, before, services: finalSpecs };
    invariants.push(exactlyDesired(objInput), noDuplicates(objInput), everyCreatedObjectTagged(objInput), foreignUntouched(objInput));

    const canary = String((services[services.length - 1] as ChaosService).revisions[0]?.nameSuffix);
    const h = await scanHistories(client, token, canary);
    workflowsScanned = h.workflows;
    const historyProblems = [...h.hits.map((id) => `token in the history of ${id}`), ...h.errors];
    if (h.canaryHits === 0) historyProblems.push(`the scan found the canary "${canary}" in no history: it does not see payloads`);
    invariants.push({
      name: 'Engine token absent from every workflow history',
      held: historyProblems.length === 0,
      detail: historyProblems.length ? historyProblems : [`${h.workflows} workflow runs, ${h.events} events scanned (payloads decoded; canary found in ${h.canaryHits})`],
    });

    injected.engineRequests = ((await adminJson(sim, 'GET', '/_sim/stats')) as { total: number }).total;
    await pool.stop();
    injected.workerKills = pool.kills;
    injected.workerStarts = pool.starts;
    injected.workerOwnExits = pool.ownExits.map((x) => ({ name: x.name, how: x.how, whileServerDown: serverDown.some((d) => x.at >= d.from && x.at <= d.to) }));
    const died = injected.workerOwnExits.filter((x) => !x.whileServerDown);
    invariants.push({
      name: 'no worker died on its own (Temporal restart, Engine faults)',
      held: died.length === 0,
      detail: died.length ? died.map((x) => `${x.name} exited: ${x.how} (see its log in the work directory)`) : [`${pool.starts} worker processes, every exit ours or at start-up while the server was down`],
    });
    await server.stop();
    await new Promise<void>((r) => simLog.end(() => r()));
    const logs = [...pool.logFiles, serverLog, simLogFile];
    const logProblems: string[] = [];
    let logBytes = 0;
    for (const file of logs) {
      const text = await readFile(file, 'utf8').catch(() => '');
      logBytes += text.length;
      if (text.includes(token)) logProblems.push(`token in ${path.basename(file)}`);
    }
    const firstWorkerLog = await readFile(pool.logFiles[0] as string, 'utf8').catch(() => '');
    if (!firstWorkerLog.includes('lbaas worker: task queue')) logProblems.push('the first worker log lacks the worker start line: logs were not captured');
    invariants.push({
      name: 'Engine token absent from every log',
      held: logProblems.length === 0,
      detail: logProblems.length ? logProblems : [`${logs.length} logs, ${(logBytes / 1024).toFixed(0)} KiB (workers, Temporal server, simulator)`],
    });
    timings.checkMs = Date.now() - k0;
    ok = invariants.every((i) => i.held);
  } finally {
    abortRun = null;
    await pool?.stop();
    await connection?.close().catch(() => {});
    await server?.stop();
    await sim.close();
    simLog.end();
  }
  timings.totalMs = Date.now() - started;
  const { progress: _progress, ...options } = o;
  const report: ChaosReport = { options, injected, invariants, ok, timings, workDir, workflowsScanned };
  await writeFile(path.join(workDir, 'report.json'), JSON.stringify(report, null, 2));
  if (ok && !o.keep) {
    await rm(workDir, { recursive: true, force: true });
    report.workDir = '(removed)';
  }
  return report;
}

/**
 * Waits for the controller to report a converged pass of `revision` (or newer), with nothing running: waitConverged in
 * bounded slices (each aborted when it runs out, so no call outlives the run), the status query in between. A failed
 * pass of that revision gets one resync (faults are off by now; the controller's own retry may be minutes away).
 * Returns null when converged, else why not.
 */
async function convergeOne(connection: Connection, lbaas: LbaasClient, uid: string, revision: number, deadline: number, resynced: () => void): Promise<string | null> {
  let resyncedPass = -1;
  let last = 'no status yet';
  while (Date.now() < deadline) {
    const slice = new AbortController();
    const timer = setTimeout(() => slice.abort(), Math.min(30_000, Math.max(0, deadline - Date.now())));
    try {
      await connection.withAbortSignal(slice.signal, () => lbaas.waitConverged(uid, revision));
    } catch {
      // Aborted at the end of the slice, or Temporal briefly unavailable: the status below says where things are.
    } finally {
      clearTimeout(timer);
    }
    try {
      const st = await lbaas.status(uid);
      const lp = st.lastPass;
      last = `phase ${st.phase}, revision ${st.revision}, last pass ${lp ? `${lp.pass} (revision ${lp.revision}, ${lp.converged ? 'converged' : `failed: ${lp.error ?? ''}`})` : 'none'}${st.running ? `, pass ${st.running.pass} running since ${new Date(st.running.startedAt).toISOString()}` : ''}`;
      if (st.revision !== revision) return `the controller is at revision ${st.revision}, expected ${revision}`;
      if (lp && lp.revision === revision && lp.converged && !st.running && st.phase === 'Converged') return null;
      if (lp && lp.revision === revision && !lp.converged && !st.running && lp.pass !== resyncedPass) {
        resyncedPass = lp.pass;
        await lbaas.resync(uid);
        resynced();
      }
    } catch (err) {
      last = (err as Error).message;
    }
    await sleep(500);
  }
  return `not converged: ${last}`;
}

/** Waits until no workflow other than the controllers runs; returns those still running at the deadline. */
async function quiesce(client: Client, timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const running: string[] = [];
    for await (const wf of client.workflow.list({ query: `ExecutionStatus = 'Running' AND WorkflowType != 'serviceController'` })) {
      running.push(`${wf.type} ${wf.workflowId}`);
    }
    if (running.length === 0 || Date.now() > deadline) return running;
    await sleep(1000);
  }
}

/** Every run of every workflow in the namespace, its full history searched for `token` (and for `canary`). */
async function scanHistories(client: Client, token: string, canary: string) {
  const out = { workflows: 0, events: 0, hits: [] as string[], canaryHits: 0, errors: [] as string[] };
  for await (const wf of client.workflow.list()) {
    out.workflows++;
    try {
      const history = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
      out.events += history.events?.length ?? 0;
      if (containsText(history, token)) out.hits.push(`${wf.workflowId} (run ${wf.runId})`);
      if (containsText(history, canary)) out.canaryHits++;
    } catch (err) {
      out.errors.push(`history of ${wf.workflowId} (run ${wf.runId}) unreadable: ${(err as Error).message}`);
    }
  }
  return out;
}

/** The report as people read it: what was injected, then each invariant. */
export function formatReport(r: ChaosReport): string {
  const o = r.options;
  const i = r.injected;
  const row = (label: string, value: string | number) => `  ${label.padEnd(40)} ${value}`;
  const lines = [
    `chaos run: ${o.services} services on 2 load balancers, seed ${o.seed}, ${o.workers} workers, chaos window ${Math.round(o.durationMs / 1000)} s`,
    `  fault rates ${JSON.stringify(o.rates)}, deploys ${o.deployMs.min}-${o.deployMs.max} ms`,
    '',
    'injected',
    row('Engine 5xx (serverError)', i.serverError),
    row('Engine 429 (rateLimited)', i.rateLimited),
    row('applied, answer lost (dropAfterCommit)', i.dropAfterCommit),
    row('deploys ending in DeploymentError', i.deploymentError),
    row('worker SIGKILLs', i.workerKills),
    row('worker processes started', i.workerStarts),
    row('worker exits not caused by us', i.workerOwnExits.length ? `${i.workerOwnExits.length} (${i.workerOwnExits.map((x) => `${x.name} ${x.how}${x.whileServerDown ? ' while the server was down' : ''}`).join('; ')})` : 0),
    row('Temporal dev server restarts', i.serverRestarts ? `${i.serverRestarts} (down ${(i.serverDownMs / 1000).toFixed(1)} s)` : 0),
    row('spec revisions applied', `${i.revisionsApplied} (${o.services} first + ${i.revisionsApplied - o.services} changed mid-run)`),
    row('resyncs sent after faults off', i.resyncsAfterFaultsOff),
    row('Engine requests / answered 401', `${i.engineRequests} / ${i.engineUnauthorized}`),
    '',
    'invariants',
    ...r.invariants.flatMap((inv) => [`  ${inv.held ? 'HELD  ' : 'BROKEN'}  ${inv.name}`, ...inv.detail.map((d) => `            ${d}`)]),
    '',
    `timings: setup ${(r.timings.setupMs / 1000).toFixed(1)} s, chaos ${(r.timings.chaosMs / 1000).toFixed(1)} s, converge ${(r.timings.convergeMs / 1000).toFixed(1)} s, checks ${(r.timings.checkMs / 1000).toFixed(1)} s, total ${(r.timings.totalMs / 1000).toFixed(1)} s`,
    `work directory: ${r.workDir}`,
    r.ok ? 'RESULT: every invariant held' : 'RESULT: invariants broken',
  ];
  return lines.join('\n');
}

function durationArg(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const ms = /^\d+$/.test(value) ? Number(value) * 1000 : parseDuration(value);
  if (ms === null || ms <= 0) throw new Error(`--${name}: expected seconds or a duration like 90s or 2m, got "${value}"`);
  return ms;
}

function intArg(name: string, value: string | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name}: expected an integer >= ${min}, got "${value}"`);
  return n;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      services: { type: 'string' },
      seed: { type: 'string' },
      duration: { type: 'string' },
      kills: { type: 'string' },
      workers: { type: 'string' },
      changed: { type: 'string' },
      'converge-timeout': { type: 'string' },
      'no-restart': { type: 'boolean' },
      'no-shared-suffix': { type: 'boolean' },
      'fresh-foreign': { type: 'boolean' },
      keep: { type: 'boolean' },
      json: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(
      'usage: npm run chaos -- [--services 12] [--seed S] [--duration 120s] [--kills 6] [--workers 2] [--changed 4]\n' +
        '                        [--converge-timeout 10m] [--no-restart] [--no-shared-suffix] [--fresh-foreign] [--keep] [--json FILE]\n',
    );
    return 0;
  }
  const services = intArg('services', values.services, DEFAULT_OPTIONS.services, 1);
  const report = await runChaos({
    services,
    seed: intArg('seed', values.seed, Math.floor(Math.random() * 1_000_000), 0),
    durationMs: durationArg('duration', values.duration, DEFAULT_OPTIONS.durationMs),
    kills: intArg('kills', values.kills, DEFAULT_OPTIONS.kills, 0),
    workers: intArg('workers', values.workers, DEFAULT_OPTIONS.workers, 1),
    changed: intArg('changed', values.changed, Math.ceil(services / 3), 0),
    convergeTimeoutMs: durationArg('converge-timeout', values['converge-timeout'], DEFAULT_OPTIONS.convergeTimeoutMs),
    serverRestart: !values['no-restart'],
    sharedSuffix: !values['no-shared-suffix'],
    freshForeign: values['fresh-foreign'] ?? false,
    keep: values.keep ?? false,
    progress: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(`${formatReport(report)}\n`);
  if (values.json) await writeFile(values.json, JSON.stringify(report, null, 2));
  return report.ok ? 0 : 1;
}

if (require.main === module) {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`chaos: ${signal}: stopping workers, the Temporal server and the simulator\n`);
      void (abortRun?.() ?? Promise.resolve()).finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    });
  }
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      process.stderr.write(`chaos: ${(err as Error).stack ?? String(err)}\n`);
      process.exitCode = 2;
    },
  );
}
