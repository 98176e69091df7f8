/**
 * Tracing off costs nothing: a process that loads the worker, the Engine client and the CLI's connection code and
 * asks for tracing without an endpoint has loaded no OpenTelemetry module at all. (This file imports nothing of
 * OpenTelemetry itself; test/unit/tracing.test.ts does, for the spans.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EngineClient } from '../../activities/engine';
import { installTracing } from '../../common/tracing';
import { createLbaasWorker } from '../../worker/main';
import { startWorker } from '../../worker/start';
import { connect } from '../../cli/connect';
import { worker } from '../../cli/commands/worker';
import { TOKEN } from '../helpers/engine-mock';

test('with no OTLP endpoint nothing of OpenTelemetry is loaded: not the API, not the SDK, not Temporal interceptors', async () => {
  assert.equal(installTracing({ OTEL_SERVICE_NAME: 'lbaas-worker' }, 'lbaas-worker'), null);
  const client = new EngineClient({ baseUrl: 'http://127.0.0.1:9', token: TOKEN });
  await client.close();
  assert.ok([createLbaasWorker, startWorker, connect, worker].every((f) => typeof f === 'function'));
  const loaded = Object.keys(require.cache).filter((f) => /[\\/]@opentelemetry[\\/]|interceptors-opentelemetry/.test(f));
  assert.deepEqual(loaded, []);
});
