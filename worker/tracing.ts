/**
 * The worker's part of tracing (common/tracing.ts installs the provider): Temporal's OpenTelemetry interceptors for
 * activities and, inside the workflow sandbox, for workflows, the sink through which the sandbox hands its finished
 * spans to the worker's exporter, and the activity attempt put where the Engine request spans find it.
 *
 * Workflow spans come from the interceptor module bundled with the workflow code: a worker that bundles at start
 * adds it itself; a prebuilt bundle (LBAAS_WORKFLOW_BUNDLE) must have been built with WORKFLOW_TRACING_MODULES.
 */
import { context, trace } from '@opentelemetry/api';
import { makeWorkflowExporter, OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor } from '@temporalio/interceptors-opentelemetry';
import type { ActivityInboundCallsInterceptor, WorkerOptions } from '@temporalio/worker';
import type { Context as ActivityContext } from '@temporalio/activity';
import { ACTIVITY_ATTEMPT_KEY } from '../activities/engine/tracing';
import type { Tracing } from '../common/tracing';
import { rememberActivitySpan } from './logging';

/** The workflow interceptor modules of Temporal's OpenTelemetry package, for the bundler. */
export const WORKFLOW_TRACING_MODULES = [require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')];

/**
 * Runs inside Temporal's activity span: records the attempt on it, hands it on to the Engine request spans, and
 * tells the JSON logger (worker/logging.ts) which span the attempt's log lines belong to.
 */
class AttemptInterceptor implements ActivityInboundCallsInterceptor {
  constructor(private readonly ctx: ActivityContext) {}
  execute: ActivityInboundCallsInterceptor['execute'] = (input, next) => {
    const { attempt, activityId, workflowExecution } = this.ctx.info;
    const span = trace.getActiveSpan();
    if (span) {
      span.setAttribute('lbaas.activity.attempt', attempt);
      const { traceId, spanId } = span.spanContext();
      if (workflowExecution) rememberActivitySpan({ workflowId: workflowExecution.workflowId, runId: workflowExecution.runId, activityId, attempt }, { traceId, spanId });
    }
    return context.with(context.active().setValue(ACTIVITY_ATTEMPT_KEY, attempt), () => next(input));
  };
}

/** What Worker.create needs for traces; merged into the worker's options only when tracing is on. */
export function workerTracingOptions(tracing: Tracing, bundling: boolean): Pick<WorkerOptions, 'interceptors' | 'sinks'> {
  return {
    interceptors: {
      // The first interceptor is the outermost: Temporal's span is active when the attempt is recorded.
      activity: [
        (ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx), outbound: new OpenTelemetryActivityOutboundInterceptor(ctx) }),
        (ctx) => ({ inbound: new AttemptInterceptor(ctx) }),
      ],
      // Given with a prebuilt bundle the SDK would only warn that it ignores them.
      ...(bundling ? { workflowModules: WORKFLOW_TRACING_MODULES } : {}),
    },
    sinks: { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) },
  };
}
