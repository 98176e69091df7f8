/** Objects as the admin API shows them: links as bare ids, state by title, the drawn delays and timestamps. */
import { type Kind, type SimObject, STATES, type StateTitle } from './model';
import type { Store } from './store';

export interface AdminObject {
  kind: Kind;
  identifier: string;
  name: string;
  state: StateTitle;
  /** The tags the resource carries (the tag index may lag behind them). */
  tags: string[];
  fields: Record<string, string | number | boolean>;
  createdAt: string;
  updatedAt: string;
  deployMs: number | null;
  deployStartedAt: string | null;
  deployedAt: string | null;
  /** When a GET first answered the settled deploy (null until then). */
  deploySeenAt: string | null;
  deleting: boolean;
  deleteMs: number | null;
}

const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());

export function adminView(o: SimObject): AdminObject {
  return {
    kind: o.kind,
    identifier: o.identifier,
    name: o.name,
    state: STATES[o.state].title,
    tags: [...o.tags],
    fields: { name: o.name, ...o.fields },
    createdAt: new Date(o.createdAt).toISOString(),
    updatedAt: new Date(o.updatedAt).toISOString(),
    deployMs: o.deployMs,
    deployStartedAt: iso(o.deployStartedAt),
    deployedAt: iso(o.deployedAt),
    deploySeenAt: iso(o.deploySeenAt),
    deleting: o.deleting,
    deleteMs: o.deleteMs,
  };
}

/** Every object, those being deleted included, in creation order. */
export function adminObjects(store: Store): AdminObject[] {
  return [...store.byId.values()].map(adminView);
}
