/**
 * The reconciliation planner: desired objects and an observed snapshot in, an explicit plan out. Pure and
 * deterministic (it runs inside workflows); the same inputs always give the same plan, in the same order.
 */
import { compareText } from './desired';
import { DESTROY_RANK, KINDS, matches, parentIdOf } from './kinds';
import { classifyState } from './state';
import type {
  Action,
  DesiredObject,
  Destroy,
  FailedResourcesPolicy,
  Kind,
  ObservedObject,
  Plan,
  PlannedObject,
  Snapshot,
  StateClass,
} from './types';

/** Which of several matching objects is kept: the readiest (a ready object serves traffic now). */
const STATE_PREFERENCE: Record<StateClass, number> = { ok: 0, progressing: 1, failed: 2 };

/**
 * Plans one pass on one load balancer.
 *
 * Desired objects are matched in dependency order. A child can only match an existing object that links to the
 * identifier kept for its parent; when the parent is to be created, the child is created too. Only objects
 * tagged for the service are ever matched or destroyed; untagged ones are ignored entirely.
 *
 * Of several matches one is kept: the readiest (ok, then progressing, then failed), then the one with the most
 * existing children that match desired children (so fewer objects are replaced), then the smallest identifier.
 * The others are destroyed as duplicates, and every other tagged object as not desired.
 *
 * A kept object that failed is recovered in place under `recover`. Under `recreate` it is destroyed and created
 * again, and so is everything below it: its children link to the old identifier and can never match the new one.
 */
export function planLoadBalancer(desired: readonly DesiredObject[], snapshot: Snapshot, policy: FailedResourcesPolicy): Plan {
  const observed = new ObservedIndex(snapshot.objects.filter((o) => o.tagged));
  const childrenOf = groupBy(desired, (d) => d.parent);
  const actions = new Map<string, Action>();
  const taken = new Set<string>();
  const duplicates = new Set<string>();
  const recreated = new Set<string>();

  const decide = (d: DesiredObject): Action => {
    let parentId = '';
    if (d.parent !== null) {
      const parentAction = actions.get(d.parent);
      if (parentAction === undefined) {
        throw new Error(`planner: desired ${d.key} comes before its parent ${d.parent}; desired objects must be in dependency order`);
      }
      if (parentAction.type === 'create') return { type: 'create' };
      parentId = parentAction.identifier;
    }
    const children = groupBy(childrenOf.get(d.key) ?? [], (c) => nameKey(c.kind, c.fields.name));
    const ranked = observed
      .named(d.kind, d.fields.name)
      .filter((o) => !taken.has(o.identifier) && matches(d, o, parentId))
      .map((o) => ({ o, state: classifyState(o.state), children: matchingChildren(observed, o, children) }))
      .sort(
        (a, b) =>
          STATE_PREFERENCE[a.state] - STATE_PREFERENCE[b.state] ||
          b.children - a.children ||
          compareText(a.o.identifier, b.o.identifier),
      );
    const [best, ...others] = ranked;
    if (best === undefined) return { type: 'create' };
    taken.add(best.o.identifier);
    for (const other of others) {
      taken.add(other.o.identifier);
      duplicates.add(other.o.identifier);
    }
    const identifier = best.o.identifier;
    switch (best.state) {
      case 'ok':
        return { type: 'keep', identifier };
      case 'progressing':
        return { type: 'wait', identifier };
      case 'failed':
        if (policy === 'recover') return { type: 'recover', identifier };
        recreated.add(identifier);
        return { type: 'create' };
    }
  };

  const objects: PlannedObject[] = desired.map((d) => {
    const action = decide(d);
    actions.set(d.key, action);
    return { desired: d, action };
  });
  const kept = new Set<string>([...taken].filter((id) => !duplicates.has(id) && !recreated.has(id)));
  const created = new Set(objects.filter((p) => p.action.type === 'create').map((p) => nameKey(p.desired.kind, p.desired.name)));
  return {
    loadBalancer: snapshot.loadBalancer,
    objects,
    destroy: destroyList(observed, { kept, duplicates, recreated, created }),
  };
}

