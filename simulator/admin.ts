/**
 * The admin API under `/_sim/` (docs/engine-api.md#admin-api): fixtures, drift, faults and counters. No auth, JSON,
 * never counted in the stats and never subject to faults.
 */
import { z } from 'zod';
import { zodValidation } from './faults';
import { decodeSegment, errorReply, parseJsonObject, type Reply } from './http';
import { KINDS, STATE_TITLES } from './model';
import { patchObject, seedObject } from './fixtures';
import { type Simulator } from './sim';
import { adminView } from './views';

export const ADMIN_PREFIX = '/_sim/';

const SeedSchema = z.object({
  kind: z.enum(KINDS),
  fields: z.record(z.string(), z.unknown()).optional(),
  name: z.string().optional(),
  state: z.enum(STATE_TITLES).optional(),
  tags: z.array(z.string().min(1)).optional(),
  identifier: z.string().min(1).optional(),
  force: z.boolean().optional(),
});

const PatchSchema = z.object({
  name: z.string().optional(),
  state: z.enum(STATE_TITLES).optional(),
  fields: z.record(z.string(), z.unknown()).optional(),
  tags: z.array(z.string().min(1)).optional(),
  force: z.boolean().optional(),
});

function parseWith<T>(schema: z.ZodType<T>, body: string): T | Reply {
  const r = schema.safeParse(parseJsonObject(body));
  if (!r.success) return errorReply(422, 'Validation failed.', zodValidation(r.error));
  return r.data;
}

function isReply(v: unknown): v is Reply {
  return typeof v === 'object' && v !== null && 'status' in v && typeof (v as Reply).status === 'number';
}

function methodNotAllowed(allow: string): Reply {
  return errorReply(405, `Method not allowed; use ${allow}.`, undefined, { Allow: allow });
}

/** Handles one admin request; throws SimError / BadJson for the dispatcher to render. */
export function handleAdmin(sim: Simulator, method: string, path: string, query: URLSearchParams, body: string): Reply {
  const rest = path.slice(ADMIN_PREFIX.length).replace(/\/$/, '');
  const [head = '', ...tail] = rest.split('/');

  switch (head) {
    case 'health':
      if (tail.length) break;
      return { status: 200, body: { ok: true, objects: sim.store.byId.size, rssBytes: process.memoryUsage().rss } };
    case 'reset':
      if (tail.length) break;
      if (method !== 'POST') return methodNotAllowed('POST');
      sim.reset();
      return { status: 204 };
    case 'faults':
      if (tail.length) break;
      if (method === 'GET') return { status: 200, body: sim.faults };
      if (method !== 'PUT') return methodNotAllowed('GET, PUT');
      try {
        return { status: 200, body: sim.setFaults(parseJsonObject(body)) };
      } catch (err) {
        if (err instanceof z.ZodError) return errorReply(422, 'Invalid fault model.', zodValidation(err));
        throw err;
      }
    case 'stats':
      if (tail.length === 0) {
        if (method !== 'GET') return methodNotAllowed('GET');
        return { status: 200, body: sim.stats.snapshot() };
      }
      if (tail.length === 1 && tail[0] === 'reset') {
        if (method !== 'POST') return methodNotAllowed('POST');
        sim.stats.reset();
        return { status: 204 };
      }
      break;
    case 'objects':
      return objects(sim, method, tail, query, body);
  }
  return errorReply(404, `No admin route ${method} ${path}.`);
}

function objects(sim: Simulator, method: string, tail: string[], query: URLSearchParams, body: string): Reply {
  if (tail.length === 0) {
    if (method === 'GET') {
      const kind = query.get('kind');
      const tag = query.get('tag');
      let all = sim.objects();
      if (kind) all = all.filter((o) => o.kind === kind);
      if (tag) all = all.filter((o) => o.tags.includes(tag));
      return { status: 200, body: { objects: all } };
    }
    if (method !== 'POST') return methodNotAllowed('GET, POST');
    const input = parseWith(SeedSchema, body);
    if (isReply(input)) return input;
    const o = seedObject(sim, input);
    return { status: 201, body: { identifier: o.identifier } };
  }
  if (tail.length !== 1 || !tail[0]) return errorReply(404, 'No such admin route.');
  const id = decodeSegment(tail[0]);
  switch (method) {
    case 'GET': {
      const o = sim.store.get(id);
      return o ? { status: 200, body: adminView(o) } : errorReply(404, `Object ${id} not found.`);
    }
    case 'PATCH': {
      const input = parseWith(PatchSchema, body);
      if (isReply(input)) return input;
      return { status: 200, body: adminView(patchObject(sim, id, input)) };
    }
    case 'DELETE':
      sim.adminDelete(id);
      return { status: 204 };
    default:
      return methodNotAllowed('GET, PATCH, DELETE');
  }
}
