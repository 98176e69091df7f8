import type { StateName } from '../../domain/types';

/** Engine state ids (docs/engine-api.md#states). The id is what counts; titles are for people. */
export const STATE_NAME_BY_ID: Readonly<Record<string, Exclude<StateName, 'Unknown'>>> = Object.freeze({
  '0': 'Updating',
  '1': 'Updated',
  '2': 'DeploymentError',
  '3': 'Deployed',
  '4': 'NewlyCreated',
});

/** The name of a state id; an id this client does not know is `Unknown` (never guessed from the title). */
export function stateNameFromId(id: string): StateName {
  return Object.hasOwn(STATE_NAME_BY_ID, id) ? (STATE_NAME_BY_ID[id] ?? 'Unknown') : 'Unknown';
}

/** The name of an object's state: `stateName(backend.state)`. */
export function stateName(state: { readonly id: string }): StateName {
  return stateNameFromId(state.id);
}