interface Outcome {
  /** Identifiers kept for a desired object (keep, wait or recover). */
  kept: ReadonlySet<string>;
  duplicates: ReadonlySet<string>;
  /** Failed objects destroyed under policy `recreate`. */
  recreated: ReadonlySet<string>;
  /** `nameKey`s of the desired objects this plan creates. */
  created: ReadonlySet<string>;
}

/**
 * Every tagged object not kept, with its reason, in destroy order. `parent replaced` means the object's parent
 * is destroyed and created again in this plan (recreated after a failure, or replaced because a compared field
 * drifted), so the object is replaced with it; an object whose parent simply goes away is `not desired`.
 */
function destroyList(observed: ObservedIndex, outcome: Outcome): Destroy[] {
  const reasons = new Map<string, Destroy['reason']>();
  for (const kind of KINDS) {
    for (const o of observed.ofKind(kind)) {
      if (outcome.kept.has(o.identifier)) continue;
      const parentId = parentIdOf(o);
      const parent = parentId === null ? undefined : observed.byId(parentId);
      const parentReplaced =
        parent !== undefined && reasons.has(parent.identifier) && outcome.created.has(nameKey(parent.kind, parent.fields.name));
      reasons.set(
        o.identifier,
        outcome.recreated.has(o.identifier)
          ? 'failed (recreate)'
          : outcome.duplicates.has(o.identifier)
            ? 'duplicate'
            : parentReplaced
              ? 'parent replaced'
              : 'not desired',
      );
    }
  }
  const destroy: Destroy[] = [];
  for (const [identifier, reason] of reasons) {
    const o = observed.byId(identifier);
    if (o !== undefined) destroy.push({ kind: o.kind, identifier, name: o.name, reason });
  }
  return destroy.sort(
    (a, b) => DESTROY_RANK[a.kind] - DESTROY_RANK[b.kind] || compareText(a.name, b.name) || compareText(a.identifier, b.identifier),
  );
}

/**
 * How many existing children of `candidate` would match one of the desired children (`byName`: by kind and name),
 * were it kept. A match has the same kind and name (both are compared fields), so each child is compared only with the
 * desired children of its name: a Backend with 1,000 Servers costs 1,000 comparisons, not a million (2.5 s of a
 * 4,108-object plan).
 */
function matchingChildren(observed: ObservedIndex, candidate: ObservedObject, byName: ReadonlyMap<string, DesiredObject[]>): number {
  if (byName.size === 0) return 0;
  return observed
    .linkingTo(candidate.identifier)
    .filter((child) => (byName.get(nameKey(child.kind, child.fields.name)) ?? []).some((d) => matches(d, child, candidate.identifier))).length;
}

function nameKey(kind: Kind, name: string): string {
  return `${kind}\u0000${name}`;
}

function groupBy<T, K>(items: readonly T[], key: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group === undefined) groups.set(k, [item]);
    else group.push(item);
  }
  return groups;
}

/** The tagged objects of a snapshot, indexed so planning stays linear in practice (no object-by-object scans). */
class ObservedIndex {
  private readonly ids = new Map<string, ObservedObject>();
  private readonly byName: Map<string, ObservedObject[]>;
  private readonly byKind: Map<Kind, ObservedObject[]>;
  private readonly byParent: Map<string | null, ObservedObject[]>;

  constructor(objects: readonly ObservedObject[]) {
    // A snapshot should not repeat an identifier; if it does, the first copy is the one planned for.
    for (const o of objects) if (!this.ids.has(o.identifier)) this.ids.set(o.identifier, o);
    const unique = [...this.ids.values()];
    this.byName = groupBy(unique, (o) => nameKey(o.kind, o.fields.name));
    this.byKind = groupBy(unique, (o) => o.kind);
    this.byParent = groupBy(unique, (o) => parentIdOf(o));
  }

  byId(identifier: string): ObservedObject | undefined {
    return this.ids.get(identifier);
  }

  named(kind: Kind, name: string): ObservedObject[] {
    return this.byName.get(nameKey(kind, name)) ?? [];
  }

  ofKind(kind: Kind): ObservedObject[] {
    return this.byKind.get(kind) ?? [];
  }

  linkingTo(identifier: string): ObservedObject[] {
    return this.byParent.get(identifier) ?? [];
  }
}
