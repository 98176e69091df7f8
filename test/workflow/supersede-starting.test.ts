/**
 * A pass superseded while its child's start is in flight: the controller has sent the StartChildWorkflowExecution
 * command of revision 1's pass, and revision 2 arrives before the server has recorded the child as started. The race
 * is made certain: a test-only workflow interceptor (test/helpers/hold-child-start.ts) holds the workflow task that
 * carries the start command until the server has admitted revision 2's update, so the update is in the very next task,
 * which the server hands out before it records the child's start. The pass's one activity, the fake
 * planObservedService (test/helpers/fast-kit.ts), blocks until cancelled, on the real dev server. In this race the
 * core sends the child's cancel request before the child exists on the server; the server usually starts the child
 * first and the request lands, but nothing orders the two, and a request taken first fails as not found. The
 * controller therefore requests the cancel again once the start is recorded (workflows/controller.ts, supersedeWatch).
 *
 * The same bundle (one per file) carries a second test-only interceptor, test/helpers/corrupt-continue.ts, for the
 * last test: a controller that continues as new with a field this build cannot read.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, NativeConnection, Worker, type InjectedSinks } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { LbaasClient } from '../../client/service-client';
import { applyUpdate, SCHEMA_VERSION, wakeSignal, workflowIds } from '../../contract';
import { validateSpec } from '../../domain';
import { startDevServer, type DevServer } from '../../dev/devserver';
import { workflowsPath } from '../../worker/main';
import { setCurrentVersion } from '../../worker/versioning';
import { FakeEngine } from '../helpers/fast-kit';
import { exampleSpec } from '../helpers/fixtures';
import { namespaceOfTestFile } from '../helpers/namespace';
import { until } from '../helpers/workflows';
import type { HoldSinks } from '../helpers/hold-child-start';
import { UNREADABLE_PREFIX } from '../helpers/corrupt-continue';

const LB = 'fa5700000000000000000000000000bb';
const engine = new FakeEngine();
/** `npm test`'s shared dev server and this file's namespace there (scripts/test.js), else a dev server of its own. */
let server: { address: string; namespace: string; own: DevServer | null };
let client: Client;
let lbaas: LbaasClient;
let worker: Worker;
let taskQueue: string;
let running: Promise<void>;
let connections: { close(): Promise<void> }[] = [];
/** Child starts the interceptor reported, and the gate that holds the task of the one named `held`. */
const starting: string[] = [];
let held: string | null = null;
let release: () => void = () => {};
let gate: Promise<void> = Promise.resolve();

before(async () => {
  const shared = process.env.LBAAS_TEST_TEMPORAL_ADDRESS;
  if (shared) server = { address: shared, namespace: namespaceOfTestFile(process.argv[1] ?? '') ?? 'default', own: null };
  else {
    const own = await startDevServer({});
    server = { address: own.address, namespace: own.namespace, own };
  }
  const connection = await Connection.connect({ address: server.address });
  const native = await NativeConnection.connect({ address: server.address });
  connections = [connection, native];
  client = new Client({ connection, namespace: server.namespace });
  taskQueue = `supersede-starting-${randomUUID()}`;
  const version = { deploymentName: taskQueue, buildId: 'test' };
  const sinks: InjectedSinks<HoldSinks> = {
    childStart: {
      starting: {
        fn: async (_info, id) => {
          starting.push(id);
          if (id === held) await gate;
        },
      },
    },
  };
  worker = await Worker.create({
    connection: native,
    namespace: server.namespace,
    taskQueue,
    workflowBundle: await bundleWorkflowCode({
      workflowsPath,
      workflowInterceptorModules: [path.join(__dirname, '../helpers/hold-child-start.js'), path.join(__dirname, '../helpers/corrupt-continue.js')],
      logger: { info() {}, warn() {}, error: console.error, debug() {}, trace() {}, log() {} } as never,
    }),
    activities: engine.activities(),
    sinks,
    maxHeartbeatThrottleInterval: '100ms',
    defaultHeartbeatThrottleInterval: '100ms',
    shutdownGraceTime: '1s',
    // The workflows declare their versioning behavior (workflows/versioning.ts), which takes a versioned worker.
    workerDeploymentOptions: { version, useWorkerVersioning: true, defaultVersioningBehavior: 'PINNED' },
  });
  running = worker.run();
  const current = await setCurrentVersion(client, server.namespace, version);
  assert.equal(current.result, 'set', JSON.stringify(current));
  lbaas = new LbaasClient(client, taskQueue);
});

after(async () => {
  release();
  if (worker?.getState() === 'RUNNING') worker.shutdown();
  await running;
  for (const c of connections) await c.close();
  await server?.own?.stop();
});

function spec(uid: string, port: number): Record<string, unknown> {
  return exampleSpec([LB], { serviceUid: uid, ports: { http: { external: port, internal: 30080 } } });
}

/** Once the server has admitted the update `updateId` of the controller of `uid` (it need not have been accepted). */
async function admitted(uid: string, updateId: string): Promise<void> {
  await until(`update ${updateId} admitted`, async () => {
    try {
      await client.workflowService.pollWorkflowExecutionUpdate({
        namespace: server.namespace,
        updateRef: { workflowExecution: { workflowId: workflowIds.controller(uid) }, updateId },
        waitPolicy: { lifecycleStage: temporal.api.enums.v1.UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ADMITTED },
        identity: 'supersede-starting.test',
      });
      return true;
    } catch {
      return false;
    }
  });
}

