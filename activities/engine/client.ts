/**
 * (Longer than 300 lines: one class whose private helpers are the request path every call shares.)
 *
 * The typed HTTP client of the Anexia Engine's LBaaS v1 and Core v1 API (docs/engine-api.md), on undici.
 *
 * Rules every call follows:
 * - One request per call (one per page for lists), no retries: Temporal owns retries (docs/architecture.md#retries). Every
 *   failure is an `EngineError` subclass from `errors.ts` that says whether it is retryable.
 * - Every request first waits for its turn in the client's `RequestPacer` (pacing.ts): the worker's Engine request
 *   budget and the backoff after a 429, shared by everything the client sends. A 429 still fails its call; the
 *   error's `retryAfterMs` is the shared backoff, which is when the caller should try again.
 * - Every request, headers and body together, ends within `requestTimeoutMs`.
 * - The token is sent only in the Authorization header; it is never part of a URL, message or error property.
 * - A 404 on `delete`/`untag` is thrown like any other 404: whether "already gone" counts as success is the
 *   caller's rule (the activities treat it so).
 */
import { performance } from 'node:perf_hooks';
import { Agent, request, type Dispatcher } from 'undici';
import type { z } from 'zod';
import {
  type EngineError,
  EngineProtocolError,
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
import {
  type EngineCreateBodyMap,
  type EngineObjectMap,
  type EnginePage,
  type EngineRef,
  type EngineResource,
  type EngineUpdateBodyMap,
  LBAAS_KINDS,
  type LbaasKind,
  coreResourceSchema,
  lbaasListSchema,
  objectSchemas,
  pageSchema,
} from './schemas';

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
/**
 * Items per list page: the Engine's maximum (docs/engine-api.md#lists-and-paging), so lists take the fewest round
 * trips.
 */
export const DEFAULT_PAGE_LIMIT = 100;
export const MAX_PAGE_LIMIT = 100;
/**
 * The most pages one list may take (100 000 objects at the default limit, far more than an account holds). A
 * server whose pages never run empty and whose total_pages keeps growing fails the list instead of looping.
 */
export const MAX_PAGES = 1000;

export const DEFAULT_BASE_URL = 'https://engine.anexia-it.com';

const LBAAS_PREFIX = '/api/LBaaS/v1';
const CORE_RESOURCES = '/api/core/v1/resource.json';

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
}

