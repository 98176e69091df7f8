/**
 * The continue-as-new inputs of the two entities: the state that crosses builds (with the messages of
 * contract/messages.ts). Here, apart from the loops, so that the loops of the previous release (workflows/legacy/) and
 * today's both name them without importing each other.
 */
import type { SchemaVersion } from '../contract';
import type { ControllerSnapshot } from './controller-state';
import type { PoolSnapshot } from './pool-state';

export interface ServiceControllerInput {
  /** The input's schema version (contract/schema.ts); without it, a run of the previous release. */
  v: SchemaVersion;
  serviceUid: string;
  /** Carried over by continue-as-new. */
  state?: ControllerSnapshot;
  /** Continue as new once the history has this many events (default CONTINUE_AS_NEW_EVENTS; tests set it low). */
  historyLimit?: number;
}

export interface ServerPoolInput {
  /** The input's schema version (contract/schema.ts); without it, a run of the previous release. */
  v: SchemaVersion;
  name: string;
  /** Carried over by continue-as-new. */
  state?: PoolSnapshot;
  /** Continue as new once the history has this many events (default POOL_CONTINUE_AS_NEW_EVENTS; tests set it low). */
  historyLimit?: number;
  /** Subscribers signalled per delivery round, at most (default MAX_SIGNALS_AT_ONCE; tests set it low). */
  deliveryRound?: number;
}
