/**
 * The typed HTTP client of the Anexia Engine's LBaaS v1 and Core v1 API (docs/engine-api.md), on undici. The
 * endpoints are here; the request path they share (headers, pacing, deadline, status and schema checks) is
 * transport.ts.
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
import type { z } from 'zod';
import { EngineProtocolError } from './errors';
import { FreshFlights } from './flights';
import type { ReadMark } from '../../contract';
import { RecentReads } from './recent-reads';
import {
  IPAM_PREFIX,
  ipamAddressPageSchema,
  ipamAddressSchema,
  ipamAddressSummarySchema,
  ipamPrefixSchema,
  type AddressCreate,
  type EngineAddress,
  type EngineAddressSummary,
  type EnginePrefix,
} from './ipam';
import type { RequestPacer } from './pacing';
import { EngineTransport, type EngineClientOptions, type RawResponse } from './transport';
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

export {
  DEFAULT_CONNECTIONS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  resolveEngineClientOptions,
  type EngineClientOptions,
  type EngineResponseEvent,
} from './transport';

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

export interface ListOptions {
  /** Engine list filters (docs/engine-api.md#collections), e.g. `{ load_balancer: id }`. */
  filters?: Readonly<Record<string, string>>;
  /** Page size, 1..100; default `DEFAULT_PAGE_LIMIT`. */
  limit?: number;
  /**
   * Accept an identical listing that started up to `RECENT_LIST_MS` before the call (flights.ts). Only for a caller
   * that needs a list read before something it does next, never for one that must see the Engine as it is now.
   */
  recent?: boolean;
}

/**
 * How old a listing asked for with `recent` may be. The look-alike list before a group's creates (activities/realize.ts)
 * only has to be read before their POSTs; when a thousand services are applied at once, each load balancer's lists of
 * Frontends and Backends (tens of pages each) are then read once per this window instead of back to back.
 */
export const RECENT_LIST_MS = 10_000;

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

export class EngineClient {
  readonly #transport: EngineTransport;
  /**
   * Identical LBaaS lists joined when one has not started yet (flights.ts): never an answer older than the call,
   * unless the caller asks for a `recent` one.
   */
  readonly #lists = new FreshFlights<EngineRef[]>(RECENT_LIST_MS);
  /** The last GET answer of each object and when it was sent, while nothing was written to it (recent-reads.ts). */
  readonly #reads = new RecentReads<{ kind: LbaasKind; object: unknown }>();

  constructor(options: EngineClientOptions) {
    this.#transport = new EngineTransport(options);
  }

  /** The request budget and backoff every request of this client goes through. */
  get pacer(): RequestPacer {
    return this.#transport.pacer;
  }

  /** GET one LBaaS object. 404: `EngineNotFoundError`. */
  async get<K extends LbaasKind>(kind: K, id: string): Promise<EngineObjectMap[K]> {
    assertKind(kind);
    const token = this.#reads.begin(id);
    const raw = await this.#transport.ok({ resource: kind, method: 'GET', path: `${LBAAS_PREFIX}/${kind}.json/${idSegment(id)}` });
    const object = this.#transport.parse(raw, objectSchemas[kind] as z.ZodType<EngineObjectMap[K]>, kind);
    this.#reads.remember(token, { kind, object });
    return object;
  }

  /** A mark of this client's clock: the start of a round whose closing observation may take this client's reads. */
  readMark(): ReadMark {
    return this.#reads.mark();
  }

  /**
   * The object as this client's last GET of it answered, if `since` is this client's mark, that GET was sent at or
   * after it and this client has written nothing to it since; no request. For a round closing on what it read itself
   * (recent-reads.ts).
   */
  readSince<K extends LbaasKind>(kind: K, id: string, since: ReadMark): EngineObjectMap[K] | undefined {
    const read = this.#reads.since(id, since);
    return read && read.kind === kind ? (read.object as EngineObjectMap[K]) : undefined;
  }

  /**
   * Whether the object still exists: true while GET answers 2xx (its body is not validated: an object being
   * deprovisioned exists whatever it looks like), false once it answers 404. Other failures throw.
   */
  async exists(kind: LbaasKind, id: string): Promise<boolean> {
    assertKind(kind);
    const raw = await this.#transport.send({ resource: kind, method: 'GET', path: `${LBAAS_PREFIX}/${kind}.json/${idSegment(id)}` });
    if (raw.status === 404) return false;
    this.#transport.check(raw);
    return true;
  }

