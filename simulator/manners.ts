/**
 * The real Engine's manners (docs/engine-api.md, "where the real Engine is harsher"): the parts of the fault model
 * that turn the ideal simulator into one that behaves like the production Engine, and the two named profiles.
 * Each manner is switchable on its own through `PUT /_sim/faults`; `profile` picks the values keys left out take.
 */

export interface Range {
  min: number;
  max: number;
}

/** A token bucket per API token over every Engine route. */
export interface RateLimit {
  /** Tokens added per second. */
  rps: number;
  /** Bucket size: how many requests may arrive at once after a quiet spell. */
  burst: number;
  /** Send `Retry-After` (whole seconds until a token is free) with the 429. The real Engine does not. */
  retryAfter: boolean;
}

/** Which optional parts of answers are left out or null (each where go-anxcloud's types allow it). */
export interface Sparse {
  /** `customer_identifier`, `reseller_identifier`, `automation_rules` null; empty optional strings and zero ints left out. */
  nullFields: boolean;
  /** Core resource `tags: null` on an untagged object (instead of `[]`). */
  tagsNull: boolean;
  /** Core `created_at`/`updated_at` as `2026-11-23 14:52:37` (UTC, no zone) instead of ISO 8601 with `Z`. */
  zonelessTimes: boolean;
  /** `state` carries only its `type`: no `id`, `title` or `text`. */
  typeOnlyState: boolean;
  /** List pages (LBaaS and Core) without `total_pages`. */
  noTotalPages: boolean;
}

export interface Manners {
  /** null: no rate limit. */
  rateLimit: RateLimit | null;
  /** A deleted object stays in lists, filters and the tag index (not only readable by GET) until `deleteMs` is over. */
  deleteListed: boolean;
  /** How long after a tag or untag answers the tag index (`resource.json?tag_name=`) reflects it; 0: at once. */
  tagLagMs: Range;
  /** How long a tag request is in flight (its answer is held); another tag request for the resource meanwhile fails. 0: off. */
  tagInFlightMs: number;
  /** The status of such an overlapping tag request. */
  tagConflictStatus: number;
  sparse: Sparse;
}

export const PROFILES = ['ideal', 'realistic'] as const;
export type Profile = (typeof PROFILES)[number];

export const NO_SPARSE: Sparse = { nullFields: false, tagsNull: false, zonelessTimes: false, typeOnlyState: false, noTotalPages: false };
export const ALL_SPARSE: Sparse = { nullFields: true, tagsNull: true, zonelessTimes: true, typeOnlyState: true, noTotalPages: true };

/**
 * The rate limit used when one is switched on without values. 5 requests/s with a burst of 10 is the budget the realistic
 * benchmark measures against (the real Engine's limit is not public); no Retry-After, as the real Engine sends none.
 */
export const DEFAULT_RATE_LIMIT: RateLimit = { rps: 5, burst: 10, retryAfter: false };

/**
 * 500: the public sources name no status for overlapping tag requests (the upstream controller only serializes
 * them, naming an Engine support ticket). A 5xx is the harsher reading: it says nothing about the cause and
 * looks like any transient failure.
 */
export const DEFAULT_TAG_CONFLICT_STATUS = 500;

export const IDEAL: Manners = {
  rateLimit: null,
  deleteListed: false,
  tagLagMs: { min: 0, max: 0 },
  tagInFlightMs: 0,
  tagConflictStatus: DEFAULT_TAG_CONFLICT_STATUS,
  sparse: NO_SPARSE,
};

/**
 * The realistic profile. Delays are in the range the realistic benchmark measures against (deleted objects listed for up to 5 s,
 * a tag index 4 s behind); 300 ms in flight is a slow but ordinary Engine answer.
 */
export const REALISTIC: Manners = {
  rateLimit: DEFAULT_RATE_LIMIT,
  deleteListed: true,
  tagLagMs: { min: 1000, max: 4000 },
  tagInFlightMs: 300,
  tagConflictStatus: DEFAULT_TAG_CONFLICT_STATUS,
  sparse: ALL_SPARSE,
};

/** How long a deleted object stays (readable, and listed under `deleteListed`) in the realistic profile. */
export const REALISTIC_DELETE_MS: Range = { min: 2000, max: 5000 };

export function mannersOf(profile: Profile): Manners {
  return structuredClone(profile === 'realistic' ? REALISTIC : IDEAL);
}
