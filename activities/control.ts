/**
 * Activities that read Temporal itself (visibility) and signal controllers, for fullResync. Built around a Temporal client that the worker
 * owns; they never see the Engine token.
 */
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { resyncSignal, runningControllersQuery, SCHEMA_VERSION, VISIBILITY_PAGE_SIZE, searchAttributes, poolWakeSignal, workflowIds, workflowTypes } from '../contract';
import { withHeartbeat } from './heartbeat';
import { mapLimit } from './state';

export interface ControllerRef {
  serviceUid: string;
  workflowId: string;
}

/**
 * Signals in flight at once when fullResync asks every controller: enough to signal 1000 controllers in seconds on a
 * loaded dev server, few enough not to queue hundreds of RPCs on one client connection.
 */
export const SIGNAL_CONCURRENCY = 32;
export function createControlActivities(client: Client) {
  return {
    /**
     * Lists the controllers and signals each to resync, from the activity rather than from fullResync itself: a signal
     * sent by a workflow costs it two history events, so a fleet of 25,000 controllers would outgrow a workflow
     * history (51,200 events); from here it costs none. The count reached is heartbeated, so a retried attempt
     * resumes where the last one stopped instead of signalling every controller again. Every running server pool is
     * then sent `wake`: a controller's resync reaches only the pool it subscribes to, and an entity on a build that is
     * no longer current moves to the current one when woken (docs/architecture.md, "Versions and patches").
     */
    async signalControllers(): Promise<{ signalled: string[]; missed: string[] }> {
      return withHeartbeat<number, { signalled: string[]; missed: string[] }>(async (hb) => {
        const controllers = await runningControllers(client, Context.current().info.taskQueue);
        const from = Math.min(hb.previous ?? 0, controllers.length);
        const signalled: string[] = controllers.slice(0, from).map((c) => c.serviceUid);
        const missed: string[] = [];
        let done = from;
        await mapLimit(controllers.slice(from), SIGNAL_CONCURRENCY, async (c) => {
          try {
            await client.workflow.getHandle(c.workflowId).signal(resyncSignal);
            signalled.push(c.serviceUid);
          } catch {
            // Ended between listing and signalling: reported, as the workflow's own signals were.
            missed.push(c.serviceUid);
          }
          if (++done % SIGNAL_CONCURRENCY === 0) hb.record(done);
        });
        hb.record(done);
        await wakePools(client, Context.current().info.taskQueue);
        return { signalled: signalled.sort(), missed: missed.sort() };
      });
    },
    /** Whether the service has a running controller, read directly (not from eventually consistent visibility). */
    async controllerRunning(input: { serviceUid: string }): Promise<boolean> {
      return withHeartbeat(async () => {
        try {
          return (await client.workflow.getHandle(workflowIds.controller(input.serviceUid)).describe()).status.name === 'RUNNING';
        } catch (err) {
          if ((err as Error).name === 'WorkflowNotFoundError') return false;
          throw err;
        }
      });
    },
  };
}

async function runningControllers(client: Client, taskQueue: string): Promise<ControllerRef[]> {
  const out: ControllerRef[] = [];
  for await (const wf of client.workflow.list({ query: runningControllersQuery(taskQueue), pageSize: VISIBILITY_PAGE_SIZE })) {
    out.push({ serviceUid: wf.typedSearchAttributes.get(searchAttributes.serviceUid) ?? workflowIds.serviceOf(wf.workflowId) ?? wf.workflowId, workflowId: wf.workflowId });
  }
  return out.sort((a, b) => a.serviceUid.localeCompare(b.serviceUid));
}

/** Sends `wake` to every running pool of the task queue (a pool that ended meanwhile is skipped). */
async function wakePools(client: Client, taskQueue: string): Promise<void> {
  const ids: string[] = [];
  const query = `WorkflowType = '${workflowTypes.serverPool}' AND ExecutionStatus = 'Running' AND TaskQueue = '${taskQueue.replace(/'/g, "\\'")}'`;
  for await (const wf of client.workflow.list({ query, pageSize: VISIBILITY_PAGE_SIZE })) ids.push(wf.workflowId);
  await mapLimit(ids, SIGNAL_CONCURRENCY, async (id) => {
    await client.workflow
      .getHandle(id)
      .signal(poolWakeSignal, { v: SCHEMA_VERSION })
      .catch(() => undefined);
  });
}

export type ControlActivities = ReturnType<typeof createControlActivities>;
