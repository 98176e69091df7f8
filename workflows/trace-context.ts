/**
 * Which request a pass is traced under. A controller runs its passes from its own loop, whose OpenTelemetry context
 * is the run's: every pass of a long-lived controller would land in the trace of the apply that started it. The
 * handlers of the requests that cause a pass (apply, delete, resync, a pool's new members) note their context here,
 * and the next pass starts under the latest one, so `lbaas apply` (or `lbaas resync`, or the pool change) is the root
 * of the trace of the pass it caused. Without tracing the context is OpenTelemetry's empty one and nothing changes;
 * either way no command depends on it, so replay is unaffected.
 */
import { context, type Context } from '@opentelemetry/api';

export class RequestTraces {
  #latest: Context | undefined;

  /** Called in a request's handler: the handler's span becomes the parent of the next pass. Latest wins. */
  note(): void {
    this.#latest = context.active();
  }

  /** Runs `start` (which starts a pass) under the latest request's context, and forgets it. */
  startUnderLatest<T>(start: () => T): T {
    const latest = this.#latest;
    this.#latest = undefined;
    return latest === undefined ? start() : context.with(latest, start);
  }
}
