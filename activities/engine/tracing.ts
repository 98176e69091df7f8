/**
 * One OpenTelemetry span per Engine HTTP request, a child of whatever span is active when the request is sent (the
 * activity's, under the worker's Temporal interceptors). Only used when the client was given a tracer: without
 * one transport.ts never comes here.
 *
 * What a span carries: the method, the route pattern (`/api/LBaaS/v1/server.json/{identifier}`, never the path
 * with its identifiers, tags or query, and never the Authorization header), the server, the status, how long the
 * request waited for its turn in the pacer (where the backoff after a 429 is spent), the Retry-After the Engine
 * gave on a 429 and the attempt of the activity that sent it. Errors are recorded with their redacted messages.
 */
import { context, createContextKey, SpanKind, SpanStatusCode, type Span, type Tracer } from '@opentelemetry/api';

/** Set by the worker's activity interceptor (worker/tracing.ts): the activity's attempt, 1 for the first. */
export const ACTIVITY_ATTEMPT_KEY = createContextKey('lbaas.activity.attempt');

export interface RequestSpanStart {
  method: string;
  route: string;
  resource: string;
  origin: URL;
}

export function startRequestSpan(tracer: Tracer, r: RequestSpanStart): Span {
  const attempt = context.active().getValue(ACTIVITY_ATTEMPT_KEY);
  const port = r.origin.port === '' ? (r.origin.protocol === 'https:' ? 443 : 80) : Number(r.origin.port);
  return tracer.startSpan(`${r.method} ${r.route}`, {
    kind: SpanKind.CLIENT,
    attributes: {
      'http.request.method': r.method,
      'http.route': r.route,
      'server.address': r.origin.hostname,
      'server.port': port,
      'url.scheme': r.origin.protocol.replace(/:$/, ''),
      'lbaas.engine.resource': r.resource,
      ...(typeof attempt === 'number' ? { 'lbaas.activity.attempt': attempt } : {}),
    },
  });
}

export interface RequestSpanEnd {
  /** Time spent waiting for the pacer's turn (budget and 429 backoff), ms. */
  waitedMs: number;
  status: number | 'error';
  /** For a 429: the shared backoff the caller is told to wait. */
  retryDelayMs?: number | undefined;
  /** Already redacted. */
  error?: Error | undefined;
}

export function endRequestSpan(span: Span, e: RequestSpanEnd): void {
  span.setAttribute('lbaas.engine.pacer_wait_ms', Math.round(e.waitedMs));
  if (typeof e.status === 'number') span.setAttribute('http.response.status_code', e.status);
  if (e.retryDelayMs !== undefined) span.setAttribute('lbaas.engine.retry_after_ms', Math.round(e.retryDelayMs));
  if (e.error) {
    span.setAttribute('error.type', e.error.name);
    span.setStatus({ code: SpanStatusCode.ERROR, message: e.error.message });
  } else if (typeof e.status === 'number' && e.status >= 400) {
    // OpenTelemetry's HTTP client convention: a 4xx/5xx answer is an error of the client span.
    span.setAttribute('error.type', String(e.status));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}
