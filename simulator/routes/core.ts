/** Core v1 resources and tags (docs/engine-api.md#core-resources-and-tags). */
import { SimError } from '../errors';
import { decodeSegment, errorReply, paging, type Reply } from '../http';
import { pageOf, renderResource } from '../render';
import type { Handler, RequestContext, RouteMatch } from './types';

export const CORE_RESOURCE = '/api/core/v1/resource.json';

/**
 * By tag (`tag_name`), or every resource when the parameter is absent. 422 when nothing is listed under the tag
 * (the index may lag behind tagging, and keeps objects being deleted under `deleteListed`).
 */
const listResources: Handler = ({ sim, query }: RequestContext): Reply => {
  const tag = query.get('tag_name');
  let result = sim.store.liveQuery();
  if (tag !== null) {
    const tagged = sim.store.tagQuery(tag);
    if (!tagged) {
      throw new SimError(422, `No resource is tagged "${tag}".`, { tag_name: 'No resource carries this tag.' });
    }
    result = tagged;
  }
  return { status: 200, body: pageOf(result, paging(query), sim.sparse) };
};

function getResource(id: string): Handler {
  return ({ sim }: RequestContext): Reply => {
    const o = sim.store.get(id);
    if (!o) throw new SimError(404, `Resource ${id} not found.`);
    return { status: 200, body: renderResource(o, (t) => sim.store.tagId(t), sim.sparse) };
  };
}

/**
 * Tag and untag. A tag request is in flight for `tagInFlightMs` (its answer held, whatever it is); one that
 * overlaps it on the same resource fails at once and changes nothing.
 */
function tagHandler(id: string, tag: string, add: boolean): Handler {
  return ({ sim }: RequestContext): Reply => {
    const o = sim.changeable(id);
    const holdMs = sim.beginTagRequest(o);
    try {
      if (add) sim.tag(o, tag);
      else sim.untag(o, tag);
    } catch (err) {
      if (err instanceof SimError) return { ...errorReply(err.status, err.message, err.validation), holdMs };
      throw err;
    }
    return { status: 200, body: {}, mutated: true, holdMs };
  };
}

/**
 * Matches `/api/core/v1/resource.json[/<id>[/tags/<tag>]]`. The tag stands literally in the path (`=`
 * unescaped) or percent-encoded; both decode to the same tag, `/` included.
 */
export function matchCore(path: string): RouteMatch | null {
  if (path === CORE_RESOURCE || path === `${CORE_RESOURCE}/`) return { pattern: CORE_RESOURCE, methods: { GET: listResources } };
  if (!path.startsWith(`${CORE_RESOURCE}/`)) return null;
  const parts = path.slice(CORE_RESOURCE.length + 1).split('/');
  const rawId = parts[0];
  if (!rawId) return null;
  const id = decodeSegment(rawId);
  if (parts.length === 1 || (parts.length === 2 && parts[1] === '')) {
    return { pattern: `${CORE_RESOURCE}/{id}`, methods: { GET: getResource(id) } };
  }
  if (parts[1] !== 'tags' || parts.length < 3) return null;
  const tag = parts.slice(2).map(decodeSegment).join('/');
  if (tag === '') return null;
  return {
    pattern: `${CORE_RESOURCE}/{id}/tags/{tag}`,
    methods: { POST: tagHandler(id, tag, true), DELETE: tagHandler(id, tag, false) },
  };
}
