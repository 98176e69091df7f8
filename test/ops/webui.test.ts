/**
 * What an operator sees in the Temporal Web UI (2.54): a service's workflows found by the LbaasServiceUid search
 * attribute, and the controller's page with its id, summary and current details. Driven by playwright-core on the
 * system's Chromium (Debian package `chromium`); screenshots go to test-artifacts/webui-*.png.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import type { Browser, Page } from 'playwright-core';
import { EngineClient } from '../../activities/engine';
import { startDevServer, type DevServer } from '../../dev/devserver';
import { startSimulator, type RunningSimulator } from '../../simulator';
import { createLbaasWorker } from '../../worker/main';
import { defaultDeploymentVersion, setCurrentVersion } from '../../worker/versioning';
import { seedLoadBalancer } from '../helpers/fixtures';
import { REPO_ROOT } from '../helpers/ops-process';
import { serviceSpec, TrackedLbaas, uniqueUid, untilVisible } from '../helpers/ops-services';
import { TEST_TOKEN, workflowBundle } from '../helpers/stack';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts');
const haveChromium = existsSync(CHROMIUM);
const skip = haveChromium ? false : `${CHROMIUM} not found: install the Debian package "chromium" (apt-get install -y chromium) to run the Web UI test`;

let server: DevServer;
let sim: RunningSimulator;
let engine: EngineClient;
let connection: Connection;
let nativeConnection: NativeConnection;
let worker: Worker;
let running: Promise<void>;
let lbaas: TrackedLbaas;
let browser: Browser;

before(async () => {
  if (!haveChromium) return;
  mkdirSync(ARTIFACTS, { recursive: true });
  server = await startDevServer({ ui: true });
  sim = await startSimulator({ port: 0, token: TEST_TOKEN, deployMs: { min: 20, max: 60 }, seed: 17 });
  engine = new EngineClient({ baseUrl: sim.url, token: TEST_TOKEN });
  connection = await Connection.connect({ address: server.address });
  nativeConnection = await NativeConnection.connect({ address: server.address });
  const client = new Client({ connection, namespace: server.namespace });
  const taskQueue = 'ops-webui';
  worker = await createLbaasWorker({
    connection: nativeConnection,
    namespace: server.namespace,
    taskQueue,
    engine,
    temporalClient: client,
    workflowBundle: await workflowBundle(),
    shutdownGraceTime: '1s',
  });
  running = worker.run();
  await setCurrentVersion(client, server.namespace, defaultDeploymentVersion());
  lbaas = new TrackedLbaas(client, taskQueue);
  const { chromium } = await import('playwright-core');
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});
after(async () => {
  await browser?.close();
  await lbaas?.cleanup();
  if (worker) {
    worker.shutdown();
    await running;
  }
  await nativeConnection?.close();
  await connection?.close();
  await engine?.close();
  await sim?.close();
  await server?.stop();
});

async function shot(page: Page, name: string): Promise<string> {
  const file = path.join(ARTIFACTS, `webui-${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** The UI renders user markdown (summaries, details) in frames loaded from `/render?content=...`. */
async function renderedMarkdown(page: Page, count: number): Promise<{ text: string; items: string[] }[]> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const frames = page.frames().filter((f) => f.url().includes('/render?'));
    const rendered = await Promise.all(
      frames.map(async (f) => ({
        text: (await f.locator('main').innerText().catch(() => '')).trim(),
        items: (await f.locator('main li').allInnerTexts().catch(() => [] as string[])).map((t) => t.trim()),
      })),
    );
    if (rendered.filter((r) => r.text !== '').length >= count) return rendered;
    if (Date.now() > deadline) throw new Error(`expected ${count} rendered markdown frames, found ${JSON.stringify(rendered)}`);
    await page.waitForTimeout(200);
  }
}

let uid: string;
let lb: string;
let controllerRunId: string;

