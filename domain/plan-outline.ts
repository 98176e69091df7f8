/**
 * A plan's outline: what a plan decided for one load balancer, without the desired objects it decided it for. The
 * desired objects are a pure function of the spec and the load balancer (domain/desired.ts), so whoever holds the spec
 * gets the whole plan back from its outline (`planOfOutline`) without planning again. An outline is what a pass hands
 * from its observation to the workflows (activities/plan-observed.ts): a plan repeats every desired object's fields,
 * an outline only its key, its action, and for an existing object its identifier and the state observed (the status
 * a pass reports), and each object to destroy.
 */
import type { Destroy, DesiredObject, Plan, Snapshot, StateName } from './types';

/** `create`, or the action on an existing object: its identifier and the state it was observed in. */
export type OutlinedAction = readonly ['create'] | readonly ['keep' | 'wait' | 'recover', string, StateName];

/** An object to destroy, with the state it was observed in. */
export interface OutlinedDestroy extends Destroy {
  state: StateName;
}

export interface PlanOutline {
  /** Every desired object's action, by its key. */
  actions: Record<string, OutlinedAction>;
  /** The plan's destroys, in order. */
  destroy: OutlinedDestroy[];
}

export function outlineOf(plan: Plan, snapshot: Snapshot): PlanOutline {
  const stateOf = new Map(snapshot.objects.map((o) => [o.identifier, o.state]));
  // A planned identifier always comes from the snapshot; Unknown only keeps the type honest.
  const state = (identifier: string): StateName => stateOf.get(identifier) ?? 'Unknown';
  const actions: Record<string, OutlinedAction> = {};
  for (const { desired, action } of plan.objects) actions[desired.key] = action.type === 'create' ? ['create'] : [action.type, action.identifier, state(action.identifier)];
  return { actions, destroy: plan.destroy.map((d) => ({ ...d, state: state(d.identifier) })) };
}

/**
 * The plan an outline stands for, on the desired objects of the spec it was made from; null when it was made from
 * other desired objects (a key more or less: another spec, or a build that names keys otherwise), which only a new
 * plan can answer.
 */
export function planOfOutline(desired: readonly DesiredObject[], outline: PlanOutline, loadBalancer: string): Plan | null {
  if (Object.keys(outline.actions).length !== desired.length) return null;
  const objects: Plan['objects'] = [];
  for (const d of desired) {
    const a = Object.hasOwn(outline.actions, d.key) ? outline.actions[d.key] : undefined;
    if (a === undefined) return null;
    objects.push({ desired: d, action: a[0] === 'create' ? { type: 'create' } : { type: a[0], identifier: a[1] } });
  }
  return { loadBalancer, objects, destroy: outline.destroy.map(({ kind, identifier, name, reason }) => ({ kind, identifier, name, reason })) };
}

/** The identifiers and observed states an outline names: what a status book shows of them (workflows/status-book.ts). */
export function outlinedStates(outline: PlanOutline): { identifier: string; state: StateName }[] {
  const states: { identifier: string; state: StateName }[] = [];
  for (const a of Object.values(outline.actions)) if (a[0] !== 'create') states.push({ identifier: a[1], state: a[2] });
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
 * About 5,000 objects to create or 2,500 existing ones fit; a load balancer whose outline does not fit is read again
 * by its child (docs/scaling.md, "Temporal's limits").
 */
export const MAX_OUTLINE_BYTES = 200 * 1024;
