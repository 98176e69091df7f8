/**
 * A plan's outline (domain/plan-outline.ts) gives the very plan back on the desired objects it was made from, carries
 * no desired object's fields, and is refused (null) on other desired objects.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { completeFields, desiredObjects, outlineBytes, outlinedStates, outlineOf, planLoadBalancer, planOfOutline, validateSpec, type ObservedObject, type StateName } from '../../domain';
import { exampleSpec } from '../helpers/fixtures';

const LB = '6f0c3d2e9a8b4c7d8e9f0a1b2c3d4e5f';

function spec(overrides: Record<string, unknown> = {}) {
  const v = validateSpec(exampleSpec([LB], overrides));
  assert.ok(v.ok);
  return v.spec;
}

/**
 * The example spec's objects on LB, except the https Backend and what hangs below it (created, with its Frontend's
 * Binds), in the states given per key (Deployed otherwise), plus a Server of the service no desired object matches, to
 * destroy: a plan with keep, wait, recover, create and destroy.
 */
function snapshot(states: Record<string, StateName>) {
  const ids = new Map<string, string>();
  const objects: ObservedObject[] = [];
  desiredObjects(spec(), LB).forEach((d, i) => {
    if (d.key === 'backend:https' || (d.parent !== null && !ids.has(d.parent))) return;
    const identifier = (i + 1).toString(16).padStart(32, '0');
    ids.set(d.key, identifier);
    const fields = completeFields(d.kind, d.fields as never, d.parent === null ? '' : (ids.get(d.parent) as string));
    objects.push({ kind: d.kind, identifier, name: d.name, state: states[d.key] ?? 'Deployed', tagged: true, fields } as ObservedObject);
  });
  const backend = ids.get('backend:http') as string;
  objects.push({ kind: 'server', identifier: 'f'.repeat(32), name: 'gone.http.web.default.prod', state: 'Deployed', tagged: true, fields: { name: 'gone.http.web.default.prod', ip: '10.0.0.99', port: 30080, check: 'enabled', backend } } as ObservedObject);
  return { loadBalancer: LB, objects };
}

test('the outline of a plan with every action gives the same plan back from the desired objects, with the observed states, and holds no desired field', () => {
  const desired = desiredObjects(spec(), LB);
  const snap = snapshot({ 'frontend:http': 'NewlyCreated', 'server:http:node-1': 'DeploymentError' });
  const plan = planLoadBalancer(desired, snap, 'recover');
  assert.deepEqual([...new Set(plan.objects.map((p) => p.action.type))].sort(), ['create', 'keep', 'recover', 'wait']);
  assert.equal(plan.destroy.length, 1);

  const outline = outlineOf(plan, snap);
  assert.equal(outline.creates, plan.objects.filter((p) => p.action.type === 'create').length);
  assert.deepEqual(outline.actions['frontend:http'], ['wait', (3).toString(16).padStart(32, '0'), 'NewlyCreated']);
  assert.deepEqual(outline.actions['server:http:node-1'], ['recover', (9).toString(16).padStart(32, '0'), 'DeploymentError']);
  assert.deepEqual(outline.destroy, [{ ...plan.destroy[0], state: 'Deployed' }]);
  assert.deepEqual(planOfOutline(desired, outline, LB), plan);
  assert.deepEqual(
    outlinedStates(outline).sort((a, b) => a.identifier.localeCompare(b.identifier)),
    snap.objects.map((o) => ({ identifier: o.identifier, state: o.state })).sort((a, b) => a.identifier.localeCompare(b.identifier)),
  );
  const json = JSON.stringify(outline);
  assert.equal(outlineBytes(outline), json.length);
  // Keys name ports, servers and addresses; no field of a desired object (an IP, a port number, a health check) is there.
  assert.doesNotMatch(json, /"fields"|"desired"|10\.0\.0\.1[12]|30080|30443|tcp-check/);
});

test('an outline is refused on desired objects it was not made from: a desired object more, one less, or another key', () => {
  const desired = desiredObjects(spec(), LB);
  const snap = snapshot({});
  const outline = outlineOf(planLoadBalancer(desired, snap, 'recover'), snap);
  const more = desiredObjects(spec({ servers: [{ name: 'node-1', address: '10.0.0.11' }, { name: 'node-2', address: '10.0.0.12' }, { name: 'node-3', address: '10.0.0.13' }] }), LB);
  const fewer = desiredObjects(spec({ servers: [{ name: 'node-1', address: '10.0.0.11' }] }), LB);
  // Same count, one kept key renamed: node-2 becomes node-9.
  const renamed = desiredObjects(spec({ servers: [{ name: 'node-1', address: '10.0.0.11' }, { name: 'node-9', address: '10.0.0.12' }] }), LB);
  assert.equal(renamed.length, desired.length);
  assert.equal(planOfOutline(more, outline, LB), null);
  assert.equal(planOfOutline(fewer, outline, LB), null);
  assert.equal(planOfOutline(renamed, outline, LB), null);
});
