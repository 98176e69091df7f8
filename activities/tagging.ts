/**
 * Tagging an object for its service, the way the real Engine needs it done:
 * - one tag request per resource at a time (the Engine fails overlapping ones; IdentifierCache.serializeTagging);
 * - no blind re-tag: unless the object was created a moment ago by this very attempt (it cannot carry the tag yet),
 *   its tags are read first and the POST is sent only when the tag is missing. A retried activity would otherwise
 *   spend a request on a 422 "already tagged" for every object it had tagged before;
 * - a 422 is checked against the resource's own tags (not the tag index, which lags) before it counts as a failure.
 * A tag request that fails (a 5xx from an overlap elsewhere, a 429) fails the activity, and its retry tags again:
 * an object is never left untagged.
 */
import { EngineValidationError, type EngineClient } from './engine';
import type { IdentifierCache } from './memory';

export interface TagOptions {
  /** Created by this attempt a moment ago: skip the read before the POST. */
  fresh?: boolean;
}

export async function ensureTagged(engine: EngineClient, memory: IdentifierCache, id: string, tag: string, options: TagOptions = {}): Promise<void> {
  await memory.serializeTagging(id, async () => {
    if (!options.fresh && (await engine.getResource(id)).tags.includes(tag)) return;
    try {
      await engine.tag(id, tag);
    } catch (err) {
      if (err instanceof EngineValidationError && (await engine.getResource(id)).tags.includes(tag)) return;
      throw err;
    }
  });
}
