/**
 * The worker's Prometheus metrics (docs/spec.md#metrics). They are created on Temporal's runtime meter, so one
 * endpoint (LBAAS_METRICS_ADDRESS, served by the Temporal runtime's Prometheus exporter) carries ours and
 * Temporal's worker metrics together. Names follow the upstream controller's. The duration histograms and the
 * pending gauge are recorded by the workflow itself (workflows/reconcile-lb.ts), which knows when a pass ends.
 */
import { Runtime } from '@temporalio/worker';
import type { ActivityEvents } from '../activities';
import type { EngineResponseEvent, RequestPacer } from '../activities/engine';
import { runtimeLogging, type LogSettings } from './logging';
import type { StrandedAction } from './stranded';

/**
 * Installs the Temporal runtime of a worker process: its logger (worker/logging.ts) and, with a `metricsAddress`,
 * the Prometheus exporter there. Must run before any connection or worker. `shutdownSignals`: the signals on which
 * the SDK stops every worker at once (its default: SIGINT, SIGTERM, SIGQUIT, SIGUSR2); `lbaas worker` leaves SIGTERM
 * out and drains on it (worker/drain.ts).
 */
export function installRuntime(o: { metricsAddress?: string | undefined; logging: LogSettings; shutdownSignals?: NodeJS.Signals[] }): void {
  const { logger, logging } = runtimeLogging(o.logging);
  Runtime.install({
    logger,
    ...(o.shutdownSignals ? { shutdownSignals: o.shutdownSignals } : {}),
    telemetryOptions: {
      logging,
      ...(o.metricsAddress
        ? {
            metrics: prometheusMetrics(o.metricsAddress),
          }
        : {}),
    },
  });
}

/** The runtime's Prometheus exporter on `bindAddress`. Our names carry their own prefix and suffixes; Temporal's stay as documented. */
export function prometheusMetrics(bindAddress: string) {
  return { prometheus: { bindAddress, countersTotalSuffix: false, unitSuffix: false, useSecondsForDurations: true } };
}

/** Installs the runtime with a Prometheus exporter on `bindAddress` and the default log settings. */
export function installMetrics(bindAddress: string): void {
  installRuntime({ metricsAddress: bindAddress, logging: { format: 'text', level: 'INFO' } });
}

export interface LbaasMetrics {
  activityEvents: ActivityEvents;
  onEngineResponse: (e: EngineResponseEvent) => void;
  /** Counts the 429s and backoff time of the Engine client's pacer, and publishes its current rate. */
  watchPacer: (pacer: RequestPacer) => void;
  /** Counts a run the stranded-run sweep acted on (worker/stranded.ts). */
  onStranded: (workflowType: string, action: StrandedAction) => void;
}

export function createMetrics(): LbaasMetrics {
  const meter = Runtime.instance().metricMeter;
  const created = meter.createCounter('lbaas_reconcile_created_total', '', 'Engine objects created');
  const deleted = meter.createCounter('lbaas_reconcile_deleted_total', '', 'Engine objects deleted');
  const recovered = meter.createCounter('lbaas_reconcile_recovered_total', '', 'failed Engine objects redeployed');
  const createErrors = meter.createCounter('lbaas_reconcile_create_errors_total', '', 'failed create attempts');
  const deleteErrors = meter.createCounter('lbaas_reconcile_delete_errors_total', '', 'failed delete attempts');
  const requests = meter.createCounter('lbaas_http_client_requests_total', '', 'Engine HTTP requests');
  const rateLimited = meter.createCounter('lbaas_engine_rate_limited_total', '', 'Engine answers 429 Too Many Requests');
  // Temporal's counters are integers: milliseconds keep sub-second pauses visible.
  const backoff = meter.createCounter('lbaas_engine_backoff_milliseconds_total', 'ms', 'time the Engine client held every request back after a 429');
  const budget = meter.createGauge('lbaas_engine_requests_per_second', 'float', '', 'the Engine client request rate in force (lowered on 429, regained while none come)');
  const stranded = meter.createCounter('lbaas_stranded_runs_total', '', 'runs pinned to a build no worker polls: terminated (passes), reset onto the current build (entities), or failed to act on');
  return {
    activityEvents: {
      created: (kind) => created.add(1, { kind }),
      destroyed: (kind) => deleted.add(1, { kind }),
      recovered: (kind) => recovered.add(1, { kind }),
      createFailed: (kind) => createErrors.add(1, { kind }),
      destroyFailed: (kind) => deleteErrors.add(1, { kind }),
    },
    onEngineResponse: (e) => requests.add(1, { resource: e.resource, method: e.method, status: String(e.status) }),
    onStranded: (workflowType, action) => stranded.add(1, { workflow_type: workflowType, action }),
    watchPacer: (pacer) => {
      pacer.onThrottle((e) => {
        rateLimited.add(1, { retry_after: e.retryAfterMs === undefined ? 'absent' : 'present' });
        if (e.addedBackoffMs >= 1) backoff.add(Math.round(e.addedBackoffMs));
        if (Number.isFinite(e.requestsPerSecond)) budget.set(e.requestsPerSecond);
      });
      const rate = pacer.stats().requestsPerSecond;
      if (Number.isFinite(rate)) budget.set(rate);
    },
  };
}
