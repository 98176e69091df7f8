/**
 * Tracing settings (common/tracing.ts) and the Engine request spans (activities/engine/tracing.ts), on a tracer
 * provider of the test's own that keeps the spans in memory.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { context, SpanStatusCode } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { EngineRateLimitedError } from '../../activities/engine';
import { ACTIVITY_ATTEMPT_KEY } from '../../activities/engine/tracing';
import { routeOf } from '../../activities/engine/transport';
import { CliError } from '../../common/errors';
import { installTracing, tracingSettings } from '../../common/tracing';
import { LBAAS_BIN, REPO_ROOT } from '../helpers/cli';
import { BACKEND, BACKEND_ID, SERVER_ID, TAG, TOKEN, harness } from '../helpers/engine-mock';

describe('tracing settings', () => {
  test('off without an OTLP endpoint, with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none (test/unit/tracing-off.test.ts: then nothing of OpenTelemetry is loaded)', () => {
    assert.equal(tracingSettings({}, 'lbaas'), null);
    assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }, 'lbaas'), null);
    assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }, 'lbaas'), null);
    assert.equal(installTracing({ OTEL_SERVICE_NAME: 'x' }, 'lbaas'), null);
  });

  test('the generic endpoint gets /v1/traces appended, the traces endpoint is used as given; http/protobuf by default; OTEL_SERVICE_NAME over the default name', () => {
    assert.deepEqual(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }, 'lbaas-worker'), {
      url: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
      serviceName: 'lbaas-worker',
    });
    assert.deepEqual(
      tracingSettings(
        { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://ignored:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://c/otlp/traces', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'lb-prod' },
        'lbaas-worker',
      ),
      { url: 'https://c/otlp/traces', protocol: 'http/json', serviceName: 'lb-prod' },
    );
    // The per-signal protocol wins over the generic one.
    assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }, 'l')?.protocol, 'http/json');
  });

  test('an unsupported protocol or a bad endpoint is invalid input naming the variable', () => {
    const invalid = (env: NodeJS.ProcessEnv, message: string) =>
      assert.throws(() => tracingSettings(env, 'lbaas'), (err: unknown) => err instanceof CliError && err.exitCode === 2 && err.message === message);
    invalid({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" is not supported; use http/protobuf or http/json');
    invalid({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: not an http(s) URL: "collector:4318"');
    invalid({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' }, 'OTEL_EXPORTER_OTLP_ENDPOINT: not an absolute http(s) URL: "not a url"');
  });
});

test('lbaas list and lbaas worker with OTEL_EXPORTER_OTLP_PROTOCOL=grpc exit 2 naming the variable, before connecting to anything', () => {
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, TEMPORAL_ADDRESS: '127.0.0.1:9', TEMPORAL_CONFIG_FILE: `${REPO_ROOT}/does-not-exist/temporal.toml`, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' };
  for (const args of [['list'], ['worker']]) {
    const r = spawnSync(process.execPath, [LBAAS_BIN, ...args], { cwd: REPO_ROOT, env: { ...env, ANEXIA_TOKEN: TOKEN }, encoding: 'utf8', timeout: 30_000, killSignal: 'SIGKILL' });
    assert.equal(r.status, 2, `lbaas ${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" is not supported; use http\/protobuf or http\/json/);
    assert.ok(!r.stderr.includes(TOKEN));
  }
});

describe('Engine request spans', () => {
  test('route patterns never carry identifiers or tags', () => {
    assert.equal(routeOf('/api/LBaaS/v1/backend.json'), '/api/LBaaS/v1/backend.json');
    assert.equal(routeOf(`/api/LBaaS/v1/backend.json/${BACKEND_ID}`), '/api/LBaaS/v1/backend.json/{identifier}');
    assert.equal(routeOf(`/api/core/v1/resource.json/${SERVER_ID}/tags/${TAG}`), '/api/core/v1/resource.json/{identifier}/tags/{tag}');
  });

  // The worker's provider registers this context manager globally (common/tracing.ts); the attempt travels in it.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

  function traced() {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    return { exporter, tracer: provider.getTracer('test') };
  }

  test('one CLIENT span per request: method and route, status, pacer wait, the activity attempt; a 429 carries the wait it asks for and is an error; nothing holds the token', async () => {
    const { exporter, tracer } = traced();
    const h = harness({ tracer, pacing: { backoffStartMs: 1, backoffCapMs: 1 } });
    h.reply({ status: 200, body: BACKEND });
    h.reply({ status: 429, body: '', headers: { 'retry-after': '3' } });
    await context.with(context.active().setValue(ACTIVITY_ATTEMPT_KEY, 2), () => h.client.get('backend', BACKEND_ID));
    await assert.rejects(h.client.tag(SERVER_ID, TAG), EngineRateLimitedError);
    const [get, tag] = exporter.getFinishedSpans();
    assert.ok(get && tag);
    assert.equal(get.name, 'GET /api/LBaaS/v1/backend.json/{identifier}');
    assert.equal(get.kind, 2 /* CLIENT */);
    assert.deepEqual(
      { ...get.attributes, 'lbaas.engine.pacer_wait_ms': typeof get.attributes['lbaas.engine.pacer_wait_ms'] },
      {
        'http.request.method': 'GET',
        'http.route': '/api/LBaaS/v1/backend.json/{identifier}',
        'server.address': 'engine.test',
        'server.port': 80,
        'url.scheme': 'http',
        'lbaas.engine.resource': 'backend',
        'lbaas.activity.attempt': 2,
        'lbaas.engine.pacer_wait_ms': 'number',
        'http.response.status_code': 200,
      },
    );
    assert.equal(get.status.code, SpanStatusCode.UNSET);
    assert.equal(tag.name, 'POST /api/core/v1/resource.json/{identifier}/tags/{tag}');
    assert.equal(tag.attributes['http.response.status_code'], 429);
    assert.equal(tag.attributes['lbaas.engine.retry_after_ms'], 3000);
    assert.equal(tag.attributes['lbaas.activity.attempt'], undefined, 'no attempt outside an activity');
    assert.equal(tag.status.code, SpanStatusCode.ERROR);
    for (const s of [get, tag]) for (const [k, v] of Object.entries(s.attributes)) assert.ok(!String(v).includes(TOKEN), `${s.name} ${k}`);
    await h.agent.close();
  });

  test('a request that never got an answer ends its span as an error with the redacted message', async () => {
    const { exporter, tracer } = traced();
    const h = harness({ tracer, requestTimeoutMs: 30 });
    h.reply({ status: 200, body: BACKEND, delayMs: 1_000 });
    await assert.rejects(h.client.get('backend', BACKEND_ID));
    const [span] = exporter.getFinishedSpans();
    assert.equal(span?.status.code, SpanStatusCode.ERROR);
    assert.equal(span?.status.message, `GET /api/LBaaS/v1/backend.json/${BACKEND_ID}: network error: timed out after 30 ms`);
    assert.equal(span?.attributes['error.type'], 'EngineNetworkError');
    assert.equal(span?.attributes['http.response.status_code'], undefined);
    await h.agent.close();
  });
});
