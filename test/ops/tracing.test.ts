/**
 * Traces of one pass, received over OTLP/HTTP by a collector stand-in in this process (test/helpers/otlp-receiver.ts):
 * `lbaas apply` as a CLI process exporting OTLP/JSON, `lbaas worker` as a worker process exporting OTLP/protobuf,
 * both configured only by the standard OTEL_* variables.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { startSimulator, type RunningSimulator } from '../../simulator';
import { cliEnv, runCli } from '../helpers/cli';
import { seedLoadBalancer } from '../helpers/fixtures';
import { spawnWorker, type WorkerProcess } from '../helpers/ops-process';
import { serviceSpec, uniqueUid } from '../helpers/ops-services';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver';
import { stopTemporalServer, temporalServer, TEST_TOKEN } from '../helpers/stack';
import { until } from '../helpers/workflows';

let sim: RunningSimulator;
let worker: WorkerProcess;
let otlp: OtlpReceiver;
let dir: string;
let env: NodeJS.ProcessEnv;

before(async () => {
  const srv = await temporalServer();
  sim = await startSimulator({ port: 0, token: TEST_TOKEN, deployMs: { min: 20, max: 60 }, seed: 23 });
  otlp = await startOtlpReceiver();
  dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-tracing-'));
  const taskQueue = `ops-tracing-${randomUUID()}`;
  // Bundled at start: the worker adds Temporal's workflow interceptor module to the bundle itself.
  worker = spawnWorker({
    temporalAddress: srv.address,
    namespace: srv.namespace,
    taskQueue,
    engineUrl: sim.url,
    token: TEST_TOKEN,
    bundleAtStart: true,
    extraEnv: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_SERVICE_NAME: 'lbaas-worker-test', OTEL_BSP_SCHEDULE_DELAY: '100', LBAAS_LOG_FORMAT: 'json', LBAAS_LOG_LEVEL: 'DEBUG' },
  });
  env = cliEnv(
    { address: srv.address, namespace: srv.namespace, taskQueue },
    { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlp.url}/v1/traces`, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'lbaas-cli-test' },
  );
  await worker.ready;
});
after(async () => {
  await worker?.kill();
  await otlp?.close();
  await sim?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  await stopTemporalServer();
});

const ENGINE_ROUTE = /^\/api\/(LBaaS\/v1\/\w+\.json|core\/v1\/resource\.json)(\/\{identifier\}(\/tags\/\{tag\})?)?$/;

/** The spans from `span`'s parent up to the root of what was received, nearest first. */
function ancestors(span: ReceivedSpan, byId: Map<string, ReceivedSpan>): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (let s = byId.get(span.parentSpanId); s; s = byId.get(s.parentSpanId)) out.push(s);
  return out;
}
const names = (spans: readonly ReceivedSpan[]) => spans.map((s) => s.name).join(' < ');

