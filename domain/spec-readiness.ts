/** The optional `readiness` block of a spec: how long to wait for the Engine to deploy, with documented defaults. */
import { formatDuration, parseDuration } from './duration';
import { type IssueList, isRecord } from './spec-issues';
import type { ReadinessPolicy } from './types';

/**
 * How long to wait for the Engine to deploy an object. The first three numbers are the upstream controller's
 * readiness backoff, which operators know: poll after 1s because small objects deploy in seconds; grow by 1.5
 * so a slow deploy is not polled hundreds of times; cap at 5m so a stuck deploy is still noticed within minutes
 * once it settles. 30 attempts wait about 85 minutes in total (29 waits: 14 growing ones, about 10 minutes, to
 * reach the cap, then 15 x 5m): longer than any healthy deploy, short enough that a stuck one fails the pass
 * visibly within the hour and a half.
 */
export const DEFAULT_READINESS: Readonly<ReadinessPolicy> = Object.freeze({
  initialIntervalMs: 1_000,
  backoffCoefficient: 1.5,
  maximumIntervalMs: 300_000,
  maximumAttempts: 30,
});

/** Bounds beyond the contract's (coefficient >= 1, attempts >= 1) that only catch typos. */
export const READINESS_LIMITS = Object.freeze({
  /** Longer than a day between readiness polls is a typo, not a policy. */
  maximumIntervalMs: 86_400_000,
  /** At the 5m default cap this is over a month of waiting; more is a typo. */
  maximumAttempts: 10_000,
});

const READINESS_KEYS = ['initialInterval', 'backoffCoefficient', 'maximumInterval', 'maximumAttempts'] as const;

export const DURATION_MESSAGE = 'must be a duration like 250ms, 1s, 5m or 1m30s';

/** The readiness policy in milliseconds, defaults filled in; null after reporting every problem. */
export function checkReadiness(value: unknown, issues: IssueList): ReadinessPolicy | null {
  if (value === undefined) return { ...DEFAULT_READINESS };
  if (!isRecord(value)) {
    issues.add('readiness', `must be a mapping with the optional keys ${READINESS_KEYS.join(', ')}`);
    return null;
  }
  issues.unknownKeys(value, READINESS_KEYS, 'readiness');
  const initial = checkInterval(value.initialInterval, 'readiness.initialInterval', DEFAULT_READINESS.initialIntervalMs, issues);
  // Without an explicit maximum, a long initial interval raises the default cap instead of contradicting it.
  const defaultMaximum = Math.max(DEFAULT_READINESS.maximumIntervalMs, initial ?? 0);
  let maximum = checkInterval(value.maximumInterval, 'readiness.maximumInterval', defaultMaximum, issues);
  if (initial !== null && maximum !== null && maximum < initial) {
    issues.add('readiness.maximumInterval', `must not be shorter than initialInterval (${formatDuration(initial)})`);
    maximum = null;
  }
  let coefficient: number | null = DEFAULT_READINESS.backoffCoefficient;
  if (value.backoffCoefficient !== undefined) {
    const c = value.backoffCoefficient;
    coefficient = typeof c === 'number' && Number.isFinite(c) && c >= 1 ? c : null;
    if (coefficient === null) issues.add('readiness.backoffCoefficient', 'must be a number >= 1');
  }
  let attempts: number | null = DEFAULT_READINESS.maximumAttempts;
  if (value.maximumAttempts !== undefined) {
    const a = value.maximumAttempts;
    attempts = typeof a === 'number' && Number.isInteger(a) && a >= 1 && a <= READINESS_LIMITS.maximumAttempts ? a : null;
    if (attempts === null) issues.add('readiness.maximumAttempts', `must be an integer from 1 to ${READINESS_LIMITS.maximumAttempts}`);
  }
  if (initial === null || maximum === null || coefficient === null || attempts === null) return null;
  return { initialIntervalMs: initial, backoffCoefficient: coefficient, maximumIntervalMs: maximum, maximumAttempts: attempts };
}

function checkInterval(value: unknown, path: string, fallback: number, issues: IssueList): number | null {
  if (value === undefined) return fallback;
  const ms = typeof value === 'string' ? parseDuration(value) : null;
  if (ms === null) {
    issues.add(path, DURATION_MESSAGE);
    return null;
  }
  if (ms < 1 || ms > READINESS_LIMITS.maximumIntervalMs) {
    issues.add(path, `must be between 1ms and ${formatDuration(READINESS_LIMITS.maximumIntervalMs)}`);
    return null;
  }
  return ms;
}
