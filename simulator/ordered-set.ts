/** The store's building blocks: an insertion-ordered set of objects, and list results that page without copying. */
import type { SimObject } from './model';

/** Insertion-ordered set with O(1) add/delete and a cached array for paging. */
export class OrderedSet {
  private readonly map = new Map<string, SimObject>();
  private arr: SimObject[] | null = null;

  get size(): number {
    return this.map.size;
  }

  add(o: SimObject): void {
    if (this.map.has(o.identifier)) return;
    this.map.set(o.identifier, o);
    if (this.arr) this.arr.push(o);
  }

  delete(o: SimObject): boolean {
    const had = this.map.delete(o.identifier);
    if (had) this.arr = null;
    return had;
  }

  has(id: string): boolean {
    return this.map.has(id);
  }

  values(): IterableIterator<SimObject> {
    return this.map.values();
  }

  slice(offset: number, limit: number): SimObject[] {
    if (offset >= this.map.size) return [];
    if (!this.arr) this.arr = [...this.map.values()];
    return this.arr.slice(offset, offset + limit);
  }
}

export const EMPTY = new OrderedSet();

/** A list result: total count and a page accessor, without materializing more than needed. */
export interface QueryResult {
  total: number;
  slice(offset: number, limit: number): SimObject[];
}

export function fromSet(set: OrderedSet): QueryResult {
  return { total: set.size, slice: (o, l) => set.slice(o, l) };
}

export function fromArray(arr: SimObject[]): QueryResult {
  return { total: arr.length, slice: (o, l) => arr.slice(o, o + l) };
}
