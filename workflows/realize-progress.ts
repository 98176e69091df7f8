/**
 * Reading the `objectsProgress` signal (contract/messages.ts): what a running realizeObjects group has done so far (members created and tagged,
 * deploys ended), sent by the worker (worker/progress-signals.ts) to the group's own reconcileLoadBalancer run, which
 * cannot read the activity's heartbeat details. It only fills in the workflow's per-object status and its known
 * identifiers; the group's result stays what the reconciliation acts on.
 */
import type { ObjectsProgress } from '../contract';
import type { StateName } from '../domain/types';

const STATES: ReadonlySet<string> = new Set<StateName>(['Updating', 'Updated', 'DeploymentError', 'Deployed', 'NewlyCreated', 'Unknown']);
/** At most this many objects per report: a group is the siblings under one parent, far fewer. */
const MAX_OBJECTS = 1_000;

/**
 * The report when it is well-formed, else null. Any Temporal client can signal a workflow and a signal has no answer
 * to carry an error, so a malformed one is ignored rather than trusted.
 */
export function objectsProgressOf(raw: unknown): ObjectsProgress | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const { pass, objects } = raw as Record<string, unknown>;
  if (typeof pass !== 'number' || !Number.isInteger(pass) || !Array.isArray(objects) || objects.length > MAX_OBJECTS) return null;
  const ok = objects.every((o: unknown) => {
    if (typeof o !== 'object' || o === null) return false;
    const { key, identifier, state } = o as Record<string, unknown>;
    return typeof key === 'string' && typeof identifier === 'string' && /^[0-9A-Za-z-]{1,64}$/.test(identifier) && typeof state === 'string' && STATES.has(state);
  });
  return ok ? { pass, objects: objects as ObjectsProgress['objects'] } : null;
}
