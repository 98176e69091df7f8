/**
 * How the Engine's objects become the domain's view of them, read off each kind's field table (domain/kinds).
 */
import { COMPARED_FIELDS, KIND_DEFINITIONS, type FieldsOf, type Kind, type ObservedObject } from '../domain';
import { stateName, type EngineObjectMap } from './engine';

/** The compared fields of an Engine object, links reduced to identifiers. */
export function fieldsOf<K extends Kind>(kind: K, object: EngineObjectMap[K]): FieldsOf[K] {
  const table = KIND_DEFINITIONS[kind].fields as Readonly<Record<string, { type: string }>>;
  const read = object as unknown as Record<string, unknown>;
  const fields: Record<string, unknown> = {};
  for (const name of COMPARED_FIELDS[kind]) {
    const value = read[name];
    fields[name] = table[name]?.type === 'link' ? (value as { identifier: string }).identifier : value;
  }
  return fields as FieldsOf[K];
}

export function observed<K extends Kind>(kind: K, object: EngineObjectMap[K], tagged: boolean): ObservedObject {
  return {
    kind,
    identifier: object.identifier,
    name: object.name,
    state: stateName(object.state),
    tagged,
    fields: fieldsOf(kind, object),
  } as ObservedObject;
}
