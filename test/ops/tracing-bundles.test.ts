/**
 * Prebuilt workflow bundles (LBAAS_WORKFLOW_BUNDLE) and tracing, on worker processes: a bundle built with the
 * OpenTelemetry workflow interceptors runs on a worker without tracing (its workflow spans are discarded, not an
 * error per span), and a worker with tracing on a bundle without them says at start that workflows make no spans.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { startSimulator, type RunningSimulator } from '../../simulator';
import { workflowsPath } from '../../worker/main';
import { WORKFLOW_TRACING_MODULES } from '../../worker/tracing';
import { seedLoadBalancer } from '../helpers/fixtures';
import { spawnWorker, type WorkerProcess } from '../helpers/ops-process';
import { serviceSpec, TrackedLbaas, uniqueUid } from '../helpers/ops-services';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver';
import { stopTemporalServer, temporalServer, TEST_TOKEN } from '../helpers/stack';

let sim: RunningSimulator;
let connection: Connection;
let otlp: OtlpReceiver;
let dir: string;
const workers: WorkerProcess[] = [];

before(async () => {
  sim = await startSimulator({ port: 0, token: TEST_TOKEN, deployMs: { min: 20, max: 60 }, seed: 5 });
  otlp = await startOtlpReceiver();
  dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-bundles-'));
  connection = await Connection.connect({ address: (await temporalServer()).address });
});
after(async () => {
  for (const w of workers) await w.kill();
  await connection?.close();
  await otlp?.close();
  await sim?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  await stopTemporalServer();
});

async function worker(extra: { bundle: string; env?: Record<string, string> }): Promise<{ w: WorkerProcess; lbaas: TrackedLbaas }> {
  const srv = await temporalServer();
  const taskQueue = `ops-bundles-${randomUUID()}`;
  const w = spawnWorker({
    temporalAddress: srv.address,
    namespace: srv.namespace,
    taskQueue,
    engineUrl: sim.url,
    token: TEST_TOKEN,
    bundleAtStart: true,
    extraEnv: { LBAAS_WORKFLOW_BUNDLE: extra.bundle, ...extra.env },
  });
  workers.push(w);
  await w.ready;
  return { w, lbaas: new TrackedLbaas(new Client({ connection, namespace: srv.namespace }), taskQueue) };
}

test('a bundle built with the tracing interceptors converges a service on a worker without tracing, with no sink error', async () => {
  const quiet = { info() {}, warn() {}, debug() {}, trace() {}, log() {}, error: console.error };
  const { code } = await bundleWorkflowCode({ workflowsPath, logger: quiet, workflowInterceptorModules: WORKFLOW_TRACING_MODULES });
  const file = path.join(dir, 'traced-bundle.js');
  await writeFile(file, code);
  const { w, lbaas } = await worker({ bundle: file });
  const uid = uniqueUid('bundle-traced');
  const lb = seedLoadBalancer(sim, `lb-${uid}`);
  await lbaas.applyRaw(serviceSpec(uid, [lb]));
  assert.equal((await lbaas.waitConverged(uid, 1)).converged, true);
  await lbaas.cleanup();
  assert.doesNotMatch(w.output(), /unregistered external sink|External sink function threw/);
  assert.doesNotMatch(w.output(), /without the OpenTelemetry workflow interceptors/);
});

test('a worker with tracing on a bundle without the interceptors warns once at start that workflows make no spans', async (t) => {
  const plain = process.env.LBAAS_TEST_WORKFLOW_BUNDLE;
  if (!plain) return t.skip('needs the run bundle (scripts/test.js builds it: npm run test:ops)');
  const { w } = await worker({ bundle: plain, env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url } });
  const warnings = w.output().split('\n').filter((l) => l.includes('built without the OpenTelemetry workflow interceptors'));
  assert.equal(warnings.length, 1, w.output());
});
