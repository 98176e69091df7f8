/**
 * Workflow input validation. Workflows can be started by any Temporal client, so they check their input again and
 * fail at once, non-retryably, naming the field; a bad input must never turn into a workflow task retried forever.
 */
import { ApplicationFailure } from '@temporalio/common';
import { workflowInfo } from '@temporalio/workflow';
import { formatIssues, KINDS, validateSpec } from '../domain';
import type { OutlinedDestroy, PlanOutline } from '../domain';
import type { ValidatedSpec } from '../domain/types';
import { FAILURE_TYPES, isReadMark, type ReadMark } from '../contract';

export function invalidInput(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: FAILURE_TYPES.invalidInput, message, nonRetryable: true });
}

function objectInput(input: unknown, workflow: string): Record<string, unknown> {
  return fieldsOf(input, workflow, 'a "spec" field');
}

/** The fields of an input that must be an object (a JSON object, not a list or null); `what` says what it holds. */
export function fieldsOf(input: unknown, workflow: string, what: string): Record<string, unknown> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw invalidInput(`${workflow}: input must be an object with ${what}`);
  }
  return input as Record<string, unknown>;
}

/**
 * The validated spec of an input `{ spec, ... }` that a client sends (planService, and passes started directly): the
 * spec document validated, issues reported with the field path `spec.<path>`.
 */
export function specOf(input: unknown, workflow: string): { spec: ValidatedSpec; fields: Record<string, unknown> } {
  const fields = objectInput(input, workflow);
  if (!('spec' in fields)) throw invalidInput(`${workflow}: spec: required`);
  const result = validateSpec(fields.spec);
  if (!result.ok) {
    const prefixed = result.issues.map((i) => ({ ...i, path: i.path ? `spec.${i.path}` : 'spec' }));
    throw invalidInput(`${workflow}: invalid spec:\n${formatIssues(prefixed)}`);
  }
  return { spec: resolvedOnly(result.spec, workflow), fields };
}

/**
 * The spec of a pass (reconcileService, reconcileLoadBalancer). Started as the child of a controller or a pass, the
 * run has a parent, and its spec is the value the controller's apply validated (or fullResync built and validated),
 * handed down as it is: taken without parsing it again (docs/architecture.md#where-the-spec-is-validated). Started
 * by a client directly (no parent), the input comes from outside, and its spec is a document validated here like
 * any other (specOf).
 */
export function passSpecOf(input: unknown, workflow: string): { spec: ValidatedSpec; fields: Record<string, unknown> } {
  if (workflowInfo().parent === undefined) return specOf(input, workflow);
  const fields = objectInput(input, workflow);
  if (typeof fields.spec !== 'object' || fields.spec === null) throw invalidInput(`${workflow}: spec: required`);
  return { spec: resolvedOnly(fields.spec as ValidatedSpec, workflow), fields };
}

function resolvedOnly(spec: ValidatedSpec, workflow: string): ValidatedSpec {
  if (spec.serverPool !== undefined) {
    // A pass must see servers: left unresolved, an empty list would destroy every Server object.
    throw invalidInput(`${workflow}: spec.serverPool: a pass needs the pool resolved into servers (the service controller does this); pass the servers instead`);
  }
  return spec;
}

/**
 * Refuses a field the workflow does not read: a misspelt or outdated field would otherwise be ignored without a word.
 * `retired` are fields an earlier build's parent still sends while it runs (a pass of the previous release starting
 * its children): accepted and not read.
 */
export function onlyKnownFields(fields: Record<string, unknown>, workflow: string, known: readonly string[], retired: readonly string[] = []): void {
  for (const name of Object.keys(fields)) {
    if (known.includes(name) || retired.includes(name)) continue;
    throw invalidInput(`${workflow}: ${name}: not a field of its input (it takes ${known.join(', ')})`);
  }
}

export function optionalInteger(fields: Record<string, unknown>, name: string, workflow: string, min: number, max: number): number | undefined {
  const v = fields[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw invalidInput(`${workflow}: ${name}: must be an integer from ${min} to ${max}`);
  }
  return v;
}

