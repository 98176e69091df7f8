/**
 * The four kind definitions, and every table the rest of the project used to keep per kind, derived from them.
 */
import type { Kind } from '../types';
import { backend } from './backend';
import { bind } from './bind';
import { comparedNames, linkNames, type ComparedFields, type KindDefinition } from './define';
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

/** The kinds in dependency order: what an object depends on comes before it (a desired list is built this way). */
export const KINDS: readonly Kind[] = Object.freeze(['backend', 'frontend', 'bind', 'server'] as const satisfies readonly Kind[]);

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
