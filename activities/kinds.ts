/**
 * How each LBaaS kind maps between the Engine's objects and the planner's view of them.
 */
import type { FieldsOf, Kind, ObservedObject } from '../workflows/planner/types';
import { stateName, type EngineObjectMap } from './engine';

/** Core resource type identifiers of the LBaaS kinds (docs/engine-api.md#core-resources-and-tags). */
export const RESOURCE_TYPE_KIND: Readonly<Record<string, Kind>> = {
  da9d14b9d95840c08213de67f9cee6e2: 'frontend',
  '33164a3066a04a52be43c607f0c5dd8c': 'backend',
  bd24def982aa478fb3352cb5f49aab47: 'bind',
  '01f321a4875446409d7d8469503a905f': 'server',
};

/** The field that holds each kind's parent link, and the filter that lists a parent's children. */
export const PARENT_FIELD: Readonly<Record<Kind, 'load_balancer' | 'frontend' | 'backend'>> = {
  backend: 'load_balancer',
  frontend: 'load_balancer',
  bind: 'frontend',
  server: 'backend',
};

/** The compared fields of an Engine object, links reduced to identifiers. */
export function fieldsOf<K extends Kind>(kind: K, object: EngineObjectMap[K]): FieldsOf[K] {
  const o = object as EngineObjectMap[Kind];
  switch (kind) {
    case 'backend': {
      const b = o as EngineObjectMap['backend'];
      return { name: b.name, mode: b.mode, health_check: b.health_check, load_balancer: b.load_balancer.identifier } as FieldsOf[K];
    }
    case 'frontend': {
      const f = o as EngineObjectMap['frontend'];
      return { name: f.name, mode: f.mode, load_balancer: f.load_balancer.identifier, default_backend: f.default_backend.identifier } as FieldsOf[K];
    }
    case 'bind': {
      const b = o as EngineObjectMap['bind'];
      return { name: b.name, address: b.address, port: b.port, ssl: b.ssl, frontend: b.frontend.identifier } as FieldsOf[K];
    }
    default: {
      const s = o as EngineObjectMap['server'];
      return { name: s.name, ip: s.ip, port: s.port, check: s.check, backend: s.backend.identifier } as FieldsOf[K];
    }
  }
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

/** Whether every compared field of `actual` equals `desired`. */
export function sameFields(desired: object, actual: object): boolean {
  const a = actual as Record<string, unknown>;
  return Object.entries(desired).every(([k, v]) => a[k] === v);
}
