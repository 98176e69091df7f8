/**
 * The continue-as-new inputs of the two entities: the state that crosses builds (with the messages of
 * contract/messages.ts). Here, apart from the loops, so that the loops of the previous release (workflows/legacy/) and
 * today's both name them without importing each other.
 */
import type { SchemaVersion } from '../contract';
import type { ControllerSnapshot } from './controller-state';
import type { ServerPoolSnapshot } from './pool-members';

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
  /** Carried over by continue-as-new (from the loops before thin pools too: their subscribers are dropped). */
  state?: ServerPoolSnapshot;
  /** Continue as new once the history has this many events (default POOL_CONTINUE_AS_NEW_EVENTS; tests set it low). */
  historyLimit?: number;
  /**
   * Read by the loops before thin pools only (subscribers signalled per delivery round); today's loop ignores it, and
   * passes `roundPageSize` to its rounds instead.
   */
  deliveryRound?: number;
  /** Services listed and signalled per page of a delivery round (default ROUND_PAGE_SIZE; tests set it low). */
  roundPageSize?: number;
  /**
   * The youngest a run continues as new, in ms (default POOL_MIN_RUN_MS). Tests on the time-skipping server set 0:
   * there the wait's timer fires only as the test's own waits skip time (test/fast/pools.test.ts's rotation took 81 s
   * with it, 1.3 s without).
   */
  minRunMs?: number;
}