test('tracing: one apply is one trace from the CLI span through the controller, pass and load balancer workflows and their activities down to every Engine request of the pass (route pattern, status, pacer wait, attempt), and a later request (the delete) the root of the trace of its own pass; JSON from the CLI, protobuf from the worker; the worker JSON log lines of each activity name its trace and span; the token is in no span', async () => {
  const uid = uniqueUid('ops-trace');
  const lb = seedLoadBalancer(sim, `lb-${uid}`);
  const file = path.join(dir, `${uid}.json`);
  await writeFile(file, JSON.stringify(serviceSpec(uid, [lb])));
  sim.resetStats();
  const applied = await runCli(['apply', '-f', file, '--wait', '--timeout', '90s'], { env, timeoutMs: 120_000 });
  assert.equal(applied.code, 0, applied.stderr);
  const engineRequests = Object.values(sim.stats().requests).reduce((a, n) => a + n, 0);

  // The controller's own run span ends when the controller does: delete the service so that it is exported too.
  const deleted = await runCli(['delete', uid, '--wait', '--timeout', '90s'], { env, timeoutMs: 120_000 });
  assert.equal(deleted.code, 0, deleted.stderr);

  const applySpan = () => otlp.spans().find((s) => s.service === 'lbaas-cli-test' && s.name.startsWith('UpdateWithStartWorkflow:') && s.attributes.temporalWorkflowId === `lbaas/${uid}`);
  const inTrace = () => {
    const root = applySpan();
    return root ? otlp.spans().filter((s) => s.traceId === root.traceId) : [];
  };
  const engineSpans = () => inTrace().filter((s) => s.attributes['http.route'] !== undefined);
  // The delete is a request of its own: its pass (pass 2) is traced under the delete's CLI span, not the apply's.
  const deleteSpan = () => otlp.spans().find((s) => s.service === 'lbaas-cli-test' && s.name === 'StartWorkflowUpdate:delete');
  const deletePassActivity = () => {
    const d = deleteSpan();
    return d ? otlp.spans().find((s) => s.traceId === d.traceId && s.name.startsWith('RunActivity:') && s.attributes.temporalWorkflowId === `lbaas/${uid}/pass/2`) : undefined;
  };
  await until(
    `the apply's trace with the Engine request spans of its pass and the controller's run span; the delete's trace with its pass`,
    () => engineSpans().length >= engineRequests && inTrace().some((s) => s.name === 'RunWorkflow:serviceController') && deletePassActivity() !== undefined,
    30_000,
    200,
  );
  // Nothing more arrives late: give the exporters one more batch interval.
  await new Promise((r) => setTimeout(r, 500));

  const root = applySpan() as ReceivedSpan;
  const spans = inTrace();
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  assert.equal(root.parentSpanId, '', 'the CLI span is the root');
  assert.equal(root.encoding, 'json');
  // Every span of the trace hangs off a span that was received: one tree, no dangling parent.
  const dangling = spans.filter((s) => s !== root && !byId.has(s.parentSpanId)).map((s) => s.name);
  assert.deepEqual(dangling, [], 'spans whose parent was never exported');
  for (const s of spans.filter((x) => x.service === 'lbaas-worker-test')) assert.equal(s.encoding, 'protobuf', s.name);

  const controller = spans.find((s) => s.name === 'RunWorkflow:serviceController') as ReceivedSpan;
  assert.equal(controller.parentSpanId, root.spanId, 'the controller run is a child of the CLI span that started it');
  // Each pass is a child workflow of the controller run (the delete's pass included); the apply's is pass 1, known by
  // its activities (workflow spans carry no workflow id).
  const passActivity = spans.find((s) => s.name.startsWith('RunActivity:') && s.attributes.temporalWorkflowId === `lbaas/${uid}/pass/1`);
  assert.ok(passActivity, `an activity of pass 1 in the trace: ${spans.map((s) => `${s.name} ${s.attributes.temporalWorkflowId ?? ''}`).join(', ')}`);
  const pass = ancestors(passActivity, byId).find((s) => s.name === 'RunWorkflow:reconcileService');
  assert.ok(pass, `pass 1's run: ${names(ancestors(passActivity, byId))}`);
  assert.deepEqual(
    ancestors(pass, byId).map((s) => s.name),
    ['StartChildWorkflow:reconcileService', 'HandleUpdate:apply', root.name],
    'pass 1 < its start in the controller < the apply it carries out < the CLI span',
  );
  assert.equal(
    spans.filter((s) => s.name.startsWith('RunActivity:') && s.attributes.temporalWorkflowId === `lbaas/${uid}/pass/2`).length,
    0,
    "the delete's pass is not in the apply's trace",
  );
  const del = deleteSpan() as ReceivedSpan;
  const delSpans = otlp.spans().filter((s) => s.traceId === del.traceId);
  const delById = new Map(delSpans.map((s) => [s.spanId, s]));
  const delPass = ancestors(deletePassActivity() as ReceivedSpan, delById).find((s) => s.name === 'RunWorkflow:reconcileService');
  assert.ok(delPass, "pass 2's run in the delete's trace");
  assert.deepEqual(
    ancestors(delPass, delById).map((s) => s.name),
    ['StartChildWorkflow:reconcileService', 'HandleUpdate:delete', del.name],
    'pass 2 < its start in the controller < the delete it carries out < the delete CLI span',
  );
  const underPass = spans.filter((s) => ancestors(s, byId).includes(pass));
  const lbRuns = underPass.filter((s) => s.name === 'RunWorkflow:reconcileLoadBalancer');
  assert.equal(lbRuns.length, 1, 'one load balancer run under pass 1');

  // Every Engine request of the pass is one span, a child of the activity that sent it.
  const engine = underPass.filter((s) => s.attributes['http.route'] !== undefined);
  assert.equal(engine.length, engineRequests, 'one span per Engine request the simulator answered during the apply');
  for (const s of engine) {
    const chain = ancestors(s, byId);
    assert.match(chain[0]?.name ?? '', /^RunActivity:/, `${s.name}: ${names(chain)}`);
    assert.match(chain[1]?.name ?? '', /^StartActivity:/, `${s.name}: ${names(chain)}`);
    assert.match(String(s.attributes['http.route']), ENGINE_ROUTE);
    assert.equal(s.name, `${s.attributes['http.request.method']} ${s.attributes['http.route']}`);
    assert.equal(typeof s.attributes['http.response.status_code'], 'number');
    assert.equal(typeof s.attributes['lbaas.engine.pacer_wait_ms'], 'number');
    assert.equal(s.attributes['lbaas.activity.attempt'], 1, 'first attempts (the simulator failed nothing)');
    assert.equal(s.attributes['server.address'], '127.0.0.1');
  }
  const creates = engine.filter((s) => s.attributes['http.request.method'] === 'POST' && !String(s.attributes['http.route']).includes('tags'));
  assert.equal(creates.length, 12, 'the 12 objects created');
  const underLb = engine.filter((s) => ancestors(s, byId).includes(lbRuns[0] as ReceivedSpan));
  assert.ok(creates.every((s) => underLb.includes(s)), 'the creates are sent by the load balancer run');

  // JSON log lines of the pass's activities carry the trace and span ids of their activity spans: logs join traces.
  const activityLines = worker
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.message === 'Activity completed' && l.workflow_id === `lbaas/${uid}/pass/1`);
  assert.ok(activityLines.length > 0, 'log lines of pass 1 activities');
  for (const l of activityLines) {
    assert.equal(l.trace_id, root.traceId, JSON.stringify(l));
    assert.equal(byId.get(l.span_id as string)?.name, `RunActivity:${String(l.activityType)}`, JSON.stringify(l));
  }

  // The token is nowhere: not in an attribute, not in any byte sent to the collector.
  for (const s of otlp.spans()) for (const [k, v] of Object.entries(s.attributes)) assert.ok(!String(v).includes(TEST_TOKEN), `${s.name} ${k}`);
  for (const body of otlp.rawBodies()) assert.ok(!body.includes(TEST_TOKEN), 'an export request carries the token');
});
