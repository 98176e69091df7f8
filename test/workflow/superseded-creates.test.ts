/**
 * A pass superseded while it creates: its reconcileLoadBalancer finishes the creates it began (never abandoned), then
 * ends cancelled, and its pass returns no result. What it created must still reach the next pass, which otherwise
 * finds it only through the Engine's tag index; that index lags behind tagging on the real Engine, and an object on a
 * load balancer the new spec dropped was left behind that way (found by the realistic chaos run, where the next pass
 * ran on another worker, which had not created it). So the cancelled run signals its controller the identifiers
 * (supersededCreatesSignal), and the controller hands them to every pass as `known` until
 * one converges.
 *
 * Here on the real dev server and simulator: the service's Backends on load balancer A take 3 s to deploy; while the
 * first pass waits for them, the spec moves the service to load balancer B.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { workflowIds } from '../../contract';
import { objectsOn, tagOf } from '../helpers/engine-state';
import { exampleSpec, seedLoadBalancer } from '../helpers/fixtures';
import { TrackedLbaas, valid } from '../helpers/ops-services';
import { startStack, stopTemporalServer, type Stack } from '../helpers/stack';

let stack: Stack;
let lbaas: TrackedLbaas;

before(async () => {
  stack = await startStack({ sim: { deployMs: { min: 3000, max: 3000 } } });
  lbaas = new TrackedLbaas(stack.client, stack.taskQueue);
});
after(async () => {
  await lbaas?.cleanup();
  await stack?.stop();
  await stopTemporalServer();
});

/** The decoded first argument of every event of `type` in the history of `workflowId` (latest run). */
async function eventArgs(workflowId: string, type: 'signal' | 'start', signalName?: string): Promise<Record<string, unknown>[]> {
  const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
  const converter = stack.client.options.loadedDataConverter.payloadConverter;
  const out: Record<string, unknown>[] = [];
  for (const e of history.events ?? []) {
    const attrs = type === 'signal' ? e.workflowExecutionSignaledEventAttributes : e.workflowExecutionStartedEventAttributes;
    if (!attrs) continue;
    if (type === 'signal' && (attrs as { signalName?: string | null }).signalName !== signalName) continue;
    const payload = attrs.input?.payloads?.[0];
    if (payload) out.push(converter.fromPayload(payload) as Record<string, unknown>);
  }
  return out;
}

test('a pass superseded while it creates tells the controller what it created, the next pass reads it as known and removes it from the dropped load balancer', { timeout: 120_000 }, async () => {
  const uid = `superseded-${Date.now().toString(36)}`;
  const a = seedLoadBalancer(stack.sim, `${uid}-a`);
  const b = seedLoadBalancer(stack.sim, `${uid}-b`);
  const spec = (lb: string) => exampleSpec([lb], { serviceUid: uid, ports: { http: { external: 80, internal: 30080 } } });

  const first = spec(a);
  await lbaas.apply(first, valid(first));
  // The first pass has created its Backend on A and waits for its deploy (3 s).
  const deadline = Date.now() + 30_000;
  while (!objectsOn(stack.sim, a).some((o) => o.kind === 'backend' && o.tags.includes(tagOf(uid)))) {
    assert.ok(Date.now() < deadline, 'the first pass created its Backend on load balancer A within 30 s');
    await new Promise((r) => setTimeout(r, 50));
  }
  const backendOnA = objectsOn(stack.sim, a).find((o) => o.kind === 'backend') as { identifier: string };

  const second = spec(b);
  const { revision } = await lbaas.apply(second, valid(second));
  const result = await lbaas.waitConverged(uid, revision);
  assert.equal(result.converged, true, result.error);

  // The superseded load balancer run signalled what it created, the Backend among it ...
  const signals = await eventArgs(workflowIds.controller(uid), 'signal', 'supersededCreates');
  assert.equal(signals.length, 1, `one supersededCreates signal (${JSON.stringify(signals)})`);
  assert.ok((signals[0]?.identifiers as string[]).includes(backendOnA.identifier), `the signal names the Backend ${backendOnA.identifier}: ${JSON.stringify(signals[0])}`);
  // ... the pass of the new revision was started knowing it ...
  const passInput = (await eventArgs(`${workflowIds.controller(uid)}/pass/2`, 'start'))[0] ?? {};
  assert.ok((passInput.known as string[] | undefined)?.includes(backendOnA.identifier), `pass 2 knows ${backendOnA.identifier}: ${JSON.stringify(passInput.known)}`);
  // ... and nothing of the service is left on A; B holds the spec's objects.
  assert.deepEqual(objectsOn(stack.sim, a).filter((o) => o.tags.includes(tagOf(uid))).map((o) => `${o.kind} ${o.name}`), []);
  assert.ok(objectsOn(stack.sim, b).filter((o) => o.tags.includes(tagOf(uid))).length > 0, 'the service is on B');
});
