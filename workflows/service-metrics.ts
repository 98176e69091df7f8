/**
 * Workflow-side metrics of services and the resync (docs/spec.md#metrics), for the alert rules in
 * deploy/prometheus/lbaas-rules.yaml. Temporal does not emit them while replaying, so a replayed pass is not counted
 * twice. Timestamps rather than 0/1 gauges: a worker keeps exporting the last value it set after the workflow has
 * moved to another worker, and the newest timestamp (max over workers) is right whichever worker set it.
 */
import { metricMeter } from '@temporalio/workflow';

export type PassOutcome = 'converged' | 'failed';

/** At the end of a pass of `serviceUid` (reconcile-service.ts): counted, and its end time kept per outcome. */
export function recordPassEnd(serviceUid: string, outcome: PassOutcome): void {
  const tags = { service_uid: serviceUid, result: outcome };
  metricMeter.createCounter('lbaas_service_passes_total', '', 'passes of a service that ended, by result (converged or failed)').add(1, tags);
  // Workflow time: deterministic, and the time the pass ended.
  metricMeter
    .createGauge('lbaas_service_last_pass_timestamp_seconds', 'float', 's', 'when the last pass of a service with this result ended, Unix seconds')
    .set(Date.now() / 1000, tags);
}

/** At the end of a full resync (full-resync.ts): when it completed and how many orphaned services it found. */
export function recordResyncEnd(orphans: number): void {
  metricMeter.createGauge('lbaas_resync_last_completed_timestamp_seconds', 'float', 's', 'when the last full resync completed, Unix seconds').set(Date.now() / 1000);
  metricMeter.createGauge('lbaas_resync_orphaned_services', 'int', '', 'tagged services without a controller the last full resync found').set(orphans);
}
