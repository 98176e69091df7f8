/**
 * `lbaas kube`'s /healthz, /readyz and /metrics (common/health.ts, docs/operations.md#health-endpoints). Live: the
 * process runs and its controller has not failed. Ready: both informers have listed (leader or standby), and no wait
 * of the leader is on a workflow that nothing can pick up (kube/pickup-watch.ts). /metrics: its own gauges, in
 * Prometheus' text format (docs/spec.md#metrics).
 */
import type { HealthChecks } from '../common/health';
import { PICKUP_REASONS } from './pickup-watch';
import type { KubeController } from './controller';

export class KubeHealth implements HealthChecks {
  controller: KubeController | null = null;
  failed: string | null = null;

  live(): string | null {
    return this.failed === null ? null : `controller failed: ${this.failed}`;
  }

  ready(): string | null {
    const c = this.controller;
    if (!c || !c.synced) return 'starting: the Service and Node informers have not listed yet';
    return c.pickup.blocking();
  }

  metrics(): string {
    const c = this.controller;
    const counts = c?.pickup.counts();
    const gauge = (name: string, help: string, samples: [labels: string, value: number][]) =>
      [`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, ...samples.map(([labels, v]) => `${name}${labels} ${v}`)].join('\n');
    return (
      [
        gauge('lbaas_kube_informers_synced', '1 once the Service and Node informers have listed.', [['', c?.synced ? 1 : 0]]),
        gauge('lbaas_kube_leader', '1 while this process holds the lease and acts.', [['', c?.leading ? 1 : 0]]),
        gauge('lbaas_kube_workflows_waiting', 'Services (and the node pool) whose sync waits on a workflow.', [['', counts?.waiting ?? 0]]),
        gauge(
          'lbaas_kube_workflows_not_picked_up',
          'Waits whose workflow has a task that no worker took for 10 s or more, by reason (client/pickup.ts).',
          PICKUP_REASONS.map((r) => [`{reason="${r}"}`, counts?.notPickedUp[r] ?? 0]),
        ),
      ].join('\n') + '\n'
    );
  }
}
