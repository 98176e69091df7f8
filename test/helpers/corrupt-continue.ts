/**
 * A workflow interceptor for tests only (bundled by test/workflow/supersede-starting.test.ts, never by the worker):
 * a serviceController of a service whose uid starts with `unreadable-` continues as new with a field no build knows
 * added to its input, as a build that learnt a new snapshot field would hand it to one that did not.
 */
import { workflowInfo, type WorkflowInterceptorsFactory } from '@temporalio/workflow';

export const UNREADABLE_PREFIX = 'unreadable-';

export const interceptors: WorkflowInterceptorsFactory = () => ({
  outbound: [
    {
      async continueAsNew(input, next) {
        const info = workflowInfo();
        if (info.workflowType !== 'serviceController' || !info.workflowId.startsWith(`lbaas/${UNREADABLE_PREFIX}`)) return next(input);
        const [first, ...rest] = input.args as [Record<string, unknown>, ...unknown[]];
        return next({ ...input, args: [{ ...first, fromANewerBuild: true }, ...rest] });
      },
    },
  ],
});