/** Applies the service once for both tests; waits until visibility shows it converged. */
async function appliedService(): Promise<void> {
  if (uid) return;
  uid = uniqueUid('ops-webui');
  lb = seedLoadBalancer(sim, `lb-${uid}`);
  await lbaas.applyRaw(serviceSpec(uid, [lb]));
  assert.equal((await lbaas.waitConverged(uid, 1)).converged, true);
  await untilVisible(lbaas.client, `LbaasServiceUid = "${uid}"`, [`lbaas/${uid}`, `lbaas/${uid}/lb/${lb}`, `lbaas/${uid}/pass/1`]);
  await untilVisible(lbaas.client, `LbaasServiceUid = "${uid}" AND LbaasPhase = "Converged"`, [`lbaas/${uid}`]);
  controllerRunId = (await lbaas.controller(uid).describe()).runId;
}

async function withPage<T>(fn: (page: Page) => Promise<T>): Promise<T> {
  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  page.setDefaultTimeout(15_000);
  try {
    return await fn(page);
  } finally {
    await page.close();
  }
}

const controllerPage = (tab: string) => `${server.uiUrl}/namespaces/${server.namespace}/workflows/${encodeURIComponent(`lbaas/${uid}`)}/${controllerRunId}/${tab}`;

test('Web UI: the LbaasServiceUid query lists the controller lbaas/<uid> and its children; the controller page shows its id, type, summary and current details; the load balancer run shows activity summaries', { skip }, async () => {
  await appliedService();
  await withPage(async (page) => {
    // The list takes the visibility query in `query`.
    await page.goto(`${server.uiUrl}/namespaces/${server.namespace}/workflows?query=${encodeURIComponent(`LbaasServiceUid="${uid}"`)}`);
    const ids = [`lbaas/${uid}`, `lbaas/${uid}/lb/${lb}`, `lbaas/${uid}/pass/1`];
    for (const id of ids) await page.getByRole('link', { name: id, exact: true }).waitFor();
    assert.equal(await page.getByRole('link', { name: new RegExp(`^lbaas/${uid}`) }).count(), 3, 'exactly the service\'s three workflows are listed');
    await page.getByText('3 Workflows').waitFor();
    await shot(page, 'list');

    await page.getByRole('link', { name: `lbaas/${uid}`, exact: true }).click();
    // UI 2.54 opens a workflow on its Timeline tab (2.42 opened History).
    await page.waitForURL(controllerPage('timeline'));
    await page.getByRole('heading', { name: `lbaas/${uid}` }).waitFor();
    await page.getByText('serviceController', { exact: true }).first().waitFor();
    await page.getByText(controllerRunId, { exact: true }).first().waitFor();
    await page.getByText(`reconcile ${uid} revision 1 (pass 1)`).first().waitFor();
    await shot(page, 'controller');

    await page.getByText('User Metadata', { exact: true }).first().click();
    await page.waitForURL(controllerPage('user-metadata'));
    const md = await renderedMarkdown(page, 2);
    await shot(page, 'controller-metadata');
    assert.ok(md.some((m) => m.text === `controller of service ${uid}`), `summary among ${JSON.stringify(md)}`);
    const details = md.find((m) => m.text.startsWith('Converged'));
    assert.ok(details, `current details among ${JSON.stringify(md)}`);
    for (const part of ['Converged — revision 1', 'last pass 1: converged', '2001:db8::10: 80, 443', '203.0.113.10: 80, 443']) assert.ok(details.text.includes(part), `current details show "${part}": ${details.text}`);

    await page.goto(`${server.uiUrl}/namespaces/${server.namespace}/workflows/${encodeURIComponent(`lbaas/${uid}/lb/${lb}`)}`);
    await page.getByText('reconcileLoadBalancer', { exact: true }).first().waitFor();
    // Each Engine step is named: the group that creates and awaits the Backends names both.
    await page.getByText(`create and await Backends http.${uid}, https.${uid} on ${lb.slice(0, 8)}…`).first().waitFor();
    await shot(page, 'loadbalancer');
  });
});

test('Web UI: the controller\'s current details render the per-address status as a markdown list', { skip }, async () => {
  await appliedService();
  await withPage(async (page) => {
    await page.goto(controllerPage('user-metadata'));
    const md = await renderedMarkdown(page, 2);
    const details = md.find((m) => m.text.startsWith('Converged'));
    assert.ok(details, `current details among ${JSON.stringify(md)}`);
    assert.deepEqual(details.items, ['2001:db8::10: 80, 443', '203.0.113.10: 80, 443'], `rendered as: ${JSON.stringify(details.text)}`);
  });
});
