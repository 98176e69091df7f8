/**
 * A workflow interceptor for tests only (bundled by test/workflow/supersede-starting.test.ts, never by the worker):
 * before a serviceController starts a child, it calls the `childStart` sink. The worker awaits a workflow task's sink
 * calls before it completes the task, so a test whose sink waits holds the task that carries the start command: an
 * update sent meanwhile lands in the next task, before the server has recorded the child's start.
 */
import { proxySinks, workflowInfo, type Sinks, type WorkflowInterceptorsFactory } from '@temporalio/workflow';

export interface HoldSinks extends Sinks {
  childStart: { starting(childWorkflowId: string): void };
}

const { childStart } = proxySinks<HoldSinks>();

export const interceptors: WorkflowInterceptorsFactory = () => ({
  outbound: [
    {
      async startChildWorkflowExecution(input, next) {
        if (workflowInfo().workflowType === 'serviceController') childStart.starting(input.options.workflowId ?? '');
        return next(input);
      },
    },
  ],
});
