/** The chaos run's options, defaults and report shapes (run.ts runs it, report.ts prints it). */
import type { Invariant } from './invariants';

export interface FaultRates {
  serverError: number;
  rateLimited: number;
  dropAfterCommit: number;
  deploymentError: number;
}

export interface ChaosOptions {
  services: number;
  seed: number;
  /** Worker SIGKILLs, at seeded moments of the chaos window. */
  kills: number;
  /** Length of the chaos window (faults on), from the first apply. */
  durationMs: number;
  /** Stop and start the Temporal dev server once, mid-window. */
  serverRestart: boolean;
  /** Worker processes at a time. */
  workers: number;
  /** Services that get a second, changed revision mid-window. */
  changed: number;
  rates: FaultRates;
  deployMs: { min: number; max: number };
  /** Bound on waiting for every controller's latest revision to converge once faults are off. */
  convergeTimeoutMs: number;
  /** Service 2 shares service 0's name suffix (and port names) on load balancer A. */
  sharedSuffix: boolean;
  /**
   * Leave the foreign objects as new as the run instead of an hour old. A retried create adopts untagged objects with
   * its exact name and fields that are younger than the activity (less a 5 minute clock-skew margin), so fresh
   * look-alikes are expected to be adopted: this shows that window, it is not a realistic Engine.
   */
  freshForeign: boolean;
  /**
   * The simulator's profile (simulator/README.md). `realistic` adds the real Engine's manners on top of the injected
   * faults: 429 without Retry-After per token, deleted objects listed while deprovisioned, a lagging tag index,
   * failing overlapping tag requests, sparse answers. They stay on after the faults are switched off: they are how
   * that Engine is, not faults.
   */
  profile: 'ideal' | 'realistic';
  /** The realistic profile's rate limit per token; workers share the token (each has a budget of 10 requests/s). */
  rateLimit: { rps: number; burst: number };
  /** Keep the work directory (SQLite file, logs) even when every invariant held. */
  keep: boolean;
  serverPath?: string;
  /**
   * A Temporal server that already runs (the test runner's shared dev server, scripts/test.js) and the namespace to
   * use on it, instead of a dev server of the run's own. Without `serverRestart` only, which stops and starts the
   * run's own; the invariant "Engine token absent from every log" then covers the workers' and the simulator's logs,
   * not that server's.
   */
  temporal?: { address: string; namespace: string };
  /** A prebuilt workflow bundle for the worker processes (LBAAS_WORKFLOW_BUNDLE); they bundle at start without one. */
  workflowBundle?: string;
  progress?: (line: string) => void;
}

export const DEFAULT_OPTIONS: ChaosOptions = {
  services: 12,
  seed: 1,
  kills: 6,
  durationMs: 120_000,
  serverRestart: true,
  workers: 2,
  changed: 4,
  rates: { serverError: 0.1, rateLimited: 0.1, dropAfterCommit: 0.1, deploymentError: 0.1 },
  deployMs: { min: 50, max: 400 },
  convergeTimeoutMs: 600_000,
  sharedSuffix: true,
  freshForeign: false,
  profile: 'ideal',
  // Two workers at their default budget of 10 requests/s each: the Engine grants them 20 together, as a real token
  // shared by two workers would be granted a fixed budget. Lower it to see the shared backoff do more of the work.
  rateLimit: { rps: 20, burst: 20 },
  keep: false,
};

export interface Injected {
  serverError: number;
  rateLimited: number;
  dropAfterCommit: number;
  deploymentError: number;
  workerKills: number;
  /** Worker exits we did not cause; `whileServerDown` ones are a worker refusing to start without Temporal. */
  workerOwnExits: { name: string; how: string; whileServerDown: boolean }[];
  workerStarts: number;
  serverRestarts: number;
  serverDownMs: number;
  revisionsApplied: number;
  resyncsAfterFaultsOff: number;
  engineRequests: number;
  engineUnauthorized: number;
  /** Requests the realistic profile's rate limit answered 429 (without Retry-After). */
  engineThrottled: number;
}

export interface ChaosReport {
  options: Omit<ChaosOptions, 'progress'>;
  injected: Injected;
  invariants: Invariant[];
  ok: boolean;
  timings: { setupMs: number; chaosMs: number; convergeMs: number; checkMs: number; totalMs: number };
  workDir: string;
  workflowsScanned: number;
}
