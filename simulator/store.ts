/**
 * The simulator's object store with the indexes that keep every request independent of the total number of
 * objects: by identifier, by kind, by indexed field value (links and modes: list filters and referential
 * integrity), and by tag. An object being deleted either leaves every index at once and stays readable by
 * identifier only (the ideal Engine), or stays indexed until it is dropped (`deleteListed`, the real Engine).
 * An object's tags and the tag index may differ for a while (tag index lag): `o.tags` is what the resource
 * carries, the index is what `resource.json?tag_name=` lists.
 */
import { type Fields, KIND_SPECS, KINDS, type Kind, referrersOf, type SimObject } from './model';
import { EMPTY, fromArray, fromSet, OrderedSet, type QueryResult } from './ordered-set';

export { OrderedSet, type QueryResult } from './ordered-set';

function indexKey(kind: Kind, field: string, value: unknown): string {
  return `${kind}\u0000${field}\u0000${String(value)}`;
}

function indexedFields(kind: Kind): string[] {
  return KIND_SPECS[kind].fields.filter((f) => f.index).map((f) => f.key);
}

const INDEXED: Record<Kind, string[]> = Object.fromEntries(KINDS.map((k) => [k, indexedFields(k)])) as Record<Kind, string[]>;
const REFERRERS: Record<Kind, { kind: Kind; field: string }[]> = Object.fromEntries(
  KINDS.map((k) => [k, referrersOf(k)]),
) as Record<Kind, { kind: Kind; field: string }[]>;

export class Store {
  /** Every object, including those being deleted, in creation order. */
  readonly byId = new Map<string, SimObject>();
  /** Every indexed object (not being deleted, or being deleted but still listed): the Core resource list. */
  readonly live = new OrderedSet();
  private readonly byKind = new Map<Kind, OrderedSet>(KINDS.map((k) => [k, new OrderedSet()]));
  private readonly byField = new Map<string, OrderedSet>();
  private readonly byTag = new Map<string, OrderedSet>();
  /** Identifier -> the tags the index lists it under (differs from `o.tags` while the index lags). */
  private readonly indexedTags = new Map<string, Set<string>>();
  /** Tag name -> tag identifier, stable for the life of the store (and the state file). */
  readonly tagIds = new Map<string, string>();

  constructor(private readonly newTagId: () => string) {}

  get(id: string): SimObject | undefined {
    return this.byId.get(id);
  }

  /** The object unless it is being deleted. */
  getLive(id: string): SimObject | undefined {
    const o = this.byId.get(id);
    return o && !o.deleting ? o : undefined;
  }

  nameOf = (id: string): string => this.byId.get(id)?.name ?? '';

  kindSet(kind: Kind): OrderedSet {
    return this.byKind.get(kind) ?? EMPTY;
  }

  private fieldSet(key: string, create: boolean): OrderedSet | undefined {
    let s = this.byField.get(key);
    if (!s && create) {
      s = new OrderedSet();
      this.byField.set(key, s);
    }
    return s;
  }

  private indexFields(o: SimObject): void {
    for (const f of INDEXED[o.kind]) this.fieldSet(indexKey(o.kind, f, o.fields[f]), true)?.add(o);
  }

  private unindexFields(o: SimObject): void {
    for (const f of INDEXED[o.kind]) {
      const key = indexKey(o.kind, f, o.fields[f]);
      const s = this.byField.get(key);
      if (s) {
        s.delete(o);
        if (s.size === 0) this.byField.delete(key);
      }
    }
  }

  insert(o: SimObject): void {
    this.byId.set(o.identifier, o);
    if (o.deleting) return;
    this.live.add(o);
    this.kindSet(o.kind).add(o);
    this.indexFields(o);
    for (const t of o.tags) this.indexTag(o, t);
  }

  /** In lists, filters and the tag index. */
  isIndexed(o: SimObject): boolean {
    return this.live.has(o.identifier) && this.byId.get(o.identifier) === o;
  }

  /** Replaces name and fields, keeping the field indexes in step. */
  setFields(o: SimObject, name: string, fields: Fields): void {
    const indexed = this.isIndexed(o);
    if (indexed) this.unindexFields(o);
    o.name = name;
    o.fields = fields;
    if (indexed) this.indexFields(o);
  }

  /** Deletion accepted: out of every list and index at once, unless `listed` keeps it there until dropped. */
  markDeleting(o: SimObject, listed: boolean): void {
    o.deleting = true;
    if (!listed) this.unindex(o);
  }

  private unindex(o: SimObject): void {
    if (!this.live.delete(o)) return;
    this.kindSet(o.kind).delete(o);
    this.unindexFields(o);
    for (const t of [...(this.indexedTags.get(o.identifier) ?? [])]) this.untagIndex(o, t);
  }

  drop(o: SimObject): void {
    if (this.byId.get(o.identifier) !== o) return;
    this.unindex(o);
    this.byId.delete(o.identifier);
  }

