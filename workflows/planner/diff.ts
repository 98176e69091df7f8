/**
 * The one comparison every kind shares. A kind describes its compared fields as accessor functions (so the type
 * checker follows every field, unlike upstream's field-name strings), how to read its parent link, and how to
 * complete a desired object's fields with the identifier of the parent kept for it.
 */
import type { DesiredObject, FieldsOf, Kind, LinkField, ObservedObject } from './types';

export type DesiredOf<K extends Kind> = Extract<DesiredObject, { kind: K }>;
export type ObservedOf<K extends Kind> = Extract<ObservedObject, { kind: K }>;
/** A desired object's fields: everything but the parent link, which is known only once the parent exists. */
export type DesiredFields<K extends Kind> = Omit<FieldsOf[K], LinkField<K>>;

/** Values a compared field can hold; compared with `===`, so strings are compared byte for byte. */
export type Comparable = string | number | boolean;

export interface KindRules<K extends Kind> {
  kind: K;
  /**
   * Every field that must be equal for an existing object to stand for a desired one (docs/spec.md#compared-fields).
   */
  compared: readonly ((fields: FieldsOf[K]) => Comparable)[];
  /** The identifier of the object this one links to (its parent), or null for a kind without a parent. */
  parentOf: (fields: FieldsOf[K]) => string | null;
  /** The desired fields with the link filled in from the kept parent's identifier ('' for kinds without one). */
  complete: (fields: DesiredFields<K>, parentId: string) => FieldsOf[K];
}

export function sameFields<K extends Kind>(rules: KindRules<K>, a: FieldsOf[K], b: FieldsOf[K]): boolean {
  return rules.compared.every((read) => read(a) === read(b));
}

/** Whether existing fields stand for desired ones whose parent was kept as `parentId`. */
export function matchesWith<K extends Kind>(
  rules: KindRules<K>,
  desired: DesiredFields<K>,
  observed: FieldsOf[K],
  parentId: string,
): boolean {
  return sameFields(rules, rules.complete(desired, parentId), observed);
}
