/**
 * The shape of a kind definition: everything the project knows about one LBaaS object kind, in one value that the
 * planner, the activities, the Engine client's response schemas and the reconcile loop all read. Adding a field or a
 * kind is one edit in one file of this folder (plus its name in `Kind` and `KIND_DEFINITIONS` for a new kind).
 *
 * Two relations to other objects are kept apart on purpose, because for a Frontend they differ:
 * - `dependsOn`: the link field naming the object this one depends on and is created after (the planner's parent).
 *   A Frontend depends on its `default_backend`; a Backend on nothing of ours (its load balancer is given).
 * - `listedUnder`: the link field the Engine filters a collection by to list this object's siblings. A Frontend is
 *   listed under its `load_balancer`, a Bind under its `frontend`.
 */
/**
 * The four LBaaS object kinds a service owns on a load balancer. Each has one definition in this folder (its
 * fields, links, title, resource type and destroy stage); registry.ts derives their order and tables from them.
 */
export type Kind = 'backend' | 'frontend' | 'bind' | 'server';

/** Engine field types. A `link` is written as the target's identifier and read back as a reference object. */
export type FieldType = 'string' | 'integer' | 'boolean' | 'link';

/** What the field links to: one of the service's kinds, or the load balancer, which is given and never ours. */
export type LinkTarget = Kind | 'loadbalancer';

export interface FieldSpec {
  type: FieldType;
  /**
   * Compared fields must be equal for an existing object to stand for a desired one; they are what reconciliation
   * writes on create, and the Engine's answers must carry them. Fields that are not compared are the Engine's own
   * (left to its defaults on create) and tolerated missing or null in its answers.
   */
  compared: boolean;
  /** For a `link`: the kind it points at. */
  to?: LinkTarget;
  /** The Engine fills the field in when a create body leaves it out (so an Engine client may omit it). */
  engineDefault?: boolean;
  /**
   * The Engine may leave the field out of an answer when it holds its zero value ("", 0, false): the public Go client
   * declares it `omitempty`. A missing (or null) compared field of this kind reads as that zero value; a missing
   * compared field without it is a broken answer.
   */
  omitEmpty?: boolean;
}

export type FieldTable = Readonly<Record<string, FieldSpec>>;

export interface KindDefinition<K extends Kind = Kind, F extends FieldTable = FieldTable, D extends string | null = string | null> {
  kind: K;
  /** Human name, as the Engine and the upstream controller spell it ("Backend"). */
  title: string;
  /** The Core resource type identifier of the kind: how a tagged resource found by tag is known to be one of these. */
  resourceType: string;
  fields: F;
  /** The link field this object depends on (see the top of this file), or null. Filled in from the parent's identifier. */
  dependsOn: D;
  /** The link field that lists this object with its siblings (see the top of this file). */
  listedUnder: string;
  /**
   * When this kind is destroyed within a pass: lower stages first. The Engine refuses to delete what something still
   * references, so what references others goes first.
   */
  destroyStage: number;
}

/** Checks that `dependsOn` and `listedUnder` name link fields, and keeps the literal types of a definition (field names, `compared` flags, link names) for the derived types below. */
export function defineKind<const K extends Kind, const F extends FieldTable, const D extends LinkFieldName<F> | null>(
  definition: KindDefinition<K, F, D> & { listedUnder: LinkFieldName<F> },
): KindDefinition<K, F, D> {
  return Object.freeze(definition);
}

/** The names of a table's link fields . */
export type LinkFieldName<F> = { [N in keyof F]: F[N] extends { type: 'link' } ? N : never }[keyof F] & string;

/** The names of a table's compared fields. */
export type ComparedName<F> = { [N in keyof F]: F[N] extends { compared: true } ? N : never }[keyof F] & string;

/** The names of a table's fields that are not compared. */
export type OtherName<F> = Exclude<keyof F & string, ComparedName<F>>;

/** The names of the fields a create body must carry: the fields without an Engine default. */
export type RequiredOnCreate<F> = { [N in keyof F]: F[N] extends { engineDefault: true } ? never : F[N] extends { compared: true } ? N : never }[keyof F] &
  string;

/** A field's value as the planner sees it: links are the target's identifier. */
export type ValueOf<S> = S extends { type: 'integer' } ? number : S extends { type: 'boolean' } ? boolean : string;

/** The compared fields of a kind, as the planner and the activities hold them (links as identifiers). */
export type ComparedFields<F> = { [N in ComparedName<F>]: ValueOf<F[N]> };

/** The compared fields of a table, in table order. */
export function comparedNames(fields: FieldTable): string[] {
  return Object.entries(fields)
    .filter(([, spec]) => spec.compared)
    .map(([name]) => name);
}

/** The link fields of a table, in table order. */
export function linkNames(fields: FieldTable): string[] {
  return Object.entries(fields)
    .filter(([, spec]) => spec.type === 'link')
    .map(([name]) => name);
}
