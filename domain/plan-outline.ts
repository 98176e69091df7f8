/**
 * A plan's outline: what a plan decided for one load balancer, without the desired objects it decided it for. The
 * desired objects are a pure function of the spec and the load balancer (domain/desired.ts), so whoever holds the spec
 * gets the whole plan back from its outline (`planOfOutline`) without planning again. An outline is what a pass hands
 * from its observation to the workflows (activities/plan-observed.ts): a plan repeats every desired object's fields,
 * an outline only what acts on existing objects: per desired object matched to one, its key, its action, the object's
 * identifier and the state observed (the status a pass reports); how many are to be created (every other desired
 * object); and each object to destroy. Its size grows with the objects there, not with the spec's fields.
 */
import type { Destroy, DesiredObject, Plan, Snapshot, StateName } from './types';

/** The action on an existing object, its identifier and the state it was observed in. */
export type OutlinedAction = readonly ['keep' | 'wait' | 'recover', string, StateName];

/** An object to destroy, with the state it was observed in. */
export interface OutlinedDestroy extends Destroy {
  state: StateName;
}

export interface PlanOutline {
  /** The action of every desired object matched to an existing one, by its key. */
  actions: Record<string, OutlinedAction>;
  /** How many desired objects are to be created: all the others. */
  creates: number;
  /** The plan's destroys, in order. */
  destroy: OutlinedDestroy[];
}

export function outlineOf(plan: Plan, snapshot: Snapshot): PlanOutline {
  const stateOf = new Map(snapshot.objects.map((o) => [o.identifier, o.state]));
  // A planned identifier always comes from the snapshot; Unknown only keeps the type honest.
  const state = (identifier: string): StateName => stateOf.get(identifier) ?? 'Unknown';
  const actions: Record<string, OutlinedAction> = {};
  let creates = 0;
  for (const { desired, action } of plan.objects) {
    if (action.type === 'create') creates++;
    else actions[desired.key] = [action.type, action.identifier, state(action.identifier)];
  }
  return { actions, creates, destroy: plan.destroy.map((d) => ({ ...d, state: state(d.identifier) })) };
}

/**
 * The plan an outline stands for, on the desired objects of the spec it was made from; null when it was made from
 * other desired objects (a key more or less: another spec, or a build that names keys otherwise), which only a new
 * plan can answer.
 */
export function planOfOutline(desired: readonly DesiredObject[], outline: PlanOutline, loadBalancer: string): Plan | null {
  if (Object.keys(outline.actions).length + outline.creates !== desired.length) return null;
  const objects: Plan['objects'] = [];
  let matched = 0;
  for (const d of desired) {
    const a = Object.hasOwn(outline.actions, d.key) ? outline.actions[d.key] : undefined;
    if (a !== undefined) matched++;
    objects.push({ desired: d, action: a === undefined ? { type: 'create' } : { type: a[0], identifier: a[1] } });
  }
  // A key of the outline that no desired object has: it was made from other desired objects.
  if (matched !== Object.keys(outline.actions).length) return null;
  return { loadBalancer, objects, destroy: outline.destroy.map(({ kind, identifier, name, reason }) => ({ kind, identifier, name, reason })) };
}

/** The identifiers and observed states an outline names: what a status book shows of them (workflows/status-book.ts). */
export function outlinedStates(outline: PlanOutline): { identifier: string; state: StateName }[] {
  const states: { identifier: string; state: StateName }[] = [];
  for (const a of Object.values(outline.actions)) states.push({ identifier: a[1], state: a[2] });
  for (const d of outline.destroy) states.push({ identifier: d.identifier, state: d.state });
  return states;
}

/** The size of an outline as JSON, in bytes (keys, identifiers, names and states are ASCII). */
export function outlineBytes(outline: PlanOutline): number {
  return JSON.stringify(outline).length;
}

/**
 * Bytes of outlines one observation hands back, in all: a fifth of a MiB keeps the observation's result (with its
 * pool indexes, domain/pool-index.ts) and a child's start (with the spec) well inside Temporal's 2 MiB payload limit.
 * About 2,500 existing objects fit, and any number to create; a load balancer whose outline does not fit is read again
 * by its child (docs/scaling.md, "Temporal's limits").
 */
export const MAX_OUTLINE_BYTES = 200 * 1024;
