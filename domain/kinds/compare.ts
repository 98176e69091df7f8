/**
 * The one comparison every kind shares, driven by the kinds' field tables: an existing object stands for a desired
 * one when every compared field is equal (with `===`, so strings byte for byte), the desired object's link filled in
 * with the identifier kept for its parent.
 */
import type { DesiredObject, Kind, ObservedObject } from '../types';
import { COMPARED_FIELDS, KIND_DEFINITIONS, type FieldsOf, type LinkField } from './registry';

/** A desired object's fields: everything but the parent link, which is known only once the parent exists. */
export type DesiredFields<K extends Kind> = Omit<FieldsOf[K], LinkField<K>>;

/** The field an object of `kind` names its parent in, or null for a kind without one. */
export function linkFieldOf(kind: Kind): string | null {
  return KIND_DEFINITIONS[kind].dependsOn;
}

/** The identifier an existing object links to (its parent), or null for a kind without a parent. */
export function parentIdOf(observed: ObservedObject): string | null {
  const link = linkFieldOf(observed.kind);
  return link === null ? null : String((observed.fields as Record<string, unknown>)[link]);
}

/** A desired object's fields completed with its parent's identifier: what createObject sends and matching compares. */
export function completeFields<K extends Kind>(kind: K, fields: DesiredFields<K>, parentId: string): FieldsOf[K] {
  const link = linkFieldOf(kind);
  return (link === null ? { ...fields } : { ...fields, [link]: parentId }) as FieldsOf[K];
}

/** Whether every compared field of `kind` is equal in `a` and `b`. */
export function sameFields<K extends Kind>(kind: K, a: FieldsOf[K], b: FieldsOf[K]): boolean {
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  return COMPARED_FIELDS[kind].every((name) => x[name] === y[name]);
}

/** Whether `observed` stands for `desired` when the desired object's parent was kept as `parentId`. */
export function matches(desired: DesiredObject, observed: ObservedObject, parentId: string): boolean {
  if (desired.kind !== observed.kind) return false;
  const want = completeFields(desired.kind, desired.fields as DesiredFields<Kind>, parentId);
  return sameFields(desired.kind, want, observed.fields);
}
