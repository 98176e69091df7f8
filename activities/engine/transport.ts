/**
 * The request path every EngineClient call shares (client.ts): URL and headers, the pacer's turn, the deadline,
 * reading the answer, mapping a non-2xx status to its error class and checking a body against its schema. It knows
 * no endpoint; client.ts holds the typed LBaaS and Core calls on top of it.
 */
import { performance } from 'node:perf_hooks';
import type { Tracer } from '@opentelemetry/api';
import { Agent, request, type Dispatcher } from 'undici';
import type { z } from 'zod';
import {
  type EngineError,
  type Redact,
  errorFromResponse,
  networkError,
  protocolError,
  redactor,
  retryAfterHeaderMs,
  timeoutError,
  type ResponseHeaders,
} from './errors';
import { RequestPacer, type PacingOptions } from './pacing';
import type * as RequestSpans from './tracing';

/**
 * Per request, headers and body. The Engine answers LBaaS calls in well under a second and writes within a few
 * seconds even when busy; 30 s leaves room for a slow Engine while a hung connection still fails inside one
 * activity attempt (start-to-close timeouts of about a minute), as a retryable error Temporal can act on.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/**
 * Keep-alive connections per origin. One worker runs many activities at once (several load balancers, each pass
 * issuing parallel GETs); 32 keeps them from queueing behind each other without flooding the Engine.
 */
export const DEFAULT_CONNECTIONS = 32;

/** One finished HTTP request, for `lbaas_http_client_requests_total{resource,method,status}`. */
export interface EngineResponseEvent {
  /** The LBaaS kind, `resource` for Core resource reads, `tag` for tagging. */
  resource: string;
  method: string;
  /** HTTP status, or 'error' when no complete response arrived (network error, timeout). */
  status: number | 'error';
  durationMs: number;
}

export interface EngineClientOptions {
  /** E.g. `https://engine.anexia-it.com`; a base path prefix (`http://proxy/engine`) is kept. */
  baseUrl: string;
  token: string;
  /** Default `DEFAULT_REQUEST_TIMEOUT_MS`. */
  requestTimeoutMs?: number;
  /** Keep-alive pool size per origin; default `DEFAULT_CONNECTIONS`. Ignored when `dispatcher` is given. */
  connections?: number;
  /** Replaces the client's own connection pool (tests pass a MockAgent). `close()` leaves it open. */
  dispatcher?: Dispatcher;
  /** Called once per HTTP request; exceptions it throws are ignored. */
  onResponse?: (event: EngineResponseEvent) => void;
  /**
   * The request budget and 429 backoff (pacing.ts): options for the client's own pacer, or a pacer to share with
   * other clients of the same token. Default: no bucket until the first 429, the backoff always.
   */
  pacing?: PacingOptions | RequestPacer;
  /** One span per request (tracing.ts) when given; none, and no tracing code on the request path, without. */
  tracer?: Tracer;
}

interface ResolvedOptions {
  origin: string;
  prefix: string;
  token: string;
  requestTimeoutMs: number;
  connections: number;
}

