/**
 * OpenTelemetry tracing of the worker and the CLI, configured by the standard OTLP exporter variables (README,
 * "Observing lbaas"). Off unless OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is set: then
 * nothing of the OpenTelemetry SDK is loaded and no interceptor is installed, so a worker without a collector pays
 * nothing for it.
 *
 * On, it registers a global tracer provider (the Temporal interceptors find their tracer, the W3C propagator and the
 * AsyncLocalStorage context through the global API) with a batching OTLP/HTTP exporter, JSON or protobuf.
 */
import type * as OtelApi from '@opentelemetry/api';
import type { Tracer } from '@opentelemetry/api';
import type * as ContextAsyncHooks from '@opentelemetry/context-async-hooks';
import type * as OtlpHttp from '@opentelemetry/exporter-trace-otlp-http';
import type * as OtlpProto from '@opentelemetry/exporter-trace-otlp-proto';
import type * as Resources from '@opentelemetry/resources';
import type { Resource } from '@opentelemetry/resources';
import type * as TraceBase from '@opentelemetry/sdk-trace-base';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type * as TemporalOtel from '@temporalio/interceptors-opentelemetry';
import { invalid } from './errors';

export type OtlpProtocol = 'http/protobuf' | 'http/json';

export interface TracingSettings {
  /** Where spans are POSTed: the traces endpoint as given, or the generic endpoint with `/v1/traces` appended. */
  url: string;
  protocol: OtlpProtocol;
  serviceName: string;
}

/** The name under which lbaas's own spans (Engine requests) are created. */
export const TRACER_NAME = 'lbaas-orchestrator';

/**
 * Reads the tracing settings, or null when tracing is off. A protocol we cannot speak is `invalid`, naming the
 * variable, rather than a worker that silently exports nothing.
 */
export function tracingSettings(env: NodeJS.ProcessEnv, defaultServiceName: string): TracingSettings | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return null;
  const signal = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const generic = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!signal && !generic) return null;
  const variable = signal ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
  const url = signal || `${(generic as string).replace(/\/+$/, '')}/v1/traces`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid(`${variable}: not an absolute http(s) URL: "${signal || generic}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw invalid(`${variable}: not an http(s) URL: "${signal || generic}"`);
  const protocolVariable = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  // The OTLP specification's default for the SDKs is http/protobuf.
  const protocol = (env[protocolVariable]?.trim() || 'http/protobuf') as string;
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    throw invalid(`${protocolVariable}: "${protocol}" is not supported; use http/protobuf or http/json`);
  }
  return { url, protocol, serviceName: env.OTEL_SERVICE_NAME?.trim() || defaultServiceName };
}

export interface Tracing {
  settings: TracingSettings;
  tracer: Tracer;
  resource: Resource;
  /** The batching exporter; the worker hands it the workflow spans the sandbox sends out through its sink. */
  spanProcessor: SpanProcessor;
  /** Client interceptors that start a span per start/signal/update/query and carry its context in the headers. */
  clientInterceptors(): WorkflowClientInterceptor[];
  /** Exports what is still buffered and stops the provider. */
  shutdown(): Promise<void>;
}

let installed: Tracing | null = null;

/**
 * Installs the global tracer provider once per process (the worker's and the CLI's code may both ask); null when
 * tracing is off. The SDK is required here, not imported, so that a process with tracing off never loads it.
 */
export function installTracing(env: NodeJS.ProcessEnv, defaultServiceName: string): Tracing | null {
  if (installed) return installed;
  const settings = tracingSettings(env, defaultServiceName);
  if (!settings) return null;
  /* eslint-disable @typescript-eslint/no-require-imports */
  const api = require('@opentelemetry/api') as typeof OtelApi;
  const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks') as typeof ContextAsyncHooks;
  const { Resource: ResourceClass, envDetectorSync } = require('@opentelemetry/resources') as typeof Resources;
  const { BasicTracerProvider, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base') as typeof TraceBase;
  const { OpenTelemetryWorkflowClientInterceptor } = require('@temporalio/interceptors-opentelemetry') as typeof TemporalOtel;
  const exporter =
    settings.protocol === 'http/json'
      ? new (require('@opentelemetry/exporter-trace-otlp-http') as typeof OtlpHttp).OTLPTraceExporter({ url: settings.url })
      : new (require('@opentelemetry/exporter-trace-otlp-proto') as typeof OtlpProto).OTLPTraceExporter({ url: settings.url });
  /* eslint-enable @typescript-eslint/no-require-imports */
  // OTEL_RESOURCE_ATTRIBUTES first, then the service name (OTEL_SERVICE_NAME or the process's default).
  const resource = ResourceClass.default()
    .merge(envDetectorSync.detect())
    .merge(new ResourceClass({ 'service.name': settings.serviceName }));
  const spanProcessor = new BatchSpanProcessor(exporter);
  const provider = new BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
  // The default propagator (W3C trace context and baggage) is what the Temporal interceptors put in the headers.
  provider.register({ contextManager: new AsyncLocalStorageContextManager().enable() });
  const tracer = api.trace.getTracer(TRACER_NAME);
  installed = {
    settings,
    tracer,
    resource,
    spanProcessor,
    clientInterceptors: () => [new OpenTelemetryWorkflowClientInterceptor()],
    async shutdown() {
      await provider.shutdown().catch(() => undefined);
    },
  };
  return installed;
}

/** The tracing installed in this process, if any. */
export function currentTracing(): Tracing | null {
  return installed;
}
