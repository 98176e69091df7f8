/**
 * The worker's Engine request budget and the task queue's activity rate, read from the environment. Two different
 * limits with two names: the Engine budget bounds the HTTP requests this worker sends with its token (a token
 * bucket inside the Engine client, activities/engine/pacing.ts); the task-queue rate bounds how many activities
 * Temporal starts per second across every worker of the queue (Temporal's maxTaskQueueActivitiesPerSecond), which
 * is not a request count: one activity sends anywhere from one request to dozens.
 */
import {
  DEFAULT_BACKOFF_CAP_MS,
  DEFAULT_BACKOFF_START_MS,
  DEFAULT_BURST,
  DEFAULT_INITIAL_REQUESTS_PER_SECOND,
  DEFAULT_MAX_REQUESTS_PER_SECOND,
  type PacingOptions,
} from '../activities/engine';
import { invalid } from '../common/errors';

export interface EngineBudgetSettings {
  pacing: PacingOptions;
  /** Temporal's task-queue activity-start rate, when set. */
  taskQueueActivitiesPerSecond?: number;
  /** Warnings for the operator (a deprecated variable in use). */
  warnings: string[];
}

function positiveNumber(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw invalid(`${name}: must be a positive number, got "${raw}"`);
  return n;
}

/**
 * This worker's Engine budget. By default adaptive: it starts at 10 requests/s and grows while requests queue and
 * the Engine answers without 429, up to LBAAS_ENGINE_MAX_REQUESTS_PER_SECOND (default 1,000); 429s halve it.
 * LBAAS_ENGINE_REQUESTS_PER_SECOND sets a fixed budget instead (the rate never grows above it; 429s still halve it).
 * LBAAS_ENGINE_BURST (default 10): requests that may go out at once.
 * LBAAS_ENGINE_BACKOFF_START_SECONDS (default 1) and LBAAS_ENGINE_BACKOFF_MAX_SECONDS (default 60): the bounds of the
 * backoff after a 429 without Retry-After. LBAAS_TASK_QUEUE_ACTIVITIES_PER_SECOND (unset): Temporal's task-queue
 * rate; LBAAS_ENGINE_RPS, its old and misleading name, still sets it, with a warning.
 */
export function engineBudgetFromEnv(env: NodeJS.ProcessEnv): EngineBudgetSettings {
  const warnings: string[] = [];
  const fixed = positiveNumber(env, 'LBAAS_ENGINE_REQUESTS_PER_SECOND');
  const ceiling = positiveNumber(env, 'LBAAS_ENGINE_MAX_REQUESTS_PER_SECOND');
  if (fixed !== undefined && ceiling !== undefined) {
    throw invalid(
      'LBAAS_ENGINE_MAX_REQUESTS_PER_SECOND: the ceiling of the adaptive budget, while LBAAS_ENGINE_REQUESTS_PER_SECOND sets a fixed budget: set one of them',
    );
  }
  const rate =
    fixed !== undefined
      ? { requestsPerSecond: fixed }
      : {
          requestsPerSecond: ceiling ?? DEFAULT_MAX_REQUESTS_PER_SECOND,
          initialRequestsPerSecond: Math.min(DEFAULT_INITIAL_REQUESTS_PER_SECOND, ceiling ?? DEFAULT_MAX_REQUESTS_PER_SECOND),
        };
  const burst = positiveNumber(env, 'LBAAS_ENGINE_BURST') ?? DEFAULT_BURST;
  const start = positiveNumber(env, 'LBAAS_ENGINE_BACKOFF_START_SECONDS');
  const cap = positiveNumber(env, 'LBAAS_ENGINE_BACKOFF_MAX_SECONDS');
  const backoffStartMs = start === undefined ? DEFAULT_BACKOFF_START_MS : start * 1000;
  const backoffCapMs = cap === undefined ? Math.max(DEFAULT_BACKOFF_CAP_MS, backoffStartMs) : cap * 1000;
  if (backoffCapMs < backoffStartMs) {
    throw invalid(`LBAAS_ENGINE_BACKOFF_MAX_SECONDS: must not be below LBAAS_ENGINE_BACKOFF_START_SECONDS (${backoffStartMs / 1000})`);
  }
  let taskQueue = positiveNumber(env, 'LBAAS_TASK_QUEUE_ACTIVITIES_PER_SECOND');
  const legacy = positiveNumber(env, 'LBAAS_ENGINE_RPS');
  if (legacy !== undefined) {
    warnings.push(
      taskQueue === undefined
        ? 'LBAAS_ENGINE_RPS is deprecated: it limits activity starts per second on the task queue, not Engine requests; set LBAAS_TASK_QUEUE_ACTIVITIES_PER_SECOND instead (and LBAAS_ENGINE_REQUESTS_PER_SECOND for the Engine budget)'
        : 'LBAAS_ENGINE_RPS is deprecated and ignored: LBAAS_TASK_QUEUE_ACTIVITIES_PER_SECOND is set',
    );
    taskQueue ??= legacy;
  }
  return {
    pacing: { ...rate, burst, backoffStartMs, backoffCapMs },
    ...(taskQueue === undefined ? {} : { taskQueueActivitiesPerSecond: taskQueue }),
    warnings,
  };
}
