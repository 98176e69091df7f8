/**
 * What an operator sees in the Temporal Web UI (2.54): a service's workflows found by the LbaasServiceUid search
 * attribute, and the controller's page with its id, summary and current details. Driven by playwright-core on the
 * system's Chromium (Debian package `chromium`); screenshots (of the viewport) go to test-artifacts/webui-*.png. The
 * Web UI server is the file's own, in front of the Temporal server the other workflow tests use (the test runner's
 * shared one, or one of its own when the file runs alone): what is proved is what the UI shows of our workflows.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import type { Browser, Page } from 'playwright-core';
import { EngineClient } from '../../activities/engine';
import { startWebUi, type WebUi } from '../../dev/devserver';
import { startSimulator, type RunningSimulator } from '../../simulator';
import { createLbaasWorker } from '../../worker/main';
import { defaultDeploymentVersion, setCurrentVersion } from '../../worker/versioning';
import { seedLoadBalancer } from '../helpers/fixtures';
import { REPO_ROOT } from '../helpers/ops-process';
import { serviceSpec, TrackedLbaas, uniqueUid, untilVisible } from '../helpers/ops-services';
import { stopTemporalServer, temporalServer, TEST_TOKEN, workflowBundle, type TemporalTestServer } from '../helpers/stack';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts');
const haveChromium = existsSync(CHROMIUM);
const skip = haveChromium ? false : `${CHROMIUM} not found: install the Debian package "chromium" (apt-get install -y chromium) to run the Web UI test`;

let server: TemporalTestServer;
let ui: WebUi;
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
  server = await temporalServer();
  ui = await startWebUi({ address: server.address, namespace: server.namespace });
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
  await ui?.stop();
  await stopTemporalServer();
});

async function shot(page: Page, name: string): Promise<string> {
  const file = path.join(ARTIFACTS, `webui-${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

/**
 * How long a page wait may take: under `npm run test:ops` Chromium, the UI server and the Temporal server share two
 * CPUs with seven other test files, and a page that renders in a second alone has taken more than 15 s there.
 */
const PAGE_WAIT_MS = 45_000;

/** The UI renders user markdown (summaries, details) in frames loaded from `/render?content=...`. */
async function renderedMarkdown(page: Page, count: number): Promise<{ text: string; items: string[] }[]> {
  const deadline = Date.now() + PAGE_WAIT_MS;
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

/** Applies the service; waits until visibility shows it converged. */
async function appliedService(): Promise<void> {
  uid = uniqueUid('ops-webui');
  lb = seedLoadBalancer(sim, `lb-${uid}`);
  await lbaas.applyRaw(serviceSpec(uid, [lb]));
  assert.equal((await lbaas.waitConverged(uid, 1)).converged, true);
  await untilVisible(lbaas.client, `LbaasServiceUid = "${uid}"`, [`lbaas/${uid}`, `lbaas/${uid}/lb/${lb}`, `lbaas/${uid}/pass/1`]);
  await untilVisible(lbaas.client, `LbaasServiceUid = "${uid}" AND LbaasPhase = "Converged"`, [`lbaas/${uid}`]);
  controllerRunId = (await lbaas.controller(uid).describe()).runId;
}

/**
 * A page whose waits allow PAGE_WAIT_MS. A wait that still runs out fails with what the page showed (its address and
 * the start of its text) and a screenshot.
 */
async function withPage<T>(fn: (page: Page) => Promise<T>): Promise<T> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(PAGE_WAIT_MS);
  try {
    return await fn(page);
  } catch (err) {
    const text = (await page.locator('body').innerText({ timeout: 5_000 }).catch(() => '(unreadable)')).replace(/\s+/g, ' ').slice(0, 600);
    const file = await shot(page, 'failure').catch(() => '(no screenshot)');
    throw new Error(`${(err as Error).message}\n  page: ${page.url()}\n  showing: ${text}\n  screenshot: ${file}`, { cause: err });
  } finally {
    await page.close();
  }
}

const controllerPage = (tab: string) => `${ui.url}/namespaces/${server.namespace}/workflows/${encodeURIComponent(`lbaas/${uid}`)}/${controllerRunId}/${tab}`;

test('Web UI: the LbaasServiceUid query lists the controller lbaas/<uid> and its children; the controller page shows its id, type, summary and current details, the per-address status as a markdown list; the load balancer run shows activity summaries', { skip }, async () => {
  await appliedService();
  await withPage(async (page) => {
    // The list takes the visibility query in `query`.
    await page.goto(`${ui.url}/namespaces/${server.namespace}/workflows?query=${encodeURIComponent(`LbaasServiceUid="${uid}"`)}`);
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
    for (const part of ['Converged — revision 1', 'last pass 1: converged']) assert.ok(details.text.includes(part), `current details show "${part}": ${details.text}`);
    assert.deepEqual(details.items, ['2001:db8::10: 80, 443', '203.0.113.10: 80, 443'], `per-address status rendered as a list: ${JSON.stringify(details.text)}`);

    // The load balancer's run, addressed by its run id (the address without one makes the UI look the latest run up first).
    const lbRunId = (await lbaas.client.workflow.getHandle(`lbaas/${uid}/lb/${lb}`).describe()).runId;
    await page.goto(`${ui.url}/namespaces/${server.namespace}/workflows/${encodeURIComponent(`lbaas/${uid}/lb/${lb}`)}/${lbRunId}`);
    await page.getByText('reconcileLoadBalancer', { exact: true }).first().waitFor();
    // Each Engine step is named: each port's Backend is created and awaited in a group of its own.
    for (const backend of [`http.${uid}`, `https.${uid}`]) await page.getByText(`create and await Backend ${backend} on ${lb.slice(0, 8)}…`).first().waitFor();
    await shot(page, 'loadbalancer');
  });
});
