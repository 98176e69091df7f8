import type { StateName } from '../../domain/types';

/** Engine state ids (docs/engine-api.md#states). The id is what counts when the Engine sends one; titles are for people. */
export const STATE_NAME_BY_ID: Readonly<Record<string, Exclude<StateName, 'Unknown'>>> = Object.freeze({
  '0': 'Updating',
  '1': 'Updated',
  '2': 'DeploymentError',
  '3': 'Deployed',
  '4': 'NewlyCreated',
});

/**
 * State types (docs/engine-api.md#states): what the Go client decides readiness by, and all the real Engine sometimes sends.
 * A state known only by its type reads as the plainest state of that type. Updating is of type ok too, so an object
 * known only by type reads as ready while an update is applied, as it does for the Go client.
 */
export const STATE_NAME_BY_TYPE: Readonly<Record<number, Exclude<StateName, 'Unknown'>>> = Object.freeze({
  0: 'DeploymentError',
  1: 'Deployed',
  2: 'NewlyCreated',
});

/** The name of a state id; an id this client does not know is `Unknown` (never guessed from the title). */
export function stateNameFromId(id: string): StateName {
  return Object.hasOwn(STATE_NAME_BY_ID, id) ? (STATE_NAME_BY_ID[id] ?? 'Unknown') : 'Unknown';
}

/**
 * The name of an object's state: by its id when the id is known, by its type otherwise; `Unknown` when neither is
 * (the caller names the object in the error: activities/object-state.ts).
 */
export function stateName(state: { readonly id?: string | null; readonly type?: number | null }): StateName {
  const byId = typeof state.id === 'string' ? stateNameFromId(state.id) : 'Unknown';
  if (byId !== 'Unknown') return byId;
  return typeof state.type === 'number' && Object.hasOwn(STATE_NAME_BY_TYPE, state.type) ? (STATE_NAME_BY_TYPE[state.type] ?? 'Unknown') : 'Unknown';
}