export interface ListOptions {
  /** Engine list filters (docs/engine-api.md#collections), e.g. `{ load_balancer: id }`. */
  filters?: Readonly<Record<string, string>>;
  /** Page size, 1..100; default `DEFAULT_PAGE_LIMIT`. */
  limit?: number;
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

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

interface Call {
  resource: string;
  method: Method;
  path: string;
  query?: URLSearchParams;
  body?: string;
}

interface RawResponse {
  method: Method;
  /** As sent: base prefix, path, query. */
  path: string;
  status: number;
  headers: ResponseHeaders;
  body: string;
  /** For a 429: how long the shared backoff says to wait before trying again. */
  retryDelayMs?: number;
}

function assertKind(kind: string): asserts kind is LbaasKind {
  if (!(LBAAS_KINDS as readonly string[]).includes(kind)) {
    throw new TypeError(`unknown LBaaS kind ${JSON.stringify(kind)}; expected one of ${LBAAS_KINDS.join(', ')}`);
  }
}

function idSegment(id: string): string {
  if (typeof id !== 'string' || id === '') throw new TypeError('identifier must be a non-empty string');
  return encodeURIComponent(id);
}

/**
 * Tags go into the path literally, `=` unescaped (docs/engine-api.md#core-resources-and-tags); anything that would
 * break the path is escaped.
 */
function tagSegment(tag: string): string {
  if (typeof tag !== 'string' || tag === '') throw new TypeError('tag must be a non-empty string');
  return encodeURIComponent(tag).replace(/%3D/gi, '=');
}

function pageLimit(limit: number | undefined): number {
  const value = limit ?? DEFAULT_PAGE_LIMIT;
  if (!Number.isInteger(value) || value < 1 || value > MAX_PAGE_LIMIT) {
    throw new TypeError(`limit must be an integer from 1 to ${MAX_PAGE_LIMIT}, got ${value}`);
  }
  return value;
}

function isJson(headers: ResponseHeaders): boolean {
  const raw = headers['content-type'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value?.split(';')[0]?.trim().toLowerCase() === 'application/json';
}

/** The `identifier` of a JSON object body, when it has a usable one. */
function identifierIn(body: string): string | undefined {
  try {
    const value: unknown = JSON.parse(body);
    const id = typeof value === 'object' && value !== null ? (value as Record<string, unknown>).identifier : undefined;
    return typeof id === 'string' && /^[0-9a-zA-Z-]{1,64}$/.test(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

function describeIssues(error: z.ZodError): string {
  const shown = error.issues.slice(0, 3).map((issue) => {
    const at = issue.path.length > 0 ? issue.path.map(String).join('.') : '(root)';
    return `${at}: ${issue.message}`;
  });
  const more = error.issues.length > shown.length ? `; and ${error.issues.length - shown.length} more` : '';
  return shown.join('; ') + more;
}

export class EngineClient {
  readonly #origin: string;
  readonly #prefix: string;
  readonly #authorization: string;
  readonly #timeoutMs: number;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #onResponse: ((event: EngineResponseEvent) => void) | undefined;
  readonly #redact: Redact;
  readonly #pacer: RequestPacer;
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
  }

  /** The request budget and backoff every request of this client goes through. */
  get pacer(): RequestPacer {
    return this.#pacer;
  }

  /** GET one LBaaS object. 404: `EngineNotFoundError`. */
  async get<K extends LbaasKind>(kind: K, id: string): Promise<EngineObjectMap[K]> {
    assertKind(kind);
    const raw = await this.#ok({ resource: kind, method: 'GET', path: `${LBAAS_PREFIX}/${kind}.json/${idSegment(id)}` });
    return this.#parse(raw, objectSchemas[kind] as z.ZodType<EngineObjectMap[K]>, kind);
  }

  /**
   * Whether the object still exists: true while GET answers 2xx (its body is not validated: an object being
   * deprovisioned exists whatever it looks like), false once it answers 404. Other failures throw.
   */
  async exists(kind: LbaasKind, id: string): Promise<boolean> {
    assertKind(kind);
    const raw = await this.#send({ resource: kind, method: 'GET', path: `${LBAAS_PREFIX}/${kind}.json/${idSegment(id)}` });
    if (raw.status === 404) return false;
    this.#check(raw);
    return true;
  }

  /**
   * Every `{identifier, name}` of a kind, over all pages, in the Engine's order, each identifier once (objects
   * created while paging can shift an item onto the next page).
   */
  async list(kind: LbaasKind, options: ListOptions = {}): Promise<EngineRef[]> {
    assertKind(kind);
    const query: Record<string, string> = {};
    const filters = new URLSearchParams(options.filters ?? {}).toString();
    if (filters !== '') query.filters = filters;
    return this.#collect(kind, `${LBAAS_PREFIX}/${kind}.json`, query, pageLimit(options.limit), false, (raw) => {
      return this.#parse(raw, lbaasListSchema, `${kind} list`).data;
    });
  }

  /** POST a new object; resolves to it as the Engine answered (state NewlyCreated). */
  async create<K extends LbaasKind>(kind: K, body: EngineCreateBodyMap[K]): Promise<EngineObjectMap[K]> {
    assertKind(kind);
    const raw = await this.#ok({
      resource: kind,
      method: 'POST',
      path: `${LBAAS_PREFIX}/${kind}.json`,
      body: JSON.stringify(body),
    });
    try {
      return this.#parse(raw, objectSchemas[kind] as z.ZodType<EngineObjectMap[K]>, kind);
    } catch (err) {
      // The object exists even when its answer is unusable: hand its identifier on, so the caller can still tag it
      // (an untagged object is invisible to every later pass).
      if (err instanceof EngineProtocolError) {
        const id = identifierIn(raw.body);
        if (id !== undefined) err.createdIdentifier = id;
      }
      throw err;
    }
  }

