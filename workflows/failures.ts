/**
 * Reading failures that come back from children and activities, in one place.
 */
import { ApplicationFailure } from '@temporalio/common';
import { ChildWorkflowFailure } from '@temporalio/workflow';

/** The innermost message of a failure chain: what actually went wrong, not "activity task failed". */
export function causeOf(err: unknown): string {
  let e = err as { message?: string; cause?: unknown } | undefined;
  while (e && typeof e === 'object' && e.cause && typeof e.cause === 'object') e = e.cause as typeof e;
  return e?.message ?? String(err);
}

/** What a failed child (or a failure raised here) carried out with it: the first detail of its ApplicationFailure. */
export function failureDetails<T>(err: unknown): T | undefined {
  const cause = err instanceof ChildWorkflowFailure ? err.cause : err;
  return cause instanceof ApplicationFailure ? (cause.details?.[0] as T | undefined) : undefined;
}

/** The ApplicationFailure a failed child ended with, when it ended with one of the given type. */
export function childFailureOfType(err: unknown, type: string): ApplicationFailure | undefined {
  const cause = err instanceof ChildWorkflowFailure ? err.cause : err;
  return cause instanceof ApplicationFailure && cause.type === type ? cause : undefined;
}
