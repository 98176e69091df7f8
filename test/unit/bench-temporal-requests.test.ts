/**
 * bench/temporal-requests.ts: the Temporal frontend's requests by operation from the dev server's Prometheus text, the
 * metrics address from the config dev/devserver.ts writes, the difference of two readings, and the table bench/kube.ts
 * prints of lbaas kube's apply beside the fleet's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { temporalRequestsTable } from '../../bench/kube';
import { cacheBetween, frontendRequests, metricsAddressOf, requestsBetween, workflowCacheCounts } from '../../bench/temporal-requests';
import { renderDevServerConfig } from '../../dev/devserver';

const METRICS = [
  '# HELP service_requests service_requests counter',
  '# TYPE service_requests counter',
  'service_requests{namespace="default",operation="PollWorkflowExecutionUpdate",service_name="frontend"} 7',
  'service_requests{namespace="other",operation="PollWorkflowExecutionUpdate",service_name="frontend"} 3',
  'service_requests{namespace="default",operation="RespondActivityTaskCompleted",service_name="frontend"} 20',
  'service_requests{namespace="default",operation="RecordActivityTaskHeartbeat",service_name="history"} 99',
  'service_requests_total{operation="Ignored",service_name="frontend"} 5',
  'service_latency_bucket{operation="PollWorkflowExecutionUpdate",service_name="frontend",le="0.1"} 4',
].join('\n');

test('frontendRequests sums the frontend counter per operation over its other labels, nothing else', () => {
  assert.deepEqual(frontendRequests(METRICS), { PollWorkflowExecutionUpdate: 10, RespondActivityTaskCompleted: 20 });
  assert.deepEqual(frontendRequests(''), {});
});

test('requestsBetween keeps the operations that moved, by how much', () => {
  assert.deepEqual(requestsBetween({ A: 5, B: 2 }, { A: 5, B: 7, C: 1 }), { B: 5, C: 1 });
});

test('workflowCacheCounts sums the SDK worker\'s cache hit, miss and forced-eviction counters over their labels, nothing else', () => {
  const text = [
    '# TYPE temporal_sticky_cache_hit counter',
    'temporal_sticky_cache_hit{namespace="default",task_queue="q",workflow_type="serviceController"} 40',
    'temporal_sticky_cache_hit{namespace="default",task_queue="q",workflow_type="reconcileLoadBalancer"} 2',
    'temporal_sticky_cache_miss{namespace="default",task_queue="q"} 5',
    'temporal_sticky_cache_total_forced_eviction 3',
    'temporal_sticky_cache_size 1344',
    'temporal_sticky_cache_hits_other 9',
  ].join('\n');
  assert.deepEqual(workflowCacheCounts(text), { hits: 42, misses: 5, forcedEvictions: 3 });
  assert.deepEqual(workflowCacheCounts(''), { hits: 0, misses: 0, forcedEvictions: 0 });
  assert.deepEqual(cacheBetween({ hits: 2, misses: 1, forcedEvictions: 0 }, { hits: 44, misses: 6, forcedEvictions: 3 }), { hits: 42, misses: 5, forcedEvictions: 3 });
});

test('metricsAddressOf reads the listen address of the config the dev server is started with', () => {
  const ports = { http: 7243, metrics: 9090, frontend: { grpc: 7233, membership: 6933 }, history: { grpc: 7234, membership: 6934 }, matching: { grpc: 7235, membership: 6935 }, worker: { grpc: 7239, membership: 6939 } };
  const config = renderDevServerConfig({ ip: '127.0.0.1', ports, dynamicConfigFile: '/tmp/dynamic.yaml', logLevel: 'warn' });
  assert.equal(metricsAddressOf(config), '127.0.0.1:9090');
  assert.equal(metricsAddressOf('global:\n  pprof:\n    port: 0\n'), null);
});

test('temporalRequestsTable lists both paths and the difference per Service, the largest first', () => {
  const table = temporalRequestsTable({ PollWorkflowExecutionUpdate: 80, RespondActivityTaskCompleted: 200 }, 10, { RespondActivityTaskCompleted: 202, UpdateWorkflowExecution: 10 }, 10);
  assert.equal(
    table,
    [
      '| Temporal frontend requests, apply | `lbaas kube` | `lbaas apply` fleet | kube - fleet per Service |',
      '|---|---:|---:|---:|',
      '| RespondActivityTaskCompleted | 200 | 202 | -0.20 |',
      '| PollWorkflowExecutionUpdate | 80 | 0 | 8.00 |',
      '| UpdateWorkflowExecution | 0 | 10 | -1.00 |',
    ].join('\n'),
  );
  assert.equal(temporalRequestsTable({ QueryWorkflow: 3 }, 3), ['| Temporal frontend requests, apply | `lbaas kube` |', '|---|---:|', '| QueryWorkflow | 3 |'].join('\n'));
});
