/** Request counters over Engine API requests (the admin API is not counted). */

export interface StatsSnapshot {
  requests: Record<string, number>;
  total: number;
  mutations: number;
  /** Requests refused by the rate limit (429, `rateLimit`); drawn `rates.rateLimited` 429s are not counted here. */
  throttled: number;
}

export class Stats {
  private requests = new Map<string, number>();
  private total = 0;
  private mutations = 0;
  private throttled = 0;

  /** `route` is `<METHOD> <route pattern>`, e.g. `GET /api/LBaaS/v1/backend.json/{id}`. */
  count(route: string): void {
    this.requests.set(route, (this.requests.get(route) ?? 0) + 1);
    this.total++;
  }

  /** A POST/PUT/DELETE that changed something. */
  mutation(): void {
    this.mutations++;
  }

  /** A request the rate limit refused. */
  throttle(): void {
    this.throttled++;
  }

  reset(): void {
    this.requests = new Map();
    this.total = 0;
    this.mutations = 0;
    this.throttled = 0;
  }

  snapshot(): StatsSnapshot {
    const requests: Record<string, number> = {};
    for (const k of [...this.requests.keys()].sort()) requests[k] = this.requests.get(k) ?? 0;
    return { requests, total: this.total, mutations: this.mutations, throttled: this.throttled };
  }
}
