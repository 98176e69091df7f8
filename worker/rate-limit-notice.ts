/**
 * Tells a service's controller that the Engine is throttling its requests, so that `lbaas status` and the Web UI
 * summary say "rate limited by the Engine" while it lasts. Temporal retries a throttled activity by itself, and a
 * workflow never sees an attempt fail, so the worker, which does see the 429, sends the controller a signal.
 *
 * The 429 is noticed where the Engine client's pacer reacts to it (activities/engine/pacing.ts), inside the
 * activity that sent the request: the activity's workflow id (`lbaas/<uid>/...`) names the controller
 * (`lbaas/<uid>`). A notice holds for NOTICE_MS past the backoff; a controller is told again only when its notice is
 * about to run out, so a long throttle costs one signal per controller about every NOTICE_MS / 2.
 */
import type { Client } from '@temporalio/client';
import type { RequestPacer } from '../activities/engine';
import { currentContext } from '../activities/heartbeat';
import { engineRateLimitedSignal, workflowIds } from '../contract';

/** How long one notice says "rate limited": 30 s, long enough to span the gaps between 429s of a throttled worker. */
export const NOTICE_MS = 30_000;

/** The controller a workflow of the service belongs to (its passes, load balancer runs and dry runs), from its id. */
export function controllerIdOf(workflowId: string): string | null {
  const uid = workflowIds.serviceOf(workflowId);
  return uid === null ? null : workflowIds.controller(uid);
}

export function noticeRateLimits(pacer: RequestPacer, client: Client, now: () => number = Date.now): void {
  const told = new Map<string, number>();
  pacer.onThrottle((event) => {
    const workflowId = currentContext()?.info.workflowExecution?.workflowId;
    const controller = workflowId ? controllerIdOf(workflowId) : null;
    if (!controller) return;
    const until = now() + event.pauseMs + NOTICE_MS;
    if ((told.get(controller) ?? 0) > now() + NOTICE_MS / 2) return;
    if (told.size > 10_000) told.clear();
    told.set(controller, until);
    // A controller that is gone (deleted meanwhile, or a reconciliation started without one) has nobody to tell.
    client.workflow
      .getHandle(controller)
      .signal(engineRateLimitedSignal, { until })
      .catch(() => told.delete(controller));
  });
}