  /**
   * Every `{identifier, name}` of a kind, over all pages, in the Engine's order, each identifier once (objects
   * created while paging can shift an item onto the next page). Callers asking for the same list at the same time
   * share one listing that starts after each of them asked (flights.ts), or with `recent` one that started up to
   * `RECENT_LIST_MS` before; each gets its own copy.
   */
  async list(kind: LbaasKind, options: ListOptions = {}): Promise<EngineRef[]> {
    assertKind(kind);
    const query: Record<string, string> = {};
    const filters = new URLSearchParams(options.filters ?? {}).toString();
    if (filters !== '') query.filters = filters;
    const limit = pageLimit(options.limit);
    const refs = await this.#lists.run(
      `${kind}?${filters}&limit=${limit}`,
      () =>
        this.#collect(kind, `${LBAAS_PREFIX}/${kind}.json`, query, limit, false, (raw) => {
          return this.#transport.parse(raw, lbaasListSchema, `${kind} list`).data;
        }),
      { recent: options.recent === true },
    );
    return refs.map((r) => ({ ...r }));
  }

  /** POST a new object; resolves to it as the Engine answered (state NewlyCreated). */
  async create<K extends LbaasKind>(kind: K, body: EngineCreateBodyMap[K]): Promise<EngineObjectMap[K]> {
    assertKind(kind);
    const raw = await this.#transport.ok({
      resource: kind,
      method: 'POST',
      path: `${LBAAS_PREFIX}/${kind}.json`,
      body: JSON.stringify(body),
    });
    try {
      return this.#transport.parse(raw, objectSchemas[kind] as z.ZodType<EngineObjectMap[K]>, kind);
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
    this.#reads.writing(id);
    const raw = await this.#transport.ok({
      resource: kind,
      method: 'PUT',
      path: `${LBAAS_PREFIX}/${kind}.json/${idSegment(id)}`,
      body: JSON.stringify({ ...body, state: body.state ?? '0' }),
    }).finally(() => this.#reads.written(id));
    return this.#transport.parse(raw, objectSchemas[kind] as z.ZodType<EngineObjectMap[K]>, kind);
  }

  /** DELETE an object. The Engine may keep it readable for a short while afterwards. */
  async delete(kind: LbaasKind, id: string): Promise<void> {
    assertKind(kind);
    this.#reads.writing(id);
    await this.#transport.ok({ resource: kind, method: 'DELETE', path: `${LBAAS_PREFIX}/${kind}.json/${idSegment(id)}` }).finally(() => this.#reads.written(id));
  }

  /** Every Core resource carrying `tag`, over all pages. The Engine's 422 for "nobody carries it" is an empty list. */
  async listResourcesByTag(tag: string, options: Pick<ListOptions, 'limit'> = {}): Promise<EngineRef[]> {
    if (typeof tag !== 'string' || tag === '') throw new TypeError('tag must be a non-empty string');
    return this.#collect('resource', CORE_RESOURCES, { tag_name: tag }, pageLimit(options.limit), true, (raw) => {
      return this.#transport.parse(raw, pageSchema, 'resource list');
    });
  }

  /** GET a Core resource; its tags come back as names. */
  async getResource(id: string): Promise<EngineResource> {
    const raw = await this.#transport.ok({ resource: 'resource', method: 'GET', path: `${CORE_RESOURCES}/${idSegment(id)}` });
    const parsed = this.#transport.parse(raw, coreResourceSchema, 'resource');
    return {
      identifier: parsed.identifier,
      name: parsed.name,
      type: parsed.resource_type,
      tags: parsed.tags.map((t) => t.name),
      ...(parsed.created_at == null ? {} : { createdAt: parsed.created_at }),
      ...(parsed.updated_at == null ? {} : { updatedAt: parsed.updated_at }),
    };
  }

  /** GET an IPAM prefix: its identifier and CIDR (`name`). 404: `EngineNotFoundError`. */
  async getPrefix(id: string): Promise<EnginePrefix> {
    const raw = await this.#transport.ok({ resource: 'prefix', method: 'GET', path: `${IPAM_PREFIX}/prefix.json/${idSegment(id)}` });
    return this.#transport.parse(raw, ipamPrefixSchema, 'prefix');
  }

  /** GET an IPAM address: its identifier, the address (`name`) and its prefix's identifier. 404: `EngineNotFoundError`. */
  async getAddress(id: string): Promise<EngineAddress> {
    const raw = await this.#transport.ok({ resource: 'address', method: 'GET', path: `${IPAM_PREFIX}/address.json/${idSegment(id)}` });
    return this.#transport.parse(raw, ipamAddressSchema, 'address');
  }

  /**
   * Every address of a prefix (`GET address/filtered.json?prefix=<id>`), over all pages, each identifier once, with
   * the customer description it was created with.
   */
  async listPrefixAddresses(prefixId: string, options: Pick<ListOptions, 'limit'> = {}): Promise<EngineAddressSummary[]> {
    if (typeof prefixId !== 'string' || prefixId === '') throw new TypeError('prefixId must be a non-empty string');
    const limit = pageLimit(options.limit);
    const items = new Map<string, EngineAddressSummary>();
    for (let page = 1; ; page++) {
      const query = new URLSearchParams({ prefix: prefixId, page: String(page), limit: String(limit) });
      const raw = await this.#transport.send({ resource: 'address', method: 'GET', path: `${IPAM_PREFIX}/address/filtered.json`, query });
      const { data } = this.#transport.parse(this.#transport.check(raw), ipamAddressPageSchema, 'address list');
      if (data.data.length === 0) break;
      for (const item of data.data) if (!items.has(item.identifier)) items.set(item.identifier, item);
      if (data.total_pages != null && page >= data.total_pages) break;
      if (page >= MAX_PAGES) throw this.#transport.protocolError(raw, `list does not end: total_pages ${data.total_pages ?? 'absent'} after ${MAX_PAGES} pages`);
    }
    return [...items.values()];
  }

  /**
   * POST a new address of a prefix, the address named (`name`). The Engine refuses an address that is taken or
   * outside the prefix (422). An answer that cannot be read still hands its identifier on, as `create` does.
   */
  async createAddress(body: AddressCreate): Promise<EngineAddressSummary> {
    const raw = await this.#transport.ok({ resource: 'address', method: 'POST', path: `${IPAM_PREFIX}/address.json`, body: JSON.stringify({ ...body, role: 'Default' }) });
    try {
      return this.#transport.parse(raw, ipamAddressSummarySchema, 'address');
    } catch (err) {
      if (err instanceof EngineProtocolError) {
        const id = identifierIn(raw.body);
        if (id !== undefined) err.createdIdentifier = id;
      }
      throw err;
    }
  }

  /** DELETE an address: it goes back to its prefix. 404 (already gone) is thrown; whether that is success is the caller's rule. */
  async deleteAddress(id: string): Promise<void> {
    await this.#transport.ok({ resource: 'address', method: 'DELETE', path: `${IPAM_PREFIX}/address.json/${idSegment(id)}` });
  }

  /** Adds a tag. The Engine answers 422 when the resource already carries it. */
  async tag(id: string, tag: string): Promise<void> {
    await this.#transport.ok({
      resource: 'tag',
      method: 'POST',
      path: `${CORE_RESOURCES}/${idSegment(id)}/tags/${tagSegment(tag)}`,
      body: '""',
    });
  }

  /** Removes a tag. 404 when the resource does not carry it. */
  async untag(id: string, tag: string): Promise<void> {
    await this.#transport.ok({ resource: 'tag', method: 'DELETE', path: `${CORE_RESOURCES}/${idSegment(id)}/tags/${tagSegment(tag)}` });
  }

  /** Closes the client's own connection pool (not a dispatcher passed in). Later calls are rejected. */
  async close(): Promise<void> {
    await this.#transport.close();
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
      const raw = await this.#transport.send({ resource, method: 'GET', path, query: params });
      if (endOn422 && raw.status === 422) break;
      const { data, total_pages: totalPages } = readPage(this.#transport.check(raw));
      if (data.length === 0) break;
      for (const item of data) if (!items.has(item.identifier)) items.set(item.identifier, item);
      if (totalPages != null && page >= totalPages) break;
      if (page >= MAX_PAGES) {
        throw this.#transport.protocolError(raw, `list does not end: total_pages ${totalPages ?? 'absent'} after ${MAX_PAGES} pages`);
      }
    }
    return [...items.values()];
  }
}
