/**
 * The boundary where Engine errors become Temporal failures (docs/architecture.md#retries): Temporal owns every
 * retry, so an activity only has to say whether retrying can help and, for 429, when to try again.
 */
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { FAILURE_TYPES } from '../contract';
import { EngineError, EngineRateLimitedError } from './engine';
import { currentContext } from './heartbeat';

/**
 * The largest activity result sent: Temporal refuses payloads over 2 MiB (`limit.blobSize.error`), and a refused
 * result is retried until the schedule-to-close timeout, which for Engine calls is never: the pass would hang with
 * nothing saying why. Results past this fail non-retryably instead, naming what was too large.
 */
export const MAX_RESULT_BYTES = 1_900_000;

/** `value`, unless its JSON is larger than MAX_RESULT_BYTES: then a non-retryable failure naming `what`. */
export function withinPayloadLimit<T>(what: string, value: T, max = MAX_RESULT_BYTES): T {
  const bytes = Buffer.byteLength(JSON.stringify(value));
  if (bytes <= max) return value;
  throw ApplicationFailure.create({
    type: FAILURE_TYPES.payloadTooLarge,
    nonRetryable: true,
    message: `${what} is ${(bytes / 1_048_576).toFixed(2)} MiB, more than Temporal's 2 MiB payload limit allows (at most ${max} bytes per activity result)`,
  });
}

/**
 * How a 429 becomes a Temporal retry: the Engine client does not resend it (Temporal owns retries); the call fails
 * with EngineRateLimitedError, whose `retryAfterMs` is the client's shared backoff at that moment (Retry-After when
 * the Engine sent one, else the jittered exponential pause, at least one token's time at the lowered rate;
 * activities/engine/pacing.ts). That becomes the failure's `nextRetryDelay`, overriding the activity's retry policy
 * for this one retry, so the retried attempt starts when the worker's pacer would let it send anyway. Polling loops
 * (readiness, deprovisioning) do not fail on a 429: a throttled poll is a poll that did not happen, and they wait the
 * same backoff before the next one.
 */
export function toFailure(err: unknown): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  if (err instanceof EngineError) {
    const nextRetryDelay = err instanceof EngineRateLimitedError ? err.retryAfterMs : undefined;
    return ApplicationFailure.create({
      message: err.message,
      type: err.retryable ? err.name : FAILURE_TYPES.engineRejected,
      nonRetryable: !err.retryable,
      ...(nextRetryDelay !== undefined ? { nextRetryDelay } : {}),
    });
  }
  // Programming errors and unexpected throws stay retryable: a worker fix and redeploy can then resume the work.
  return ApplicationFailure.create({ message: (err as Error)?.message ?? String(err), type: (err as Error)?.name ?? 'Error' });
}

/**
 * The activity's own cancellation, as it surfaces: the CancelledFailure that `Context.sleep` rejects with (or an
 * observation throws, activities/state.ts `readEach`), or the AbortError of a call given the cancellation signal.
 * It must reach the SDK as it is: translated into an ApplicationFailure it would be reported as a failed attempt, and
 * a pass cancelled because a newer revision superseded it would end failed instead of cancelled (and be counted as
 * a failed pass).
 */
export function isOwnCancellation(err: unknown): boolean {
  if (err instanceof CancelledFailure) return true;
  return (err as Error)?.name === 'AbortError' && currentContext()?.cancellationSignal.aborted === true;
}

/** Runs an activity body and translates what it throws (its own cancellation excepted). */
export async function translated<T>(body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (err) {
    if (isOwnCancellation(err)) throw err;
    throw toFailure(err);
  }
}