/** Validates the options and fills in defaults. Messages never contain the token. */
export function resolveEngineClientOptions(options: EngineClientOptions): ResolvedOptions {
  let url: URL;
  try {
    url = new URL(options.baseUrl);
  } catch {
    throw new TypeError(`baseUrl must be an absolute http(s) URL, got ${JSON.stringify(options.baseUrl)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`baseUrl must be an absolute http(s) URL, got ${JSON.stringify(options.baseUrl)}`);
  }
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    throw new TypeError('baseUrl must not carry credentials, a query or a fragment');
  }
  if (typeof options.token !== 'string' || options.token === '' || /[\r\n]/.test(options.token)) {
    throw new TypeError('token must be a non-empty single-line string');
  }
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  if (!Number.isInteger(requestTimeoutMs) || requestTimeoutMs <= 0) {
    throw new TypeError(`requestTimeoutMs must be a positive integer, got ${requestTimeoutMs}`);
  }
  const connections = options.connections ?? DEFAULT_CONNECTIONS;
  if (!Number.isInteger(connections) || connections <= 0) {
    throw new TypeError(`connections must be a positive integer, got ${connections}`);
  }
  return {
    origin: url.origin,
    prefix: url.pathname.replace(/\/+$/, ''),
    token: options.token,
    requestTimeoutMs,
    connections,
  };
}

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface Call {
  resource: string;
  method: Method;
  path: string;
  query?: URLSearchParams;
  body?: string;
}

export interface RawResponse {
  method: Method;
  /** As sent: base prefix, path, query. */
  path: string;
  status: number;
  headers: ResponseHeaders;
  body: string;
  /** For a 429: how long the shared backoff says to wait before trying again. */
  retryDelayMs?: number;
}

function isJson(headers: ResponseHeaders): boolean {
  const raw = headers['content-type'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value?.split(';')[0]?.trim().toLowerCase() === 'application/json';
}

function describeIssues(error: z.ZodError): string {
  const shown = error.issues.slice(0, 3).map((issue) => {
    const at = issue.path.length > 0 ? issue.path.map(String).join('.') : '(root)';
    return `${at}: ${issue.message}`;
  });
  const more = error.issues.length > shown.length ? `; and ${error.issues.length - shown.length} more` : '';
  return shown.join('; ') + more;
}

/** One client's connection pool, pacer and deadline, and the steps from a `Call` to a checked, parsed answer. */
export class EngineTransport {
  readonly #origin: string;
  readonly #prefix: string;
  readonly #authorization: string;
  readonly #timeoutMs: number;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #onResponse: ((event: EngineResponseEvent) => void) | undefined;
  readonly #redact: Redact;
  readonly #pacer: RequestPacer;
  readonly #tracer: Tracer | undefined;
  /** tracing.ts, required only for a client with a tracer: without one nothing of OpenTelemetry is loaded. */
  readonly #spans: typeof RequestSpans | undefined;
  #closed = false;

  constructor(options: EngineClientOptions) {
    const resolved = resolveEngineClientOptions(options);
    this.#origin = resolved.origin;
    this.#prefix = resolved.prefix;
    this.#authorization = `Token ${resolved.token}`;
    this.#timeoutMs = resolved.requestTimeoutMs;
    this.#ownsDispatcher = options.dispatcher === undefined;
    this.#dispatcher = options.dispatcher ?? new Agent({ connections: resolved.connections });
    this.#onResponse = options.onResponse;
    this.#redact = redactor([resolved.token]);
    this.#pacer = options.pacing instanceof RequestPacer ? options.pacing : new RequestPacer(options.pacing);
    this.#tracer = options.tracer;
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    this.#spans = options.tracer ? (require('./tracing') as typeof RequestSpans) : undefined;
  }

  get pacer(): RequestPacer {
    return this.#pacer;
  }

  /** Closes the own connection pool (not a dispatcher passed in). Later requests are rejected. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  async ok(call: Call): Promise<RawResponse> {
    return this.check(await this.send(call));
  }

  /** Non-2xx responses become their error class here; nothing else in the client maps statuses. */
  check(raw: RawResponse): RawResponse {
    if (raw.status >= 200 && raw.status < 300) return raw;
    throw errorFromResponse(raw, this.#redact);
  }

  /** The protocol error for `raw`, its text redacted. */
  protocolError(raw: RawResponse, problem: string): EngineError {
    return protocolError(raw.method, raw.path, raw.status, problem, this.#redact);
  }

  parse<T>(raw: RawResponse, schema: z.ZodType<T>, what: string): T {
    const fail = (problem: string): EngineError => this.protocolError(raw, problem);
    if (!isJson(raw.headers)) {
      const type = raw.headers['content-type'];
      throw fail(`response is not JSON (content-type ${type === undefined ? 'missing' : String(type)})`);
    }
    let value: unknown;
    try {
      value = JSON.parse(raw.body);
    } catch {
      throw fail(raw.body === '' ? 'response body is empty' : 'response body is not valid JSON');
    }
    const result = schema.safeParse(value);
    if (!result.success) throw fail(`response does not match the ${what} schema: ${describeIssues(result.error)}`);
    return result.data;
  }

  /** One HTTP exchange under the request deadline; reports it to `onResponse`. Throws only network errors. */
  async send(call: Call): Promise<RawResponse> {
    if (this.#tracer === undefined || this.#spans === undefined) return this.#send(call);
    const { startRequestSpan, endRequestSpan } = this.#spans;
    const span = startRequestSpan(this.#tracer, { method: call.method, route: routeOf(call.path), resource: call.resource, origin: new URL(this.#origin) });
    const started = performance.now();
    const timing = { waitedMs: 0 };
    try {
      const raw = await this.#send(call, timing);
      endRequestSpan(span, { waitedMs: timing.waitedMs, status: raw.status, retryDelayMs: raw.retryDelayMs });
      return raw;
    } catch (err) {
      // Before the pacer's turn came nothing was sent: all of the time was waiting.
      const waitedMs = timing.waitedMs || performance.now() - started;
      endRequestSpan(span, { waitedMs, status: 'error', error: err as Error });
      throw err;
    }
  }

  async #send(call: Call, timing?: { waitedMs: number }): Promise<RawResponse> {
    if (this.#closed) throw new Error('EngineClient is closed');
    const query = call.query?.toString() ?? '';
    const path = `${this.#prefix}${call.path}${query === '' ? '' : `?${query}`}`;
    const headers: Record<string, string> = {
      authorization: this.#authorization,
      accept: 'application/json',
      'user-agent': 'lbaas-orchestrator',
    };
    if (call.body !== undefined) headers['content-type'] = 'application/json';

    const queued = performance.now();
    const epoch = await this.#pacer.acquire();
    const started = performance.now();
    if (timing) timing.waitedMs = started - queued;
    if (this.#closed) throw new Error('EngineClient is closed');
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.#timeoutMs);
    let status: number | 'error' = 'error';
    try {
      const res = await request(`${this.#origin}${path}`, {
        method: call.method,
        headers,
        body: call.body ?? null,
        dispatcher: this.#dispatcher,
        signal: controller.signal,
      });
      const body = await res.body.text();
      status = res.statusCode;
      const raw: RawResponse = { method: call.method, path, status: res.statusCode, headers: res.headers, body };
      if (status === 429) raw.retryDelayMs = this.#pacer.settle(epoch, 429, retryAfterHeaderMs(res.headers['retry-after']));
      return raw;
    } catch (err) {
      if (controller.signal.aborted) throw timeoutError(call.method, path, this.#timeoutMs);
      throw networkError(call.method, path, err, this.#redact);
    } finally {
      clearTimeout(timer);
      if (status !== 429) this.#pacer.settle(epoch, status);
      this.#report({ resource: call.resource, method: call.method, status, durationMs: performance.now() - started });
    }
  }

  #report(event: EngineResponseEvent): void {
    if (this.#onResponse === undefined) return;
    try {
      this.#onResponse(event);
    } catch {
      // Metrics must never fail an Engine call.
    }
  }
}

/**
 * The route pattern of a request path, for spans: the segments after the `<kind>.json` collection are the object's
 * identifier and, for Core tag calls, `tags` and the tag name. Identifiers and tags never reach a span.
 */
export function routeOf(path: string): string {
  const segments = path.split('/');
  const collection = segments.findIndex((s) => s.endsWith('.json'));
  if (collection < 0) return path;
  return segments
    .map((s, i) => {
      if (i <= collection || s === 'tags') return s;
      const previous = segments[i - 1] as string;
      return previous.endsWith('.json') ? '{identifier}' : previous === 'tags' ? '{tag}' : '{segment}';
    })
    .join('/');
}
