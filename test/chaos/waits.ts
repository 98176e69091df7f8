/**
 * Waiting on a chaos run's Temporal and simulator: retrying through a server restart, admin calls to the simulator,
 * a controller converging, every reconciliation ending, and the scan of every workflow history.
 */
import type { Client, Connection } from '@temporalio/client';
import type { LbaasClient } from '../../client/service-client';
import type { AdminObject, RunningSimulator } from '../../simulator';
import { containsText } from './invariants';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

/** Runs `fn` until it succeeds or `timeoutMs` passes (Temporal may be restarting). */
export async function retrying<T>(what: string, fn: () => Promise<T>, timeoutMs = 120_000): Promise<T> {
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

export async function adminJson(sim: RunningSimulator, method: string, route: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${sim.url}${route}`, {
    method,
    ...(body !== undefined ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${route}: ${res.status} ${text}`);
  return text === '' ? undefined : JSON.parse(text);
}

export const allObjects = async (sim: RunningSimulator) => ((await adminJson(sim, 'GET', '/_sim/objects')) as { objects: AdminObject[] }).objects;

/**
 * Waits for the controller to report a converged pass of `revision` (or newer), with nothing running: waitConverged in
 * bounded slices (each aborted when it runs out, so no call outlives the run), the status query in between. A failed
 * pass of that revision gets one resync (faults are off by now; the controller's own retry may be minutes away).
 * Returns null when converged, else why not.
 */
export async function convergeOne(connection: Connection, lbaas: LbaasClient, uid: string, revision: number, deadline: number, resynced: () => void): Promise<string | null> {
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
export async function quiesce(client: Client, timeoutMs: number): Promise<string[]> {
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
export async function scanHistories(client: Client, token: string, canary: string) {
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
