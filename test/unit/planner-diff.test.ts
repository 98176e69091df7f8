import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { matches } from '../../domain/kinds';
import { desiredObjects, validateSpec, type DesiredObject, type ObservedObject } from '../../domain';

const LB = '6f0c3d2e9a8b4c7d8e9f0a1b2c3d4e5f';
const PARENT = 'a'.repeat(32);

function desiredOf(kind: DesiredObject['kind']): DesiredObject {
  const result = validateSpec({
    serviceUid: 'svc',
    nameSuffix: 'web',
    loadBalancers: [LB],
    externalAddresses: ['203.0.113.10'],
    ports: { http: { external: 80, internal: 30080 } },
    servers: [{ name: 'node-1', address: '10.0.0.11' }],
  });
  if (!result.ok) throw new Error('invalid test spec');
  const found = desiredObjects(result.spec, LB).find((d) => d.kind === kind);
  if (found === undefined) throw new Error(kind);
  return found;
}

/** What the upstream controller created for the desired object, linked to PARENT. */
const upstream: Record<DesiredObject['kind'], ObservedObject> = {
  backend: { kind: 'backend', identifier: 'b'.repeat(32), name: 'http.web', state: 'Deployed', tagged: true, fields: { name: 'http.web', mode: 'tcp', health_check: '"adv_check": "tcp-check"', load_balancer: LB } },
  frontend: { kind: 'frontend', identifier: 'f'.repeat(32), name: 'http.web', state: 'Deployed', tagged: true, fields: { name: 'http.web', mode: 'tcp', load_balancer: LB, default_backend: PARENT } },
  bind: { kind: 'bind', identifier: 'c'.repeat(32), name: 'v4.http.web', state: 'Deployed', tagged: true, fields: { name: 'v4.http.web', address: '203.0.113.10', port: 80, ssl: false, frontend: PARENT } },
  server: { kind: 'server', identifier: 'd'.repeat(32), name: 'node-1.http.web', state: 'Deployed', tagged: true, fields: { name: 'node-1.http.web', ip: '10.0.0.11', port: 30080, check: 'enabled', backend: PARENT } },
};

/** Every compared field of docs/spec.md#compared-fields, with a value that must break the match. */
const drift: [DesiredObject['kind'], string, unknown][] = [
  ['backend', 'name', 'https.web'],
  ['backend', 'mode', 'http'],
  ['backend', 'health_check', '"adv_check": "tcp-check" '],
  ['backend', 'load_balancer', 'e'.repeat(32)],
  ['frontend', 'name', 'http.other'],
  ['frontend', 'mode', 'http'],
  ['frontend', 'load_balancer', 'e'.repeat(32)],
  ['frontend', 'default_backend', 'e'.repeat(32)],
  ['bind', 'name', 'v6.http.web'],
  ['bind', 'address', '203.0.113.11'],
  ['bind', 'port', 8080],
  ['bind', 'ssl', true],
  ['bind', 'frontend', 'e'.repeat(32)],
  ['server', 'name', 'node-2.http.web'],
  ['server', 'ip', '10.0.0.12'],
  ['server', 'port', 30081],
  ['server', 'check', 'disabled'],
  ['server', 'backend', 'e'.repeat(32)],
];

describe('matching compares exactly the fields of docs/spec.md#compared-fields', () => {
  for (const kind of ['backend', 'frontend', 'bind', 'server'] as const) {
    test(`an upstream-created ${kind} with the same fields matches (so it is adopted, not replaced)`, () => {
      assert.equal(matches(desiredOf(kind), upstream[kind], PARENT), true);
    });
  }
  for (const [kind, field, value] of drift) {
    test(`a ${kind} whose ${field} differs does not match`, () => {
      const o = upstream[kind];
      const changed = { ...o, fields: { ...o.fields, [field]: value } } as ObservedObject;
      assert.equal(matches(desiredOf(kind), changed, PARENT), false);
    });
  }
  test('fields outside the comparison (state, tag flag, the top-level name copy) do not affect matching', () => {
    const o = { ...upstream.server, state: 'DeploymentError', name: 'whatever' } as const;
    assert.equal(matches(desiredOf('server'), o, PARENT), true);
  });
  test('objects of another kind never match', () => {
    assert.equal(matches(desiredOf('frontend'), { ...upstream.backend }, PARENT), false);
  });
});
