/**
 * The continue-as-new inputs of the two entities: the state that crosses builds (with the messages of
 * contract/messages.ts). Here, apart from the loops, so that the loops of the previous release (workflows/legacy/) and
 * today's both name them without importing each other.
 */
import { ApplicationFailure } from '@temporalio/common';
import { workflowInfo } from '@temporalio/workflow';
import { FAILURE_TYPES, type SchemaVersion } from '../contract';
import { formatIssues, isPoolName, isServiceUid, POOL_NAME_RULE, SERVICE_UID_RULE, validateMembers } from '../domain';
import { fieldsOf, invalidInput, onlyKnownFields, optionalInteger } from './input';
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

/**
 * The fields of a `v: 2` serviceController input. The previous release's inputs (no `v`) run its loop
 * (workflows/legacy/dispatch.ts) and are not read here.
 */
export const CONTROLLER_INPUT_FIELDS = ['v', 'serviceUid', 'state', 'historyLimit'] as const;

/** The fields of a controller snapshot (`state`) this build writes, or reads from one of the previous release. */
export const CONTROLLER_SNAPSHOT_FIELDS = ['spec', 'revision', 'passCount', 'lastResult', 'work', 'supersededCreates', 'poolIndex', 'pool', 'subscribedPool', 'poolMissing', 'resubscribe'] as const;
/**
 * The flat work fields the previous release wrote beside `work` (test/fixtures/previous-release/controller-input.json):
 * accepted, and read only where `work` is absent (workflows/controller-phase.ts).
 */
export const RETIRED_CONTROLLER_SNAPSHOT_FIELDS = ['failures', 'dirty', 'deleting', 'retryAt'] as const;

export const POOL_INPUT_FIELDS = ['v', 'name', 'state', 'historyLimit', 'roundPageSize', 'minRunMs'] as const;
/** Written by the previous release's pool loop when it continues as new into `v: 2` (workflows/legacy/pool.ts). */
export const RETIRED_POOL_INPUT_FIELDS = ['deliveryRound'] as const;
/** The fields of a pool snapshot this build writes (workflows/pool-members.ts). */
export const POOL_SNAPSHOT_FIELDS = ['servers', 'revision', 'rounds', 'round', 'delivered', 'roundRunning', 'resend', 'log'] as const;
/** Those of the pool loop before thin pools (workflows/legacy/pool-state.ts): its subscribers are dropped. */
export const RETIRED_POOL_SNAPSHOT_FIELDS = ['subscribers', 'owed', 'sent'] as const;

type Check = (v: unknown) => boolean;
const isObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);
const count: Check = (v) => typeof v === 'number' && Number.isInteger(v) && v >= 0;
const orNull = (c: Check): Check => (v) => v === null || c(v);
const bool: Check = (v) => typeof v === 'boolean';
const text: Check = (v) => typeof v === 'string';
const list: Check = (v) => Array.isArray(v);
const strings: Check = (v) => Array.isArray(v) && v.every((x) => typeof x === 'string');

/** Each field's type: what a wrong value is told it must be. Absent fields are checked by `required` only. */
type Shape = Record<string, [Check, string]>;

const CONTROLLER_SNAPSHOT_SHAPE: Shape = {
  revision: [count, 'an integer from 0'],
  passCount: [count, 'an integer from 0'],
  lastResult: [orNull(isObject), "a pass's result or null"],
  work: [(v) => isObject(v) && typeof (v as { tag?: unknown }).tag === 'string', 'a phase {tag, ...}'],
  supersededCreates: [strings, 'a list of Engine identifiers'],
  poolIndex: [orNull(isObject), 'a pool index or null'],
  pool: [orNull(isObject), "a pool's members or null"],
  subscribedPool: [orNull(text), 'a pool name or null'],
  poolMissing: [orNull(text), 'a pool name or null'],
  resubscribe: [bool, 'true or false'],
  failures: [count, 'an integer from 0'],
  dirty: [bool, 'true or false'],
  deleting: [bool, 'true or false'],
  retryAt: [orNull((v) => typeof v === 'number'), 'a time in ms or null'],
};

const POOL_SNAPSHOT_SHAPE: Shape = {
  servers: [list, 'a list of members {name, address}'],
  revision: [count, 'an integer from 0'],
  rounds: [count, 'an integer from 0'],
  round: [orNull((v) => isObject(v) && text((v as { workflowId?: unknown }).workflowId) && count((v as { revision?: unknown }).revision)), 'a round {workflowId, revision, number} or null'],
  delivered: [count, 'an integer from 0'],
  roundRunning: [bool, 'true or false'],
  resend: [bool, 'true or false'],
  log: [list, 'a list of changes'],
  subscribers: [isObject, 'an object of subscribers'],
  owed: [strings, 'a list of service uids'],
  sent: [isObject, 'an object of revisions'],
};

/**
 * A snapshot (`state`) checked for its fields (`known` and `retired` only), their types and the `required` ones;
 * what it holds beyond that is read by the state class that restores it. Throws InvalidInput naming `where.state.<field>`.
 */
