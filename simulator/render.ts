/**
 * Engine answers as the routes send them: LBaaS objects, the Core resource, list pages. The ideal simulator
 * sends every field; with the `sparse` manners it leaves out or nulls what go-anxcloud's types allow
 * (`omitempty` and pointer fields, manners.ts), never what the strict Go client requires: references stay
 * `{identifier, name}` objects, `state` is always present with a numeric `type`, envelopes get no extra keys.
 */
import {
  CUSTOMER_IDENTIFIER,
  KIND_SPECS,
  RESELLER_IDENTIFIER,
  type Ref,
  type SimObject,
  STATES,
  type StateId,
} from './model';
import type { Sparse } from './manners';
import type { QueryResult } from './store';

export function renderState(id: StateId, sparse: Sparse): Record<string, unknown> {
  const s = STATES[id];
  if (sparse.typeOnlyState) return { type: s.type };
  return { id, title: s.title, text: s.title, type: s.type };
}

/** The full LBaaS object as GET, POST and PUT answer it. `nameOf` resolves link targets. */
export function renderObject(o: SimObject, nameOf: (id: string) => string, sparse: Sparse): Record<string, unknown> {
  const out: Record<string, unknown> = { identifier: o.identifier, name: o.name };
  for (const f of KIND_SPECS[o.kind].fields) {
    const v = o.fields[f.key] ?? f.def;
    if (f.type === 'link') {
      const id = String(v);
      out[f.key] = { identifier: id, name: nameOf(id) } satisfies Ref;
    } else if (!(sparse.nullFields && f.omitEmpty && (v === '' || v === 0))) {
      out[f.key] = v;
    }
  }
  out.state = renderState(o.state, sparse);
  // Engine-assigned and never sent by a client: the sparse Engine sends null for them.
  out.customer_identifier = sparse.nullFields ? null : CUSTOMER_IDENTIFIER;
  out.reseller_identifier = sparse.nullFields ? null : RESELLER_IDENTIFIER;
  out.automation_rules = sparse.nullFields ? null : [];
  return out;
}

/** `2026-11-23 14:52:37`: UTC wall-clock time without a zone, as the sparse Engine sends it. */
export function zonelessTime(t: number): string {
  return new Date(t).toISOString().slice(0, 19).replace('T', ' ');
}

export function renderTime(t: number, sparse: Sparse): string {
  return sparse.zonelessTimes ? zonelessTime(t) : new Date(t).toISOString();
}

/** The Core resource. Tags are `{identifier, name}` objects here; an untagged object has `tags: null` when sparse. */
export function renderResource(o: SimObject, tagId: (tag: string) => string, sparse: Sparse): Record<string, unknown> {
  const spec = KIND_SPECS[o.kind];
  const tags = [...o.tags].map((t) => ({ identifier: tagId(t), name: t }));
  return {
    identifier: o.identifier,
    name: o.name,
    resource_type: { identifier: spec.typeId, name: spec.title },
    tags: tags.length === 0 && sparse.tagsNull ? null : tags,
    created_at: renderTime(o.createdAt, sparse),
    updated_at: renderTime(o.updatedAt, sparse),
    attributes: {},
  };
}

export interface Paging {
  page: number;
  limit: number;
}

export interface PageEnvelope {
  page: number;
  total_pages?: number;
  total_items: number;
  limit: number;
  data: Ref[];
}

/** One list page; `total_pages` is left out when sparse (the Go client stops on an empty page, not on it). */
export function pageOf(result: QueryResult, p: Paging, sparse: Sparse): PageEnvelope {
  const items = result.slice((p.page - 1) * p.limit, p.limit);
  const data = items.map((o) => ({ identifier: o.identifier, name: o.name }));
  if (sparse.noTotalPages) return { page: p.page, total_items: result.total, limit: p.limit, data };
  return { page: p.page, total_pages: Math.ceil(result.total / p.limit), total_items: result.total, limit: p.limit, data };
}
