/**
 * An object's state as the activities read it: by id, else by type (activities/engine/state.ts). A state that is
 * neither is a contract break that waiting cannot fix: a clear, non-retryable failure naming the object, instead of a
 * readiness wait that polls an "Unknown" object until its policy runs out.
 */
import { ApplicationFailure } from '@temporalio/common';
import { KIND_TITLE, type Kind, type StateName } from '../domain';
import { stateName } from './engine';
import { FAILURE_TYPES } from '../contract';

export type KnownState = Exclude<StateName, 'Unknown'>;

export function stateOf(kind: Kind, object: { identifier: string; name: string; state: { id?: string | null; type?: number | null } }): KnownState {
  const name = stateName(object.state);
  if (name !== 'Unknown') return name;
  throw ApplicationFailure.create({
    type: FAILURE_TYPES.engineRejected,
    nonRetryable: true,
    message: `${KIND_TITLE[kind]} ${object.name} (${object.identifier}) has state ${JSON.stringify({ id: object.state.id, type: object.state.type })}: neither its id nor its type is one this worker knows (types 0 error, 1 ok, 2 pending)`,
  });
}
