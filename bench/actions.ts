/**
 * `node dist/bench/actions.js [--services 5]`: what a service costs in Temporal Cloud Actions, counted from the
 * histories of the product path (`lbaas apply` = update-with-start on the controller, its passes, their children), on
 * the core shape (2 ports, 2 addresses, 3 servers) on 2 load balancers. Counted per the Actions Temporal Cloud bills:
 * workflow starts (including children and continue-as-new), activity attempts, timers, search-attribute upserts after
 * start, signals, updates, local activities (markers). Queries and heartbeats leave no history event: a status query
 * is one Action per call; heartbeats are listed apart (the SDK sends at most one per 80 % of the heartbeat timeout).
 * Runs on a Temporal dev server (same server code as a cluster: the history of a workflow does not depend on it).
 */
import type { Client } from '@temporalio/client';
import { LbaasClient } from '../client/service-client';
import { validateSpec } from '../domain';
import { startDevServer } from '../dev/devserver';

import { startSimulator } from '../simulator';
import { startWorker } from '../worker/start';
import { coreSpec } from './workload';

type Counts = Record<string, number>;

/** Billable Actions in the histories of the task queue's workflows, by kind. */
async function countActions(client: Client, taskQueue: string): Promise<Counts> {
  const c: Counts = { workflowStarts: 0, activityAttempts: 0, timers: 0, upserts: 0, signals: 0, updates: 0, localActivities: 0, events: 0 };
  for await (const wf of client.workflow.list({ query: `TaskQueue = '${taskQueue}'` })) {
    const h = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
    for (const e of h.events ?? []) {
      c.events = (c.events ?? 0) + 1;
      if (e.workflowExecutionStartedEventAttributes) c.workflowStarts!++;
      // The started event carries the attempt that completed: every earlier attempt was started (and billed) too.
      else if (e.activityTaskStartedEventAttributes) c.activityAttempts! += Math.max(1, e.activityTaskStartedEventAttributes.attempt ?? 1);
      else if (e.timerStartedEventAttributes) c.timers!++;
      else if (e.upsertWorkflowSearchAttributesEventAttributes) c.upserts!++;
      else if (e.workflowExecutionSignaledEventAttributes) c.signals!++;
      else if (e.workflowExecutionUpdateAcceptedEventAttributes) c.updates!++;
      else if (e.markerRecordedEventAttributes) c.localActivities!++;
    }
  }
  return c;
}

const total = (c: Counts) => Object.entries(c).reduce((s, [k, v]) => (k === 'events' ? s : s + v), 0);
const minus = (a: Counts, b: Counts): Counts => Object.fromEntries(Object.keys(a).map((k) => [k, (a[k] ?? 0) - (b[k] ?? 0)]));

async function main(): Promise<void> {
  const i = process.argv.indexOf('--services');
  const n = i >= 0 ? Number(process.argv[i + 1]) : 5;
  if (!Number.isInteger(n) || n < 1) throw new Error(`--services: expected an integer >= 1, got ${process.argv[i + 1]}`);
  const server = await startDevServer({ progress: (l) => process.stderr.write(`${l}\n`) });
  const token = 'actions-bench-token';
  const sim = await startSimulator({ port: 0, token, seed: 7, deployMs: { min: 100, max: 300 } });
  const taskQueue = `actions-${Date.now().toString(36)}`;
  const worker = await startWorker({ temporal: { connection: { address: server.address }, namespace: server.namespace, taskQueue }, engine: { baseUrl: sim.url, token } });
  try {
    const { client } = worker;
    const lbaas = new LbaasClient(client, taskQueue);
    const lbs = ['a', 'b'].map((x, k) => sim.seedObject({ kind: 'loadbalancer', fields: { name: `actions-${x}`, ip_address: `198.51.100.${60 + k}` }, state: 'Deployed' }));
    const specs = Array.from({ length: n }, (_, k) => {
      const r = validateSpec(coreSpec(`actions-${Date.now().toString(36)}-${k}`, lbs));
      if (!r.ok) throw new Error(JSON.stringify(r.issues));
      return { raw: coreSpec(r.spec.serviceUid, lbs), spec: r.spec };
    });
    await Promise.all(
      specs.map(async (s) => {
        const { revision } = await lbaas.apply(s.raw, s.spec);
        const result = await lbaas.waitConverged(s.spec.serviceUid, revision);
        if (!result.converged) throw new Error(`${s.spec.serviceUid}: ${result.error ?? 'not converged'}`);
      }),
    );
    const afterApply = await countActions(client, taskQueue);
    // A resync pass with nothing to change: what the full-resync Schedule costs per service and round.
    await Promise.all(
      specs.map(async (s) => {
        const before = (await lbaas.status(s.spec.serviceUid)).lastPass?.pass ?? 0;
        await lbaas.resync(s.spec.serviceUid);
        for (;;) {
          const st = await lbaas.status(s.spec.serviceUid);
          if ((st.lastPass?.pass ?? 0) > before && !st.running) break;
          await new Promise((r) => setTimeout(r, 200));
        }
      }),
    );
    const afterResync = await countActions(client, taskQueue);
    const resync = minus(afterResync, afterApply);
    const per = (c: Counts) => Object.fromEntries(Object.entries(c).map(([k, v]) => [k, Number((v / n).toFixed(1))]));
    process.stdout.write(
      `${JSON.stringify({ services: n, shape: 'core (2 ports, 2 addresses, 3 servers) on 2 load balancers', applyFromEmpty: { perService: per(afterApply), actionsPerService: total(afterApply) / n }, noopResync: { perService: per(resync), actionsPerService: total(resync) / n } }, null, 2)}\n`,
    );
  } finally {
    await worker.stop();
    await sim.close();
    await server.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`actions: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
