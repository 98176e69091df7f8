/**
 * The four kind definitions, and every table the rest of the project used to keep per kind, derived from them.
 */
import { backend } from './backend';
import { bind } from './bind';
import { comparedNames, linkNames, type ComparedFields, type FieldTable, type Kind, type KindDefinition, type LinkTarget } from './define';
import { frontend } from './frontend';
import { server } from './server';

/** Every kind's definition. The compiler checks that each kind has one and that its `kind` matches its key. */
export const KIND_DEFINITIONS = Object.freeze({ backend, frontend, bind, server } as const satisfies { [K in Kind]: KindDefinition<K> });

export type KindDefinitionOf<K extends Kind> = (typeof KIND_DEFINITIONS)[K];
export type FieldTableOf<K extends Kind> = KindDefinitionOf<K>['fields'];

/** The compared fields of each kind, links as identifiers: what the planner compares and createObject sends. */
export type FieldsOf = { [K in Kind]: ComparedFields<FieldTableOf<K>> };

/** The field of each kind that links to the object it depends on (its planner parent). */
export type LinkField<K extends Kind> = Exclude<KindDefinitionOf<K>['dependsOn'], null>;

/** The link target of a field of `kind` (the kind or the load balancer it points at). */
function targetOf(kind: Kind, field: string): LinkTarget {
  const spec = (KIND_DEFINITIONS[kind].fields as FieldTable)[field];
  if (spec?.type !== 'link' || spec.to === undefined) throw new TypeError(`${kind}.${field} is not a link field`);
  return spec.to;
}

const DEFINED = Object.keys(KIND_DEFINITIONS) as Kind[];

/** The kind each kind depends on (its `dependsOn` link's target), or null for a kind created first. */
export const PARENT_KIND: Readonly<Record<Kind, Kind | null>> = Object.freeze(
  Object.fromEntries(
    DEFINED.map((k) => {
      const link = KIND_DEFINITIONS[k].dependsOn;
      const target = link === null ? 'loadbalancer' : targetOf(k, link);
      return [k, target === 'loadbalancer' ? null : target];
    }),
  ) as Record<Kind, Kind | null>,
);

/** The link each kind is listed under on the Engine (its `listedUnder` field) and what that link points at. */
export const LISTED_UNDER: Readonly<Record<Kind, { readonly field: string; readonly target: LinkTarget }>> = Object.freeze(
  Object.fromEntries(DEFINED.map((k) => [k, Object.freeze({ field: KIND_DEFINITIONS[k].listedUnder, target: targetOf(k, KIND_DEFINITIONS[k].listedUnder) })])) as Record<
    Kind,
    { field: string; target: LinkTarget }
  >,
);

/**
 * `order` rearranged so that each kind comes after the kind `before` names for it (definition order otherwise):
 * a depth-first walk that places a kind's prerequisite first. Throws on a circle, which no Engine model allows.
 */
function after(order: readonly Kind[], before: (k: Kind) => LinkTarget | null): Kind[] {
  const out: Kind[] = [];
  const visit = (k: Kind, path: readonly Kind[]): void => {
    if (out.includes(k)) return;
    if (path.includes(k)) throw new TypeError(`kinds depend on each other in a circle: ${[...path, k].join(' -> ')}`);
    const first = before(k);
    if (first !== null && first !== 'loadbalancer') visit(first, [...path, k]);
    out.push(k);
  };
  for (const k of order) visit(k, []);
  return out;
}

/** The kinds in dependency order: what an object depends on comes before it (a desired list is built this way). */
export const KINDS: readonly Kind[] = Object.freeze(after(DEFINED, (k) => PARENT_KIND[k]));

/**
 * The kinds grouped by how they are listed on the Engine, first level first: the first level is listed under the
 * load balancer, each further one under objects of the level before ([[backend, frontend], [bind, server]]).
 */
export const LISTING_LEVELS: readonly (readonly Kind[])[] = Object.freeze(levels((k) => LISTED_UNDER[k].target));

/** Every link field that points at objects of a kind: what may reference one, and so hold up its delete. */
export const REFERENCED_BY: Readonly<Record<Kind, readonly { readonly kind: Kind; readonly field: string }[]>> = Object.freeze(
  Object.fromEntries(
    DEFINED.map((target) => [
      target,
      Object.freeze(KINDS.flatMap((k) => linkNames(KIND_DEFINITIONS[k].fields).filter((f) => targetOf(k, f) === target).map((field) => Object.freeze({ kind: k, field })))),
    ]),
  ) as Record<Kind, readonly { kind: Kind; field: string }[]>,
);

/** The kinds by depth below the load balancer along `up` (depth 0: `up` is the load balancer), in KINDS order. */
function levels(up: (k: Kind) => LinkTarget): Kind[][] {
  const depth = (k: Kind, seen: readonly Kind[] = []): number => {
    const target = up(k);
    if (target === 'loadbalancer') return 0;
    if (seen.includes(target)) throw new TypeError(`kinds are listed under each other in a circle: ${[...seen, k].join(' -> ')}`);
    return 1 + depth(target, [...seen, k]);
  };
  const out: Kind[][] = [];
  for (const k of KINDS) (out[depth(k)] ??= []).push(k);
  return out.map((level) => Object.freeze(level) as Kind[]);
}

/** Human names of the kinds, as the Engine and the upstream controller spell them. */
export const KIND_TITLE: Readonly<Record<Kind, string>> = Object.freeze(mapKinds((k) => KIND_DEFINITIONS[k].title));

/** Core resource type identifier -> kind (a tagged resource is only one of ours if its type is one of these). */
export const KIND_OF_RESOURCE_TYPE: Readonly<Record<string, Kind>> = Object.freeze(
  Object.fromEntries(KINDS.map((k) => [KIND_DEFINITIONS[k].resourceType, k])),
);

/** Compared field names per kind, computed once: matching runs them for every candidate of every desired object. */
export const COMPARED_FIELDS: Readonly<Record<Kind, readonly string[]>> = Object.freeze(
  mapKinds((k) => Object.freeze(comparedNames(KIND_DEFINITIONS[k].fields))),
);

/** Link field names per kind (written as identifiers, read back as references). */
export const LINK_FIELDS: Readonly<Record<Kind, readonly string[]>> = Object.freeze(mapKinds((k) => Object.freeze(linkNames(KIND_DEFINITIONS[k].fields))));

/**
 * The kinds grouped by destroy stage, first stage first: kinds of one stage may be destroyed together, and each
 * stage only after the one before it ([[bind, server], [frontend], [backend]]).
 */
export const DESTROY_STAGES: readonly (readonly Kind[])[] = Object.freeze(
  [...new Set(KINDS.map((k) => KIND_DEFINITIONS[k].destroyStage))]
    .sort((a, b) => a - b)
    .map((stage) => Object.freeze(KINDS.filter((k) => KIND_DEFINITIONS[k].destroyStage === stage))),
);

/** Rank of each kind in a plan's destroy list: by stage, then in dependency order (bind, server, frontend, backend). */
export const DESTROY_RANK: Readonly<Record<Kind, number>> = Object.freeze(
  mapKinds((k) => DESTROY_STAGES.flat().indexOf(k)),
);

function mapKinds<T>(f: (kind: Kind) => T): Record<Kind, T> {
  return Object.fromEntries(KINDS.map((k) => [k, f(k)])) as Record<Kind, T>;
}
