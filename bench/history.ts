/** Workflow history sizes of a reconcileService run and of the reconcileLoadBalancer children it started. */
import type { Client, WorkflowHandle } from '@temporalio/client';

export interface ChildRun {
  loadBalancer: string;
  workflowId: string;
  runId: string;
  /** History events of this run. */
  events: number;
  /** When the child closed (epoch ms). */
  closedAt: number;
}

export interface ServiceRunHistory {
  /** History events of the reconcileService run itself. */
  events: number;
  children: ChildRun[];
}

export async function serviceRunHistory(client: Client, parent: WorkflowHandle): Promise<ServiceRunHistory> {
  const history = await parent.fetchHistory();
  const events = history.events ?? [];
  const started = events.flatMap((e) => {
    const x = e.childWorkflowExecutionStartedEventAttributes?.workflowExecution;
    return x?.workflowId && x.runId ? [{ workflowId: x.workflowId, runId: x.runId }] : [];
  });
  const children = await Promise.all(
    started.map(async ({ workflowId, runId }) => {
      const handle = client.workflow.getHandle(workflowId, runId);
      const [h, d] = await Promise.all([handle.fetchHistory(), handle.describe()]);
      return {
        loadBalancer: workflowId.slice(workflowId.lastIndexOf('/lb/') + 4),
        workflowId,
        runId,
        events: h.events?.length ?? 0,
        closedAt: d.closeTime?.getTime() ?? NaN,
      };
    }),
  );
  return { events: events.length, children };
}
