/**
 * `lbaas dev` traces as `lbaas worker` does when the standard OTEL_EXPORTER_OTLP_* variables are set: the example
 * service's pass reaches an OTLP receiver as one trace from the apply down to the Engine requests, and Ctrl-C flushes
 * what is left and stops everything.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { devArgs, startLongRun } from '../helpers/cli';
import { startOtlpReceiver } from '../helpers/otlp-receiver';
import { until } from '../helpers/workflows';

test('lbaas dev with OTEL_EXPORTER_OTLP_ENDPOINT: it names where traces go, the example service\'s apply is one trace reaching the Engine requests of its load balancers, and Ctrl-C exits 0', async (t) => {
  const otlp = await startOtlpReceiver();
  t.after(() => otlp.close());
  const cwd = await mkdtemp(path.join(os.tmpdir(), 'lbaas-dev-tracing-'));
  t.after(() => rm(cwd, { recursive: true, force: true }));
  const dev = startLongRun(t, await devArgs(), {
    cwd,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
  });

  await until('lbaas dev to converge the example', async () => (/^converged on 2 load balancers$/m.test(dev.out()) ? true : dev.proc.exitCode !== null ? assert.fail(dev.out()) : false), 180_000, 250);
  assert.match(dev.out(), new RegExp(`^traces\\s+${otlp.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/v1/traces \\(http/json, service lbaas-dev\\)$`, 'm'), dev.out());
  dev.proc.kill('SIGINT');
  assert.equal(await dev.exited, 0, dev.out());

  const spans = otlp.spans();
  const apply = spans.find((s) => s.service === 'lbaas-dev' && s.name.startsWith('UpdateWithStartWorkflow:'));
  assert.ok(apply, `the apply's span: ${[...new Set(spans.map((s) => s.name))].join(', ')}`);
  const trace = spans.filter((s) => s.traceId === apply.traceId);
  const lbRuns = trace.filter((s) => s.name === 'RunWorkflow:reconcileLoadBalancer');
  assert.equal(lbRuns.length, 2, 'one reconcileLoadBalancer run per demo load balancer in the trace');
  const engine = trace.filter((s) => s.attributes['http.route'] !== undefined);
  assert.ok(engine.some((s) => s.attributes['http.request.method'] === 'POST'), `Engine writes in the trace: ${engine.map((s) => s.name).join(', ')}`);
  assert.ok(trace.every((s) => s.service === 'lbaas-dev'), 'every span from lbaas dev');
});