function checkSnapshot(value: unknown, where: string, known: readonly string[], retired: readonly string[], required: readonly string[], shape: Shape): void {
  if (!isObject(value)) throw invalidInput(`${where}: state: must be a snapshot, an object with ${required.join(', ')}`);
  const fields = value as Record<string, unknown>;
  for (const name of Object.keys(fields)) {
    if (!known.includes(name) && !retired.includes(name)) throw invalidInput(`${where}: state.${name}: not a field of its snapshot (it takes ${known.join(', ')})`);
  }
  for (const name of required) if (!(name in fields)) throw invalidInput(`${where}: state.${name}: required`);
  for (const [name, v] of Object.entries(fields)) {
    const [ok, what] = shape[name] ?? [() => true, ''];
    if (v !== undefined && !ok(v)) throw invalidInput(`${where}: state.${name}: must be ${what}`);
  }
}

/** A `v: 2` serviceController input read: every field known, of its type (InvalidInput naming the field otherwise). */
export function readControllerInput(input: unknown): { serviceUid: string; state?: ControllerSnapshot; historyLimit?: number } {
  const w = 'serviceController';
  const fields = fieldsOf(input, w, '"v" and "serviceUid"');
  onlyKnownFields(fields, w, CONTROLLER_INPUT_FIELDS);
  if (!isServiceUid(fields.serviceUid)) throw invalidInput(`${w}: serviceUid: ${SERVICE_UID_RULE}`);
  const historyLimit = optionalInteger(fields, 'historyLimit', w, 20, 50_000);
  if (fields.state !== undefined && fields.state !== null) {
    checkSnapshot(fields.state, w, CONTROLLER_SNAPSHOT_FIELDS, RETIRED_CONTROLLER_SNAPSHOT_FIELDS, ['spec', 'revision', 'passCount', 'lastResult'], CONTROLLER_SNAPSHOT_SHAPE);
  }
  return {
    serviceUid: fields.serviceUid as string,
    ...(fields.state ? { state: fields.state as ControllerSnapshot } : {}),
    ...(historyLimit !== undefined ? { historyLimit } : {}),
  };
}

/** A `v: 2` serverPool input read: every field known, of its type (InvalidInput naming the field otherwise). */
export function readPoolInput(input: unknown): { name: string; state?: ServerPoolSnapshot; historyLimit?: number; roundPageSize?: number; minRunMs?: number } {
  const w = 'serverPool';
  const fields = fieldsOf(input, w, '"v" and "name"');
  onlyKnownFields(fields, w, POOL_INPUT_FIELDS, RETIRED_POOL_INPUT_FIELDS);
  if (!isPoolName(fields.name)) throw invalidInput(`${w}: name: ${POOL_NAME_RULE}`);
  const historyLimit = optionalInteger(fields, 'historyLimit', w, 20, 50_000);
  const roundPageSize = optionalInteger(fields, 'roundPageSize', w, 1, 1_000);
  const minRunMs = optionalInteger(fields, 'minRunMs', w, 0, 60_000);
  if (fields.state !== undefined && fields.state !== null) {
    checkSnapshot(fields.state, w, POOL_SNAPSHOT_FIELDS, RETIRED_POOL_SNAPSHOT_FIELDS, ['servers', 'revision'], POOL_SNAPSHOT_SHAPE);
    const members = validateMembers((fields.state as { servers: unknown }).servers, 'state.servers');
    if (!members.ok) throw invalidInput(`${w}: invalid members:\n${formatIssues(members.issues)}`);
  }
  return {
    name: fields.name as string,
    ...(fields.state ? { state: fields.state as ServerPoolSnapshot } : {}),
    ...(historyLimit !== undefined ? { historyLimit } : {}),
    ...(roundPageSize !== undefined ? { roundPageSize } : {}),
    ...(minRunMs !== undefined ? { minRunMs } : {}),
  };
}

/**
 * Reads an entity's input, refusing what does not read (InvalidInput, which fails the run) when a client started the
 * run. The input of a run that continued as new is the snapshot the entity's previous run wrote: a refusal there is not
 * a caller's mistake but a build that cannot read its own entity's state (a release that skipped the one that learnt
 * a new field, or a roll-back past it). Failing the run would lose the entity with its spec, revision and pending
 * work; a plain error fails only the workflow task instead, which the server retries and the Web UI shows with this
 * message, until a worker of a build that reads the snapshot takes the run (docs/architecture.md, where it says which forms each build reads).
 */
export function readEntityInput<T>(read: () => T): T {
  if (workflowInfo().continuedFromExecutionRunId === undefined) return read();
  try {
    return read();
  } catch (err) {
    if (!(err instanceof ApplicationFailure) || err.type !== FAILURE_TYPES.invalidInput) throw err;
    throw new Error(`${err.message} (in the input its previous run wrote when it continued as new: this build cannot read it; the workflow task is retried until a worker of a build that reads it takes the run)`);
  }
}