export function loadBalancerId(fields: Record<string, unknown>, workflow: string): string {
  const v = fields.loadBalancer;
  if (typeof v !== 'string' || v === '' || v.includes('/') || v.length > 128) {
    throw invalidInput(`${workflow}: loadBalancer: must be a non-empty identifier without "/"`);
  }
  return v;
}

/** At most this many identifiers in `known`: a service's objects on its load balancers, with a wide margin. */
export const MAX_KNOWN = 10_000;

const isIdentifier = (x: unknown) => typeof x === 'string' && /^[0-9A-Za-z-]{1,64}$/.test(x);

/** An optional list of Engine identifiers (`known`): strings of 1-64 letters, digits or dashes. */
export function optionalIdentifiers(fields: Record<string, unknown>, name: string, workflow: string): string[] | undefined {
  const v = fields[name];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.length > MAX_KNOWN || !v.every(isIdentifier)) {
    throw invalidInput(`${workflow}: ${name}: must be a list of at most ${MAX_KNOWN} Engine identifiers`);
  }
  return v as string[];
}

/** An optional mark of a worker's clock (contract/payloads.ts, ReadMark), e.g. `observedSince`. */
export function optionalReadMark(fields: Record<string, unknown>, name: string, workflow: string): ReadMark | undefined {
  const v = fields[name];
  if (v === undefined || v === null) return undefined;
  if (!isReadMark(v)) throw invalidInput(`${workflow}: ${name}: must be a read mark {reader, at} as an observation activity returns it`);
  return { reader: v.reader, at: v.at };
}

export function optionalBoolean(fields: Record<string, unknown>, name: string, workflow: string): boolean | undefined {
  const v = fields[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw invalidInput(`${workflow}: ${name}: must be true or false`);
  return v;
}

const OUTLINED_TYPES: readonly string[] = ['keep', 'wait', 'recover'];
const DESTROY_REASONS: readonly string[] = ['duplicate', 'not desired', 'failed (recreate)', 'parent replaced'];
const isName = (v: unknown) => typeof v === 'string' && v.length <= 256;

/**
 * An optional outline of the parent's plan of this load balancer (`outline`, domain/plan-outline.ts): the first round
 * acts on it instead of reading the Engine and planning again. Checked for shape and bounds: it comes from the
 * planObservedService activity, never from a person; whether it fits the spec is planOfOutline's to say.
 */
export function optionalOutline(fields: Record<string, unknown>, workflow: string): PlanOutline | undefined {
  const v = fields.outline;
  if (v === undefined || v === null) return undefined;
  const o = v as { actions?: unknown; creates?: unknown; destroy?: unknown };
  const action = (a: unknown) => Array.isArray(a) && a.length === 3 && OUTLINED_TYPES.includes(a[0] as string) && isIdentifier(a[1]) && isName(a[2]);
  const creates = typeof o.creates === 'number' && Number.isInteger(o.creates) && o.creates >= 0 && o.creates <= MAX_KNOWN;
  const destroy = (d: unknown) => {
    const x = d as OutlinedDestroy | null;
    return typeof x === 'object' && x !== null && KINDS.includes(x.kind) && isIdentifier(x.identifier) && isName(x.name) && DESTROY_REASONS.includes(x.reason) && isName(x.state);
  };
  const actions = typeof o === 'object' && o !== null && typeof o.actions === 'object' && o.actions !== null && !Array.isArray(o.actions) ? Object.values(o.actions) : null;
  if (actions === null || !creates || actions.length > MAX_KNOWN || !actions.every(action) || !Array.isArray(o.destroy) || o.destroy.length > MAX_KNOWN || !o.destroy.every(destroy)) {
    throw invalidInput(`${workflow}: outline: must be a plan's outline {actions, creates, destroy} as planObservedService returns it`);
  }
  return v as PlanOutline;
}

