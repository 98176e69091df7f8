import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { LbaasClient } from '../../client/service-client';
import { validateSpec } from '../../domain';
import { exampleSpec, seedLoadBalancer, taggedLines } from '../helpers/fixtures';
import { startStack, stopTemporalServer, type Stack } from '../helpers/stack';

let stack: Stack;
before(async () => {
  stack = await startStack();
});
after(async () => {
  await stack?.stop();
  await stopTemporalServer();
});

const valid = (raw: Record<string, unknown>) => {
  const r = validateSpec(raw);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.spec;
};

test('smoke: apply creates the controller, converges, a second revision replaces a port, delete tears down and ends the controller', async () => {
  const lb = seedLoadBalancer(stack.sim, 'lb-c');
  const raw = exampleSpec([lb], { serviceUid: 'ctl-smoke' });
  const lbaas = new LbaasClient(stack.client, stack.taskQueue);
  const { revision } = await lbaas.apply(raw, valid(raw));
  assert.equal(revision, 1);
  const r1 = await lbaas.waitConverged('ctl-smoke', 1);
  assert.equal(r1.converged, true);
  assert.equal(r1.revision, 1);
  const raw2 = { ...raw, ports: { http: { external: 8080, internal: 30080 } } };
  const a2 = await lbaas.apply(raw2, valid(raw2));
  assert.equal(a2.revision, 2);
  const r2 = await lbaas.waitConverged('ctl-smoke', 2);
  assert.equal(r2.converged, true);
  assert.deepEqual(r2.status, { '2001:db8::10': [8080], '203.0.113.10': [8080] });
  const st = await lbaas.status('ctl-smoke');
  assert.equal(st.phase, 'Converged');
  assert.equal(st.revision, 2);
  const del = await lbaas.delete('ctl-smoke');
  assert.equal(del.converged, true);
  assert.deepEqual(taggedLines(stack.sim, 'anxccm-svc-uid=ctl-smoke'), []);
  const d = await lbaas.controller('ctl-smoke').describe();
  assert.equal(d.status.name, 'COMPLETED');
});
