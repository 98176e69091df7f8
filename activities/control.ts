/**
 * Activities that read Temporal itself (visibility), for fullResync. Built around a Temporal client that the worker
 * owns; they never see the Engine token.
 */
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { runningControllersQuery, searchAttributes, workflowIds } from '../workflows/options';
import { withHeartbeat } from './heartbeat';

export interface ControllerRef {
  serviceUid: string;
  workflowId: string;
}

export function createControlActivities(client: Client) {
  return {
    /** Every running serviceController (visibility is eventually consistent: a controller started seconds ago may be missing). */
    /** Controllers of this deployment: those on the task queue this activity runs on (a namespace may hold others). */
    async listControllers(): Promise<ControllerRef[]> {
      return withHeartbeat(() => runningControllers(client, Context.current().info.taskQueue));
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
  for await (const wf of client.workflow.list({ query: runningControllersQuery(taskQueue) })) {
    out.push({ serviceUid: wf.typedSearchAttributes.get(searchAttributes.serviceUid) ?? wf.workflowId.replace(/^lbaas\//, ''), workflowId: wf.workflowId });
  }
  return out.sort((a, b) => a.serviceUid.localeCompare(b.serviceUid));
}

export type ControlActivities = ReturnType<typeof createControlActivities>;
