/**
 * Workflow input validation. Workflows can be started by any Temporal client, so they check their input again and
 * fail at once, non-retryably, naming the field; a bad input must never turn into a workflow task retried forever.
 */
import { ApplicationFailure } from '@temporalio/common';
import { workflowInfo } from '@temporalio/workflow';
import { formatIssues, KINDS, validateSpec } from '../domain';
import type { ObservedObject, Snapshot, ValidatedSpec } from '../domain/types';
import { FAILURE_TYPES, isReadMark, type ReadMark } from '../contract';

export function invalidInput(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: FAILURE_TYPES.invalidInput, message, nonRetryable: true });
}

function objectInput(input: unknown, workflow: string): Record<string, unknown> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw invalidInput(`${workflow}: input must be an object with a "spec" field`);
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

/** An optional list of Engine identifiers (`known`): strings of 1-64 letters, digits or dashes. */
export function optionalIdentifiers(fields: Record<string, unknown>, name: string, workflow: string): string[] | undefined {
  const v = fields[name];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.length > MAX_KNOWN || !v.every((x) => typeof x === 'string' && /^[0-9A-Za-z-]{1,64}$/.test(x))) {
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

/**
 * An optional observation handed down by the parent (`observed`: the objects reconcileService just read on this load
 * balancer), used as the first pass's snapshot instead of reading the Engine again. Checked only for shape: the
 * objects come from the retrieveState/observeService activities, never from a person.
 */
export function optionalObserved(fields: Record<string, unknown>, loadBalancer: string, workflow: string): Snapshot | undefined {
  const v = fields.observed;
  if (v === undefined || v === null) return undefined;
  const ok = (o: unknown) => typeof o === 'object' && o !== null && KINDS.includes((o as ObservedObject).kind) && typeof (o as ObservedObject).identifier === 'string' && typeof (o as ObservedObject).fields === 'object';
  if (!Array.isArray(v) || v.length > MAX_KNOWN || !v.every(ok)) {
    throw invalidInput(`${workflow}: observed: must be a list of observed Engine objects (kind, identifier, fields), as observeService returns them`);
  }
  return { loadBalancer, objects: v as ObservedObject[] };
}