  clear(): void {
    this.byId.clear();
    for (const s of this.byKind.values()) for (const o of [...s.values()]) s.delete(o);
    for (const o of [...this.live.values()]) this.live.delete(o);
    this.byField.clear();
    this.byTag.clear();
    this.indexedTags.clear();
    this.tagIds.clear();
  }

  /** Live objects that link to `o`, by kind and field (referential integrity). */
  dependents(o: SimObject): { kind: Kind; field: string; objects: OrderedSet }[] {
    const out: { kind: Kind; field: string; objects: OrderedSet }[] = [];
    for (const r of REFERRERS[o.kind]) {
      const s = this.byField.get(indexKey(r.kind, r.field, o.identifier));
      if (s && s.size > 0) out.push({ kind: r.kind, field: r.field, objects: s });
    }
    return out;
  }

  // --- tags -------------------------------------------------------------------------------------------------

  private tagSet(tag: string, create: boolean): OrderedSet | undefined {
    let s = this.byTag.get(tag);
    if (!s && create) {
      s = new OrderedSet();
      this.byTag.set(tag, s);
    }
    if (create && !this.tagIds.has(tag)) this.tagIds.set(tag, this.newTagId());
    return s;
  }

  private untagIndex(o: SimObject, tag: string): void {
    const mine = this.indexedTags.get(o.identifier);
    if (mine) {
      mine.delete(tag);
      if (mine.size === 0) this.indexedTags.delete(o.identifier);
    }
    const s = this.byTag.get(tag);
    if (!s) return;
    s.delete(o);
    if (s.size === 0) this.byTag.delete(tag);
  }

  tagId(tag: string): string {
    let id = this.tagIds.get(tag);
    if (!id) {
      id = this.newTagId();
      this.tagIds.set(tag, id);
    }
    return id;
  }

  /** False when already tagged. The index follows now, or later through `syncTag` (tag index lag). */
  addTag(o: SimObject, tag: string, indexNow = true): boolean {
    if (o.tags.has(tag)) return false;
    o.tags.add(tag);
    this.tagId(tag);
    if (indexNow) this.syncTag(o, tag);
    return true;
  }

  /** False when not tagged. The index follows now, or later through `syncTag`. */
  removeTag(o: SimObject, tag: string, indexNow = true): boolean {
    if (!o.tags.delete(tag)) return false;
    if (indexNow) this.syncTag(o, tag);
    return true;
  }

  /** Brings the index in step with the object for one tag (a no-op for an object out of the index). */
  syncTag(o: SimObject, tag: string): void {
    if (o.tags.has(tag) && this.isIndexed(o)) this.indexTag(o, tag);
    else this.untagIndex(o, tag);
  }

  private indexTag(o: SimObject, tag: string): void {
    this.tagSet(tag, true)?.add(o);
    let mine = this.indexedTags.get(o.identifier);
    if (!mine) {
      mine = new Set();
      this.indexedTags.set(o.identifier, mine);
    }
    mine.add(tag);
  }

  /** Indexed objects listed under `tag`, or undefined when none is. */
  tagged(tag: string): OrderedSet | undefined {
    const s = this.byTag.get(tag);
    return s && s.size > 0 ? s : undefined;
  }

  // --- lists ------------------------------------------------------------------------------------------------

  /**
   * Live objects of `kind` matching every filter (AND). Indexed filters pick the smallest candidate set; the
   * others are checked on those candidates only. Keys that are not fields of the kind are ignored.
   */
  query(kind: Kind, filters: [string, string][]): QueryResult {
    const spec = KIND_SPECS[kind];
    const known = filters.filter(([k]) => k === 'name' || k === 'identifier' || spec.fields.some((f) => f.key === k));
    if (known.length === 0) return fromSet(this.kindSet(kind));

    let best: OrderedSet | undefined;
    let bestIdx = -1;
    known.forEach(([k, v], i) => {
      if (!INDEXED[kind].includes(k)) return;
      const s = this.byField.get(indexKey(kind, k, v)) ?? EMPTY;
      if (!best || s.size < best.size) {
        best = s;
        bestIdx = i;
      }
    });
    const rest = known.filter((_, i) => i !== bestIdx);
    if (best && rest.length === 0) return fromSet(best);

    let candidates: Iterable<SimObject>;
    const idFilter = rest.find(([k]) => k === 'identifier');
    if (idFilter) {
      const o = this.byId.get(idFilter[1]);
      candidates = o && o.kind === kind && this.isIndexed(o) ? [o] : [];
    } else {
      candidates = (best ?? this.kindSet(kind)).values();
    }
    const out: SimObject[] = [];
    for (const o of candidates) {
      if (rest.every(([k, v]) => matches(o, k, v))) out.push(o);
    }
    return fromArray(out);
  }

  tagQuery(tag: string): QueryResult | undefined {
    const s = this.tagged(tag);
    return s ? fromSet(s) : undefined;
  }

  liveQuery(): QueryResult {
    return fromSet(this.live);
  }
}

function matches(o: SimObject, key: string, value: string): boolean {
  if (key === 'name') return o.name === value;
  if (key === 'identifier') return o.identifier === value;
  const v = o.fields[key];
  return v !== undefined && String(v) === value;
}
