/**
 * The Engine's LBaaS v1 and Core v1 objects as this client reads and writes them (docs/engine-api.md#lbaas-v1-objects
 * and docs/engine-api.md#core-resources-and-tags).
 *
 * Parsed objects keep the Engine's field names (snake_case), so what a caller compares is what the Engine echoed.
 * Schemas strip unknown fields instead of rejecting them: the Engine may add fields at any time. They are strict
 * about what reconciliation relies on (identifiers, names, state, links and the compared fields of each kind), and
 * lenient (optional, nullable) about the rest, so a change in a field nobody reads cannot break a pass. The four
 * kinds' schemas and body types are derived from their field tables (domain/kinds), so a field is declared once.
 */
import { z } from 'zod';
import {
  KIND_DEFINITIONS,
  KINDS,
  LINK_FIELDS,
  type ComparedName,
  type FieldSpec,
  type FieldTable,
  type FieldTableOf,
  type Kind,
  type OtherName,
  type RequiredOnCreate,
  type ValueOf,
} from '../../domain';

/** The LBaaS object kinds, named as in their collection paths (`/api/LBaaS/v1/<kind>.json`). */
export type LbaasKind = 'loadbalancer' | Kind;
/** The load balancer and the service's kinds (KINDS, from the kind registry). */
export const LBAAS_KINDS: readonly LbaasKind[] = Object.freeze(['loadbalancer', ...KINDS]);

const identifier = z.string().min(1);

/** A reference to another object, and the item shape of every list. */
export const refSchema = z.object({ identifier, name: z.string() });
export type EngineRef = z.infer<typeof refSchema>;

/**
 * `{"id":"3","title":"Deployed","text":"Deployed","type":1}`. Client versions differ on whether they read `title`
 * or `text`; `title` falls back to `text` (and to "") so callers can always read it. The real Engine may send only
 * `{"type":1}`: a missing id reads as "" (as the Go client decodes it) and the state is then read by its type
 * (state.ts); an id or type of the wrong JSON type is still a broken answer.
 */
export const stateSchema = z
  .object({ id: z.string().nullish(), title: z.string().nullish(), text: z.string().nullish(), type: z.number().int().nullish() })
  .transform(({ id, title, text, type }) => ({
    id: id ?? '',
    title: title ?? text ?? '',
    ...(text == null ? {} : { text }),
    type: type ?? null,
  }));
export type EngineState = z.infer<typeof stateSchema>;

const optionalString = z.string().nullish();

const common = {
  identifier,
  name: z.string(),
  state: stateSchema,
  customer_identifier: optionalString,
  reseller_identifier: optionalString,
  automation_rules: z.array(z.unknown()).nullish(),
};

export const loadBalancerSchema = z.object({ ...common, ip_address: optionalString });
export type EngineLoadBalancer = z.infer<typeof loadBalancerSchema>;

type Common = z.infer<z.ZodObject<typeof common>>;
/** A field as the Engine sends it: a link is a reference object, everything else as in the domain. */
type EngineValue<S> = S extends { type: 'link' } ? EngineRef : ValueOf<S>;
/** An Engine object of a kind: its compared fields required, the others possibly missing or null. */
export type EngineObjectOf<K extends Kind> = Common & { [N in ComparedName<FieldTableOf<K>>]: EngineValue<FieldTableOf<K>[N]> } & {
  [N in OtherName<FieldTableOf<K>>]?: EngineValue<FieldTableOf<K>[N]> | null;
};

/**
 * A field's schema, from its entry in the kind's field table (domain/kinds): compared fields are what reconciliation
 * relies on and must be present and well-typed; the others are tolerated missing or null.
 */
function fieldSchema(spec: FieldSpec): z.ZodType {
  const base = spec.type === 'link' ? refSchema : spec.type === 'integer' ? z.number().int() : spec.type === 'boolean' ? z.boolean() : z.string();
  if (!spec.compared) return base.nullish();
  // A compared field the Engine leaves out when empty (`omitempty` in the Go client) reads as its zero value.
  if (spec.omitEmpty && spec.type !== 'link') return base.nullish().transform((v) => v ?? ZERO[spec.type as Exclude<FieldSpec['type'], 'link'>]);
  return base;
}

const ZERO = { string: '', integer: 0, boolean: false } as const;

function kindSchema<K extends Kind>(kind: K): z.ZodType<EngineObjectOf<K>> {
  const shape: Record<string, z.ZodType> = { ...common };
  for (const [name, spec] of Object.entries(KIND_DEFINITIONS[kind].fields as FieldTable)) shape[name] = fieldSchema(spec);
  return z.object(shape) as unknown as z.ZodType<EngineObjectOf<K>>;
}