  /**
   * PUT the whole object (see `toUpdateBody`). `state` is "0" unless the body says otherwise: that makes the Engine
   * apply the fields and redeploy, which is also how a failed object is recovered.
   */
  async update<K extends LbaasKind>(kind: K, id: string, body: EngineUpdateBodyMap[K]): Promise<EngineObjectMap[K]> {
    assertKind(kind);
    const raw = await this.#ok({
      resource: kind,
      method: 'PUT',
      path: `${LBAAS_PREFIX}/${kind}.json/${idSegment(id)}`,
      body: JSON.stringify({ ...body, state: body.state ?? '0' }),
    });
    return this.#parse(raw, objectSchemas[kind] as z.ZodType<EngineObjectMap[K]>, kind);
  }

  /** DELETE an object. The Engine may keep it readable for a short while afterwards. */
  async delete(kind: LbaasKind, id: string): Promise<void> {
    assertKind(kind);
    await this.#ok({ resource: kind, method: 'DELETE', path: `${LBAAS_PREFIX}/${kind}.json/${idSegment(id)}` });
  }

  /** Every Core resource carrying `tag`, over all pages. The Engine's 422 for "nobody carries it" is an empty list. */
  async listResourcesByTag(tag: string, options: Pick<ListOptions, 'limit'> = {}): Promise<EngineRef[]> {
    if (typeof tag !== 'string' || tag === '') throw new TypeError('tag must be a non-empty string');
    return this.#collect('resource', CORE_RESOURCES, { tag_name: tag }, pageLimit(options.limit), true, (raw) => {
      return this.#parse(raw, pageSchema, 'resource list');
    });
  }

  /** GET a Core resource; its tags come back as names. */
  async getResource(id: string): Promise<EngineResource> {
    const raw = await this.#ok({ resource: 'resource', method: 'GET', path: `${CORE_RESOURCES}/${idSegment(id)}` });
    const parsed = this.#parse(raw, coreResourceSchema, 'resource');
    return {
      identifier: parsed.identifier,
      name: parsed.name,
      type: parsed.resource_type,
      tags: parsed.tags.map((t) => t.name),
      ...(parsed.created_at == null ? {} : { createdAt: parsed.created_at }),
      ...(parsed.updated_at == null ? {} : { updatedAt: parsed.updated_at }),
    };
  }

  /** Adds a tag. The Engine answers 422 when the resource already carries it. */
  async tag(id: string, tag: string): Promise<void> {
    await this.#ok({
      resource: 'tag',
      method: 'POST',
      path: `${CORE_RESOURCES}/${idSegment(id)}/tags/${tagSegment(tag)}`,
      body: '""',
    });
  }

  /** Removes a tag. 404 when the resource does not carry it. */
  async untag(id: string, tag: string): Promise<void> {
    await this.#ok({ resource: 'tag', method: 'DELETE', path: `${CORE_RESOURCES}/${idSegment(id)}/tags/${tagSegment(tag)}` });
  }

  /** Closes the client's own connection pool (not a dispatcher passed in). Later calls are rejected. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  async #collect(
    resource: string,
    path: string,
    query: Record<string, string>,
    limit: number,
    endOn422: boolean,
    readPage: (raw: RawResponse) => EnginePage,
  ): Promise<EngineRef[]> {
    const items = new Map<string, EngineRef>();
    for (let page = 1; ; page++) {
      const params = new URLSearchParams({ ...query, page: String(page), limit: String(limit) });
      const raw = await this.#send({ resource, method: 'GET', path, query: params });
      if (endOn422 && raw.status === 422) break;
      const { data, total_pages: totalPages } = readPage(this.#check(raw));
      if (data.length === 0) break;
      for (const item of data) if (!items.has(item.identifier)) items.set(item.identifier, item);
      if (totalPages != null && page >= totalPages) break;
      if (page >= MAX_PAGES) {
        throw protocolError(raw.method, raw.path, raw.status, `list does not end: total_pages ${totalPages ?? 'absent'} after ${MAX_PAGES} pages`, this.#redact);
      }
    }
    return [...items.values()];
  }

  async #ok(call: Call): Promise<RawResponse> {
    return this.#check(await this.#send(call));
  }

  /** Non-2xx responses become their error class here; nothing else in the client maps statuses. */
  #check(raw: RawResponse): RawResponse {
    if (raw.status >= 200 && raw.status < 300) return raw;
    throw errorFromResponse(raw, this.#redact);
  }

  #parse<T>(raw: RawResponse, schema: z.ZodType<T>, what: string): T {
    const fail = (problem: string): EngineError => protocolError(raw.method, raw.path, raw.status, problem, this.#redact);
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
  async #send(call: Call): Promise<RawResponse> {
    if (this.#closed) throw new Error('EngineClient is closed');
    const query = call.query?.toString() ?? '';
    const path = `${this.#prefix}${call.path}${query === '' ? '' : `?${query}`}`;
    const headers: Record<string, string> = {
      authorization: this.#authorization,
      accept: 'application/json',
      'user-agent': 'lbaas-orchestrator',
    };
    if (call.body !== undefined) headers['content-type'] = 'application/json';

    const epoch = await this.#pacer.acquire();
    if (this.#closed) throw new Error('EngineClient is closed');
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.#timeoutMs);
    const started = performance.now();
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
