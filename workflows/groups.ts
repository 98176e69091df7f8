/**
 * The act step of a round as groups of siblings (docs/architecture.md, "Passes"), pure and deterministic:
 *
 * - `groupsOf`: the objects to create go into realizeObjects groups, those to recover or wait for into settleObjects
 *   groups; a group's members share parent, kind and action, at most `maxMembers` of them, in plan order.
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

export function groupsOf(plan: Plan, maxMembers: number): Group[] {
  const groups = new Map<string, Group>();
  const sizes = new Map<string, number>();
  for (const p of plan.objects) {
    if (p.action.type === 'keep') continue;
    const creating = p.action.type === 'create';
    const family = `${p.desired.parent ?? ''}|${p.desired.kind}|${creating ? 'create' : 'settle'}`;
    const n = sizes.get(family) ?? 0;
    sizes.set(family, n + 1);
    const key = `${family}|${Math.floor(n / maxMembers)}`;
    let group = groups.get(key);
    if (!group) {
      group = { parent: p.desired.parent, kind: p.desired.kind, creating, members: [] };
      groups.set(key, group);
    }
    group.members.push(p);
  }
  return [...groups.values()];
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