test("revision 2 applied while revision 1's pass is starting its child: the pass is cancelled, and a wait for revision 1 is answered with revision 2's converged pass", async () => {
  const uid = 'supersede-starting';
  engine.set(uid, 'block');
  held = workflowIds.pass(uid, 1);
  gate = new Promise<void>((r) => (release = r));
  const first = spec(uid, 80);
  const v1 = validateSpec(first);
  assert.ok(v1.ok);
  // Not awaited: its workflow task is the one held.
  const applied1 = lbaas.apply(first, v1.spec);
  await until('pass 1 starting its child', () => starting.includes(held as string));
  const controller = client.workflow.getHandle(workflowIds.controller(uid));
  const updateId = `apply-2-${randomUUID()}`;
  const applied2 = controller.executeUpdate(applyUpdate, { args: [spec(uid, 81)], updateId });
  await admitted(uid, updateId);
  release();
  assert.equal((await applied1).revision, 1);
  assert.deepEqual(await applied2, { revision: 2 });

  // The history shows the race: revision 2's update accepted before the child of pass 1 was recorded as started.
  const events = (await controller.fetchHistory()).events ?? [];
  const T = temporal.api.enums.v1.EventType;
  const initiated = events.findIndex((e) => e.eventType === T.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED);
  const accepted = events.findIndex((e, i) => i > initiated && e.eventType === T.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED);
  const started = events.findIndex((e) => e.eventType === T.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED);
  assert.ok(initiated >= 0 && accepted > initiated && started > accepted, `initiated ${initiated}, update accepted ${accepted}, child started ${started}`);

  // Pass 1's child is cancelled (its activity, blocked until cancelled, with it, if it had started); pass 2 follows.
  const pass1 = client.workflow.getHandle(workflowIds.pass(uid, 1));
  const status = await until('pass 1 closed', async () => {
    const d = await pass1.describe();
    return d.status.name === 'RUNNING' ? undefined : d.status.name;
  });
  assert.equal(status, 'CANCELLED');
  assert.equal(engine.of(uid).filter((c) => c.outcome === 'converged').length, 0, 'no pass converged before pass 1 ended');
  engine.set(uid, 'converge');
  engine.release(uid);
  const result = await lbaas.waitConverged(uid, 1);
  // The cancel requested while the start was pending (the core sends it at once, before the child exists on the
  // server) is requested again once the start is recorded: the server may take the first request before it starts
  // the child, and then fails it as not found.
  const all = (await controller.fetchHistory()).events ?? [];
  const childStarted = all.findIndex((e) => e.eventType === T.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED);
  const childCancelled = all.findIndex((e) => e.eventType === T.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED);
  const requests = all.flatMap((e, i) => (e.eventType === T.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED ? [i] : []));
  assert.equal(requests.filter((i) => i < childStarted).length, 1, 'one cancel request while the start was pending');
  assert.equal(requests.filter((i) => i > childStarted && i < childCancelled).length, 1, 'one again once the start was recorded');
  assert.deepEqual([result.revision, result.pass, result.converged], [2, 2, true]);
});

test('a controller whose continue-as-new input this build cannot read (a field of a newer build): the new run fails its workflow task, retried, naming the field, and is not failed: the entity and its state stay', async () => {
  const uid = `${UNREADABLE_PREFIX}${randomUUID().slice(0, 8)}`;
  const id = workflowIds.controller(uid);
  const first = await client.workflow.start('serviceController', { args: [{ v: SCHEMA_VERSION, serviceUid: uid, historyLimit: 20 }], workflowId: id, taskQueue });
  // Each signal taken in a workflow task of its own adds four events: past 20 the idle controller continues as new.
  for (let i = 0; i < 10; i++) {
    const d = await client.workflow.getHandle(id).describe();
    if (d.runId !== first.firstExecutionRunId) break;
    await client.workflow.getHandle(id).signal(wakeSignal, { v: SCHEMA_VERSION });
    await until('the signal taken', async () => {
      const now = await client.workflow.getHandle(id).describe();
      return now.runId !== d.runId || now.historyLength >= d.historyLength + 4;
    });
  }
  const T = temporal.api.enums.v1.EventType;
  const failed = await until('the continued run failing a workflow task', async () => {
    const d = await client.workflow.getHandle(id).describe();
    if (d.runId === first.firstExecutionRunId) return undefined;
    const events = (await client.workflow.getHandle(id, d.runId).fetchHistory()).events ?? [];
    const f = events.find((e) => e.eventType === T.EVENT_TYPE_WORKFLOW_TASK_FAILED);
    return f ? { d, f, events } : undefined;
  });
  assert.equal((await client.workflow.getHandle(id, first.firstExecutionRunId).describe()).status.name, 'CONTINUED_AS_NEW');
  assert.equal(failed.d.status.name, 'RUNNING');
  const message = failed.f.workflowTaskFailedEventAttributes?.failure?.message ?? '';
  assert.match(message, /^serviceController: fromANewerBuild: /);
  assert.match(message, /this build cannot read it; the workflow task is retried until a worker of a build that reads it takes the run\)$/);
  // The snapshot is in the open run's input, untouched, for the build that reads it.
  const started = failed.events[0]?.workflowExecutionStartedEventAttributes;
  assert.ok(started?.continuedExecutionRunId);
  await client.workflow.getHandle(id).terminate('test cleanup');
});
