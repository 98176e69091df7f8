/**
 * The act step of a round as groups of siblings (docs/architecture.md, "Passes"), pure and deterministic:
 *
 * - `groupsOf`: the objects to create go into realizeObjects groups, those to recover or wait for into settleObjects
 *   groups; a group's members share parent, kind and action, at most `maxMembers` of them, in plan order. Objects
 *   that other objects of the plan wait for (a port's Backend, a Frontend) are spread over up to PARENT_GROUPS groups
 *   per family, so that each one's children start when it is ready, not when its slowest sibling is.
 * - `GroupSchedule`: which group starts next. A group starts once its parent is ready: the load balancer at once, a
 *   kept object once its own parent is ready, a created or awaited object when its group returns it ready. A parent
 *   that will not be ready this round (its group failed, or it did not deploy) leaves its children to the next round.
 */
import type { Kind, Plan, PlannedObject } from '../domain';

export interface Group {
  /** The key of the members' parent object; null: the load balancer itself. */
  parent: string | null;
  kind: Kind;
  /** Members to create (realizeObjects), else to recover or wait for (settleObjects). */
  creating: boolean;
  members: PlannedObject[];
}

/**
 * Families of parents are split into at most this many groups. A group returns when all its members are ready, and
 * only then do their children start: with a service's two ports' Backends in one group, the faster Backend's
 * Frontend and Servers waited for the slower one's deploy (about 3 % of the convergence time with deploys of 1-3 s,
 * docs/benchmarks.md). Each extra group is one more activity (three history events or more), so a service of
 * 1,024 ports still has 16 groups of Backends, not 1,024.
 */
export const PARENT_GROUPS = 16;

export function groupsOf(plan: Plan, maxMembers: number): Group[] {
  const parents = new Set(plan.objects.filter((p) => p.action.type !== 'keep').map((p) => p.desired.parent));
  const families = new Map<string, PlannedObject[]>();
  for (const p of plan.objects) {
    if (p.action.type === 'keep') continue;
    const family = `${p.desired.parent ?? ''}|${p.desired.kind}|${p.action.type === 'create' ? 'create' : 'settle'}`;
    const members = families.get(family);
    if (members) members.push(p);
    else families.set(family, [p]);
  }
  const groups: Group[] = [];
  for (const members of families.values()) {
    const first = members[0] as PlannedObject;
    const waitedFor = members.some((m) => parents.has(m.desired.key));
    const size = waitedFor ? Math.min(maxMembers, Math.ceil(members.length / PARENT_GROUPS)) : maxMembers;
    for (let i = 0; i < members.length; i += size) {
      groups.push({ parent: first.desired.parent, kind: first.desired.kind, creating: first.action.type === 'create', members: members.slice(i, i + size) });
    }
  }
  return groups;
}

/**
 * Which group may start next. A group is released when its parent is decided (ready or not): the load balancer at
 * once, a kept object together with its own parent, an object of a group when that group ends. Released groups
 * start in the order they were released (their parents' order, then plan order), those whose parent is not ready end
 * at once with no member ready, which releases their children in turn.
 */
export class GroupSchedule {
  /** The groups under each parent key (null: the load balancer), in plan order. */
  readonly #children = new Map<string | null, Group[]>();
  /** Kept objects under each parent key, and each kept object's identifier. */
  readonly #keptUnder = new Map<string | null, string[]>();
  readonly #kept = new Map<string, string>();
  /** Each decided object's identifier this round (null: not ready). */
  readonly #ids = new Map<string | null, string | null>();
  readonly #released: Group[] = [];

  constructor(plan: Plan, loadBalancer: string, maxMembers: number) {
    for (const g of groupsOf(plan, maxMembers)) this.#children.set(g.parent, [...(this.#children.get(g.parent) ?? []), g]);
    for (const p of plan.objects) {
      if (p.action.type !== 'keep') continue;
      this.#kept.set(p.desired.key, p.action.identifier);
      this.#keptUnder.set(p.desired.parent, [...(this.#keptUnder.get(p.desired.parent) ?? []), p.desired.key]);
    }
    this.#decide(null, loadBalancer);
  }

  /** The next group to start and its parent's identifier, or undefined while none is released. */
  next(): { group: Group; parentId: string } | undefined {
    for (let group = this.#released.shift(); group; group = this.#released.shift()) {
      const parentId = this.#ids.get(group.parent) ?? null;
      if (parentId !== null) return { group, parentId };
      this.ended(group, null);
    }
    return undefined;
  }

  /** A group ended: its members' identifiers (null: not ready); `ids` null: the group failed, none is ready. */
  ended(group: Group, ids: ReadonlyMap<string, string | null> | null): void {
    for (const p of group.members) this.#decide(p.desired.key, ids?.get(p.desired.key) ?? null);
  }

  /** Released groups not started yet are dropped (a cancelled round starts no further group). */
  drop(): void {
    this.#released.length = 0;
  }

  /** The identifier an object has this round: a string when ready, null when not, undefined while undecided. */
  idOf(key: string | null): string | null | undefined {
    return this.#ids.get(key);
  }

  #decide(key: string | null, id: string | null): void {
    this.#ids.set(key, id);
    this.#released.push(...(this.#children.get(key) ?? []));
    for (const kept of this.#keptUnder.get(key) ?? []) this.#decide(kept, id === null ? null : (this.#kept.get(kept) as string));
  }
}
