/** LBaaS v1 collections (docs/engine-api.md#lbaas-v1-objects): list, create, get, update, delete. */
import { SimError } from '../errors';
import { decodeSegment, paging, parseJsonObject, type Reply } from '../http';
import { KIND_BY_COLLECTION, KIND_SPECS, type Kind, type SimObject } from '../model';
import { pageOf, renderObject } from '../render';
import type { Simulator } from '../sim';
import type { Handler, RequestContext, RouteMatch } from './types';

export const LBAAS_PREFIX = '/api/LBaaS/v1/';

/** `filters` is itself form-encoded (`load_balancer%3D<id>%26mode%3Dtcp`) and may be present and empty. */
export function parseFilters(q: URLSearchParams): [string, string][] {
  const raw = q.get('filters');
  if (!raw) return [];
  return [...new URLSearchParams(raw)].filter(([k]) => k !== '');
}

function notFound(kind: Kind, id: string): SimError {
  return new SimError(404, `${KIND_SPECS[kind].title} ${id} not found.`);
}

function render(sim: Simulator, o: SimObject): Record<string, unknown> {
  return renderObject(o, sim.store.nameOf, sim.sparse);
}

function list(kind: Kind): Handler {
  return ({ sim, query }: RequestContext): Reply => {
    const result = sim.store.query(kind, parseFilters(query));
    return { status: 200, body: { state: 'success', messages: [], data: pageOf(result, paging(query), sim.sparse) } };
  };
}

function create(kind: Kind): Handler {
  return ({ sim, body }: RequestContext): Reply => {
    const o = sim.create(kind, parseJsonObject(body));
    return { status: 200, body: render(sim, o), mutated: true };
  };
}

/** GET answers objects whose deletion is under way too (asynchronous delete); lists do under `deleteListed`. */
function getOne(kind: Kind, id: string): Handler {
  return ({ sim }: RequestContext): Reply => {
    const o = sim.store.get(id);
    if (!o || o.kind !== kind) throw notFound(kind, id);
    if (o.deployedAt !== null && o.deploySeenAt === null) o.deploySeenAt = Date.now();
    return { status: 200, body: render(sim, o) };
  };
}

function update(kind: Kind, id: string): Handler {
  return ({ sim, body }: RequestContext): Reply => {
    const parsed = parseJsonObject(body);
    const o = sim.changeable(id, kind);
    sim.update(o, parsed);
    return { status: 200, body: render(sim, o), mutated: true };
  };
}

function remove(kind: Kind, id: string): Handler {
  return ({ sim }: RequestContext): Reply => {
    const o = sim.store.get(id);
    if (!o || o.kind !== kind) throw notFound(kind, id);
    const changed = sim.remove(o);
    return { status: 200, body: {}, mutated: changed };
  };
}

/** Matches `/api/LBaaS/v1/<collection>.json[/<id>]` (one trailing slash tolerated). */
export function matchLbaas(path: string): RouteMatch | null {
  if (!path.startsWith(LBAAS_PREFIX)) return null;
  let rest = path.slice(LBAAS_PREFIX.length);
  if (rest.endsWith('/')) rest = rest.slice(0, -1);
  const parts = rest.split('/');
  const collection = parts[0] ?? '';
  const kind = KIND_BY_COLLECTION.get(collection);
  if (!kind) return null;
  const base = LBAAS_PREFIX + collection;
  if (parts.length === 1) return { pattern: base, methods: { GET: list(kind), POST: create(kind) } };
  const id = parts[1];
  if (parts.length === 2 && id) {
    const ident = decodeSegment(id);
    return {
      pattern: `${base}/{id}`,
      methods: { GET: getOne(kind, ident), PUT: update(kind, ident), DELETE: remove(kind, ident) },
    };
  }
  return null;
}
