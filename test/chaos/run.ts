/**
 * (Longer than 300 lines: runChaos is one scripted scenario whose steps (faults, worker kills, the server restart,
 * convergence, invariants) share its state; its helpers already live in options.ts, waits.ts, report.ts and
 * invariants.ts.)
 *
 * The chaos run (`npm run chaos`): services applied through LbaasClient while the Engine simulator injects faults,
 * worker processes are SIGKILLed at seeded moments and started again, and the Temporal dev server is stopped and
 * started again once on the same SQLite file and port. Then, faults off, every controller's latest revision must
 * converge, and the invariants of invariants.ts must hold over the Engine's objects, every workflow history and
 * every log. Prints what was injected and each invariant held/broken; exits non-zero when one broke.
 *
 * `npm run chaos` (cli.ts) runs it on the ideal simulator profile and again on the realistic one (the real Engine's
 * manners on top of the faults); test/chaos/chaos.test.ts and chaos-realistic.test.ts run reduced versions inside the
 * test suite.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { drawPort } from '../../common/ports';
import { startDevServer, type DevServer } from '../../dev/devserver';
import { LbaasClient } from '../../client/service-client';
import { ensureTemporalServer } from '../../dev/temporal-server';
import { startSimulator } from '../../simulator';
import { Prng } from '../../simulator/prng';
import { everyCreatedObjectTagged, exactlyDesired, foreignUntouched, noDuplicates, type Invariant } from './invariants';
import { DEFAULT_OPTIONS, type ChaosOptions, type ChaosReport, type FaultRates, type Injected } from './options';
import { adminJson, allObjects, convergeOne, quiesce, retrying, scanHistories, sleep } from './waits';

export { DEFAULT_OPTIONS, type ChaosOptions, type ChaosReport } from './options';
// The cluster chaos suite (test/cluster/run.ts) waits on controllers the same way.
export { convergeOne, quiesce } from './waits';
export { formatReport } from './report';
import { changedSpec, seedForeign, serviceSpec, validated, type ChaosService } from './specs';
import { WorkerPool } from './workers';

/** Stops whatever a run in progress has started; set while a run is in progress (for SIGINT/SIGTERM). */
let abortRun: (() => Promise<void>) | null = null;

/** Stops a run in progress (workers, Temporal, simulator), for a signal handler. */
export function abortChaos(): Promise<void> {
  return abortRun?.() ?? Promise.resolve();
}

export async function runChaos(input: Partial<ChaosOptions> = {}): Promise<ChaosReport> {
  const o: ChaosOptions = { ...DEFAULT_OPTIONS, ...input, rates: { ...DEFAULT_OPTIONS.rates, ...input.rates } };
  if (o.temporal && o.serverRestart) throw new Error('chaos: serverRestart stops and starts a Temporal server of the run\'s own; it cannot be combined with temporal (a server that already runs)');
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
    engineThrottled: 0,
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
    profile: o.profile,
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
    const manners = o.profile === 'realistic' ? { rateLimit: { ...o.rateLimit, retryAfter: false } } : {};
    const faults = (rates: FaultRates) => adminJson(sim, 'PUT', '/_sim/faults', { seed: o.seed, deployMs: o.deployMs, rates, ...manners });
    await faults(o.rates);

    // --- Temporal, workers --------------------------------------------------------------------------------------
    const dbFile = path.join(workDir, 'temporal.db');
    // The Temporal server's own log, checked for the token with the others; none when the server is not the run's.
    const serverLog = o.temporal ? null : path.join(workDir, 'temporal-server.log');
    const serverPath = o.temporal ? undefined : (o.serverPath ?? (await ensureTemporalServer({ which: ['server'], progress: (l) => say(l) })).server);
    const port = o.temporal ? undefined : await drawPort(new Set());
    const startServer = () => startDevServer({ serverPath, port, dbFile, logFile: serverLog ?? undefined, startTimeoutMs: 120_000 });
    let temporal: { address: string; namespace: string };
    if (o.temporal) {
      temporal = o.temporal;
      say(`Temporal server ${temporal.address} (not the run's own), namespace ${temporal.namespace}`);
    } else {
      server = await startServer();
      temporal = { address: server.address, namespace: server.namespace };
      say(`Temporal dev server ${server.address} (SQLite ${dbFile})`);
    }
    connection = await Connection.connect({ address: temporal.address });
    const client = new Client({ connection, namespace: temporal.namespace });
    const taskQueue = `chaos-${o.seed}`;
    const lbaas = new LbaasClient(client, taskQueue);
    const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_') && !k.startsWith('LBAAS_') && k !== 'ANEXIA_TOKEN'));
    Object.assign(env, {
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: temporal.namespace,
      LBAAS_TASK_QUEUE: taskQueue,
      ANEXIA_ENGINE_URL: sim.url,
      ANEXIA_TOKEN: token,
      // Tasks reach only the Current Version: the workers make their build current (worker/versioning.ts).
      LBAAS_SET_CURRENT_VERSION: 'true',
      ...(o.workflowBundle ? { LBAAS_WORKFLOW_BUNDLE: o.workflowBundle } : {}),
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

    const stats = (await adminJson(sim, 'GET', '/_sim/stats')) as { total: number; throttled: number };
    injected.engineRequests = stats.total;
    injected.engineThrottled = stats.throttled;
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
    await server?.stop();
    await new Promise<void>((r) => simLog.end(() => r()));
    const logs = [...pool.logFiles, ...(serverLog ? [serverLog] : []), simLogFile];
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
      detail: logProblems.length ? logProblems : [`${logs.length} logs, ${(logBytes / 1024).toFixed(0)} KiB (workers, ${serverLog ? 'Temporal server, ' : ''}simulator)`],
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
