/**
 * The Engine's rate limit: a token bucket per API token over every Engine route. A request takes one token;
 * a request that finds the bucket empty is refused (429) and takes none, so a client that keeps asking is
 * refused for as long as it asks faster than the refill rate.
 */
import type { RateLimit } from './manners';

interface Bucket {
  tokens: number;
  at: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /**
   * Takes a token for `key` (the API token). Null when the request may go ahead, otherwise the whole seconds
   * until a token is free (at least 1), for a Retry-After header.
   */
  take(key: string, limit: RateLimit): number | null {
    const t = this.now();
    let b = this.buckets.get(key);
    if (!b) {
      b = { tokens: limit.burst, at: t };
      this.buckets.set(key, b);
    }
    b.tokens = Math.min(limit.burst, b.tokens + ((t - b.at) / 1000) * limit.rps);
    b.at = t;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return null;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / limit.rps));
  }

  /** Every bucket full again (a reset, or the limit switched on anew). */
  clear(): void {
    this.buckets.clear();
  }
}
