import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DesiredObject, Plan, Snapshot } from '../../domain';
import { StatusBook } from '../../workflows/status-book';

const LB = 'a'.repeat(32);
const BE = 'b'.repeat(32);
const FE = 'f'.repeat(32);
const OLD = 'c'.repeat(32);

const backend: DesiredObject = { kind: 'backend', key: 'backend:http', name: 'http.web', port: 'http', parent: null, fields: { name: 'http.web', mode: 'tcp', health_check: 'x', load_balancer: LB } };
const frontend: DesiredObject = { kind: 'frontend', key: 'frontend:http', name: 'http.web', port: 'http', parent: 'backend:http', fields: { name: 'http.web', mode: 'tcp', load_balancer: LB } };
const bind: DesiredObject = { kind: 'bind', key: 'bind:http:203.0.113.10', name: 'v4.http.web', port: 'http', parent: 'frontend:http', fields: { name: 'v4.http.web', address: '203.0.113.10', port: 80, ssl: false } };

const snapshot: Snapshot = {
  loadBalancer: LB,
  objects: [
    { kind: 'backend', identifier: BE, name: 'http.web', state: 'Deployed', tagged: true, fields: { name: 'http.web', mode: 'tcp', health_check: 'x', load_balancer: LB } },
    { kind: 'frontend', identifier: FE, name: 'http.web', state: 'NewlyCreated', tagged: true, fields: { name: 'http.web', mode: 'tcp', load_balancer: LB, default_backend: BE } },
    { kind: 'server', identifier: OLD, name: 'old.http.web', state: 'DeploymentError', tagged: true, fields: { name: 'old.http.web', ip: '10.0.0.9', port: 1, check: 'enabled', backend: BE } },
  ],
};

const plan: Plan = {
  loadBalancer: LB,
  objects: [
    { desired: backend, action: { type: 'keep', identifier: BE } },
    { desired: frontend, action: { type: 'wait', identifier: FE } },
    { desired: bind, action: { type: 'create' } },
  ],
  destroy: [{ kind: 'server', identifier: OLD, name: 'old.http.web', reason: 'not desired' }],
};

function book(): { book: StatusBook; clock: { t: number } } {
  const clock = { t: 100 };
  return { book: new StatusBook(LB, () => clock.t), clock };
}

describe('StatusBook', () => {
  test('observe lists every planned object with its observed state (Pending when to be created) and every destroy with its reason', () => {
    const { book: b } = book();
    b.observe(plan, snapshot);
    assert.deepEqual(b.list(), [
      { loadBalancer: LB, kind: 'backend', key: 'backend:http', name: 'http.web', identifier: BE, state: 'Deployed', updatedAt: 100 },
      { loadBalancer: LB, kind: 'frontend', key: 'frontend:http', name: 'http.web', identifier: FE, state: 'NewlyCreated', updatedAt: 100 },
      { loadBalancer: LB, kind: 'bind', key: 'bind:http:203.0.113.10', name: 'v4.http.web', identifier: null, state: 'Pending', updatedAt: 100 },
      { loadBalancer: LB, kind: 'server', key: `destroy:${OLD}`, name: 'old.http.web', identifier: OLD, state: 'DeploymentError', error: 'to destroy: not desired', updatedAt: 100 },
    ]);
  });

  test('a kept identifier missing from the snapshot is reported Unknown', () => {
    const { book: b } = book();
    b.observe({ ...plan, objects: [{ desired: backend, action: { type: 'keep', identifier: 'e'.repeat(32) } }], destroy: [] }, snapshot);
    assert.equal(b.list()[0]?.state, 'Unknown');
  });

  test('pending lists what is not Deployed, Updated or Destroyed', () => {
    const { book: b } = book();
    b.observe(plan, snapshot);
    assert.deepEqual(
      b.pending().map((o) => o.key),
      ['frontend:http', 'bind:http:203.0.113.10', `destroy:${OLD}`],
    );
  });

  test('update patches an entry, stamps the time, and drops an error the patch does not repeat', () => {
    const { book: b, clock } = book();
    b.observe(plan, snapshot);
    clock.t = 200;
    b.update('bind:http:203.0.113.10', { identifier: 'd'.repeat(32), state: 'DeploymentError', error: 'deployment failed' });
    assert.deepEqual(b.list()[2], { loadBalancer: LB, kind: 'bind', key: 'bind:http:203.0.113.10', name: 'v4.http.web', identifier: 'd'.repeat(32), state: 'DeploymentError', error: 'deployment failed', updatedAt: 200 });
    clock.t = 300;
    b.update(`destroy:${OLD}`, { state: 'Destroyed' });
    assert.deepEqual(b.list()[3], { loadBalancer: LB, kind: 'server', key: `destroy:${OLD}`, name: 'old.http.web', identifier: OLD, state: 'Destroyed', updatedAt: 300 });
    assert.deepEqual(
      b.pending().map((o) => o.key),
      ['frontend:http', 'bind:http:203.0.113.10'],
    );
  });

  test('update of an unknown key changes nothing', () => {
    const { book: b } = book();
    b.observe(plan, snapshot);
    const before = b.list();
    b.update('frontend:other', { state: 'Deployed' });
    assert.deepEqual(b.list(), before);
  });

  test('observe resets the book: entries of an earlier pass that the new plan does not hold are gone', () => {
    const { book: b } = book();
    b.observe(plan, snapshot);
    b.observe({ loadBalancer: LB, objects: [{ desired: backend, action: { type: 'keep', identifier: BE } }], destroy: [] }, snapshot);
    assert.deepEqual(
      b.list().map((o) => o.key),
      ['backend:http'],
    );
  });
});
