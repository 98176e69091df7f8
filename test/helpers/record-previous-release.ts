/**
 * Records what the release before entities were PINNED (PREVIOUS_RELEASE in test/upgrade/previous-build.ts) puts across
 * builds, for test/unit/schema.test.ts to decode with this build's readers: the continue-as-new inputs of a controller
 * and a pool, and every signal the two exchange (subscribe, poolMembers with all members and with a delta, report,
 * unsubscribe). That release is built in a git worktree and runs as `lbaas worker` on a dev server and the Engine
 * simulator of this script's own; nothing of this build's workflow code runs. Writes
 * test/fixtures/previous-release/{controller-input,pool-input,messages}.json. Run once; kept with workflows/legacy/:
 *
 *   npx tsc -p . && node dist/test/helpers/record-previous-release.js
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type * as proto from '@temporalio/proto';
import { applyUpdate, poolAddUpdate, poolSetUpdate, resyncSignal, waitConvergedUpdate, workflowIds, deleteUpdate } from '../../contract';
import { startDevServer } from '../../dev/devserver';
import { startSimulator } from '../../simulator';
import { buildPrevious, upgradeFrom } from '../upgrade/previous-build';
import { exampleSpec, seedLoadBalancer } from './fixtures';
import { spawnWorker } from './ops-process';
import { TEST_TOKEN } from './stack';
import { until } from './workflows';

type Event = proto.temporal.api.history.v1.IHistoryEvent;
const say = (line: string) => process.stderr.write(`[record-previous-release] ${line}\n`);
const decode = (p: proto.temporal.api.common.v1.IPayloads | null | undefined): unknown => JSON.parse(Buffer.from(p?.payloads?.[0]?.data ?? new Uint8Array()).toString('utf8'));

async function main(): Promise<void> {
  const out = path.resolve(process.argv[2] ?? path.join(__dirname, '..', '..', '..', 'test', 'fixtures', 'previous-release'));
  mkdirSync(out, { recursive: true });
  const old = await buildPrevious(await upgradeFrom([], {}), say);
  const server = await startDevServer({});
  const sim = await startSimulator({ port: 0, token: TEST_TOKEN, deployMs: { min: 20, max: 40 }, seed: 5 });
  const worker = spawnWorker({ temporalAddress: server.address, namespace: server.namespace, taskQueue: 'previous-release', engineUrl: sim.url, token: TEST_TOKEN, bundleAtStart: true, bin: old.bin, readyTimeoutMs: 180_000 });
  const connection = await Connection.connect({ address: server.address });
  try {
    await worker.ready;
    const client = new Client({ connection, namespace: server.namespace });
    const lb = seedLoadBalancer(sim, 'previous-release-lb');
    const uid = 'previous-release-service';
    const pool = 'previous-release-pool';
    const taskQueue = 'previous-release';
    // The inputs that release's clients sent (no `v`), with the smallest history limits, so that both rotate.
    const poolHandle = await client.workflow.start('serverPool', { workflowId: workflowIds.pool(pool), taskQueue, args: [{ name: pool, historyLimit: 20 }] });
    await poolHandle.executeUpdate(poolSetUpdate, { args: [[{ name: 'node-1', address: '10.0.0.11' }]] });
    const controller = await client.workflow.start('serviceController', { workflowId: workflowIds.controller(uid), taskQueue, args: [{ serviceUid: uid, historyLimit: 20 }] });
    const raw = exampleSpec([lb], { serviceUid: uid, serverPool: pool });
    delete raw.servers;
    const { revision } = await controller.executeUpdate(applyUpdate, { args: [raw] });
    await controller.executeUpdate(waitConvergedUpdate, { args: [revision] });
    // A member added: the pool sends a delta to a subscriber it sent the previous revision.
    await poolHandle.executeUpdate(poolAddUpdate, { args: [[{ name: 'node-2', address: '10.0.0.12' }]] });
    const first = controller.firstExecutionRunId;
    const rotated = async (id: string, runId: string) => (await client.workflow.getHandle(id, runId).describe()).status.name === 'CONTINUED_AS_NEW';
    await until('the controller continued as new', async () => {
      if (await rotated(workflowIds.controller(uid), first)) return true;
      await controller.signal(resyncSignal);
      return false;
    }, 120_000, 1_000);
    await until('the pool continued as new', () => rotated(workflowIds.pool(pool), poolHandle.firstExecutionRunId), 120_000, 500);
    await client.workflow.getHandle(workflowIds.controller(uid)).executeUpdate(deleteUpdate);

    const events = async (id: string): Promise<Event[][]> => {
      const runs: Event[][] = [];
      for await (const w of client.workflow.list({ query: `WorkflowId = '${id}'` })) runs.push((await client.workflow.getHandle(id, w.runId).fetchHistory()).events ?? []);
      return runs;
    };
    const controllerRuns = await events(workflowIds.controller(uid));
    const poolRuns = await events(workflowIds.pool(pool));
    const canInput = (runs: Event[][]) => runs.flat().map((e) => e.workflowExecutionContinuedAsNewEventAttributes?.input).find((i) => i);
    const signals = (runs: Event[][], name: string) =>
      runs.flat().flatMap((e) => {
        const a = e.workflowExecutionSignaledEventAttributes;
        return a?.signalName === name ? [decode(a.input)] : [];
      });
    const members = signals(controllerRuns, 'poolMembers') as { servers?: unknown; delta?: unknown }[];
    const messages = {
      subscribe: signals(poolRuns, 'subscribe')[0],
      unsubscribe: signals(poolRuns, 'unsubscribe')[0],
      report: signals(poolRuns, 'report')[0],
      poolMembersServers: members.find((m) => m.servers !== undefined),
      poolMembersDelta: members.find((m) => m.delta !== undefined),
    };
    for (const [k, v] of Object.entries(messages)) if (v === undefined) throw new Error(`no ${k} signal was recorded`);
    const files = { 'controller-input.json': decode(canInput(controllerRuns)), 'pool-input.json': decode(canInput(poolRuns)), 'messages.json': messages };
    for (const [name, value] of Object.entries(files)) {
      if (value === undefined) throw new Error(`nothing recorded for ${name}`);
      writeFileSync(path.join(out, name), `${JSON.stringify({ recordedFrom: `${old.named} (${old.commit})`, value }, null, 1)}\n`);
      say(`wrote ${name}`);
    }
  } finally {
    await worker.kill();
    await connection.close();
    await sim.close();
    await server.stop();
    await old.remove();
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`record-previous-release: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  });
}