export type EngineFrontend = EngineObjectOf<'frontend'>;
export type EngineBackend = EngineObjectOf<'backend'>;
export type EngineBind = EngineObjectOf<'bind'>;
export type EngineServer = EngineObjectOf<'server'>;

/** The parsed object type of each kind: `get('backend', id)` resolves to `EngineBackend`. */
export interface EngineObjectMap {
  loadbalancer: EngineLoadBalancer;
  backend: EngineBackend;
  frontend: EngineFrontend;
  bind: EngineBind;
  server: EngineServer;
}
export type EngineObject = EngineObjectMap[LbaasKind];

export const objectSchemas: { readonly [K in LbaasKind]: z.ZodType<EngineObjectMap[K]> } = {
  loadbalancer: loadBalancerSchema,
  backend: kindSchema('backend'),
  frontend: kindSchema('frontend'),
  bind: kindSchema('bind'),
  server: kindSchema('server'),
};

/*
 * Request bodies (docs/engine-api.md#requests). Links are bare identifier strings under the same key as the reference
 * in the object. Optional fields are left out when undefined (JSON.stringify drops them), so the Engine applies its
 * defaults.
 */
export interface LoadBalancerCreate {
  name: string;
  ip_address?: string;
}
/** A create body of a kind: links as bare ids; the compared fields without an Engine default required, the rest optional. */
export type CreateBodyOf<K extends Kind> = { [N in RequiredOnCreate<FieldTableOf<K>>]: ValueOf<FieldTableOf<K>[N]> } & {
  [N in Exclude<keyof FieldTableOf<K> & string, RequiredOnCreate<FieldTableOf<K>>>]?: ValueOf<FieldTableOf<K>[N]>;
};
export type BackendCreate = CreateBodyOf<'backend'>;
export type FrontendCreate = CreateBodyOf<'frontend'>;
export type BindCreate = CreateBodyOf<'bind'>;
export type ServerCreate = CreateBodyOf<'server'>;
export interface EngineCreateBodyMap {
  loadbalancer: LoadBalancerCreate;
  backend: BackendCreate;
  frontend: FrontendCreate;
  bind: BindCreate;
  server: ServerCreate;
}

/**
 * A PUT body: the whole object as last read, links as bare ids. `state` defaults to "0" (`EngineClient.update`
 * adds it), which asks the Engine to apply the fields and redeploy; that is also how a failed object is recovered.
 * Unknown keys such as `identifier` are accepted and ignored by the Engine.
 */
export type EngineUpdateBodyMap = { [K in LbaasKind]: EngineCreateBodyMap[K] & { state?: string } };

/**
 * Paged list envelopes (docs/engine-api.md#lists-and-paging). Only `total_pages` and `data` steer the paging; the real Engine may
 * leave `total_pages` out, and paging then ends on the first empty page (as the Go client's does).
 */
export const pageSchema = z.object({
  page: z.number().int().nullish(),
  total_pages: z.number().int().nullish(),
  total_items: z.number().int().nullish(),
  limit: z.number().int().nullish(),
  data: z.array(refSchema),
});
export type EnginePage = z.infer<typeof pageSchema>;
export const lbaasListSchema = z.object({ data: pageSchema });

/** `GET /api/core/v1/resource.json/<id>`, where tags are objects. */
export const coreResourceSchema = z.object({
  identifier,
  name: z.string(),
  resource_type: refSchema,
  // The Core resource of an untagged object may carry `"tags": null` (a nil slice in the Engine's Go types): no tags.
  tags: z
    .array(refSchema)
    .nullish()
    .transform((t) => t ?? []),
  created_at: optionalString,
  updated_at: optionalString,
});

/** A Core resource as callers see it: tags reduced to their names, which is what tagging works with. */
export interface EngineResource {
  identifier: string;
  name: string;
  type: EngineRef;
  tags: string[];
  createdAt?: string;
  updatedAt?: string;
}

const LINK_KEYS: { readonly [K in LbaasKind]: readonly string[] } = { loadbalancer: [], ...LINK_FIELDS };

/**
 * Turns an object as read into its PUT body (docs/engine-api.md#requests): references become bare ids, `state` becomes
 * "0", null fields are left out (a null in a request body is not something the Engine documents accepting).
 */
export function toUpdateBody<K extends LbaasKind>(kind: K, object: EngineObjectMap[K]): EngineUpdateBodyMap[K] {
  const links = LINK_KEYS[kind];
  const body: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(object)) {
    if (key === 'state' || value === null || value === undefined) continue;
    body[key] = links.includes(key) ? (value as EngineRef).identifier : value;
  }
  body.state = '0';
  return body as unknown as EngineUpdateBodyMap[K];
}
