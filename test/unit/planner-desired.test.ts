import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { desiredObjects, validateSpec, type DesiredObject, type ServiceSpec } from '../../domain';

const LB = '6f0c3d2e9a8b4c7d8e9f0a1b2c3d4e5f';
const HC = '"adv_check": "tcp-check"';

function spec(patch: Record<string, unknown> = {}): ServiceSpec {
  const result = validateSpec({
    serviceUid: '9a5f0c1e-3b7d-4c7a-9d8e-0f1a2b3c4d5e',
    nameSuffix: 'web.default.prod',
    loadBalancers: [LB],
    externalAddresses: ['203.0.113.10', '2001:db8::10'],
    ports: { http: { external: 80, internal: 30080 }, https: { external: 443, internal: 30443 } },
    servers: [
      { name: 'node-1', address: '10.0.0.11' },
      { name: 'node-2', address: '10.0.0.12' },
    ],
    ...patch,
  });
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.spec;
}

describe('desiredObjects', () => {
  test('the example of docs/spec.md#format means these 12 objects, names joined with "." and fields as upstream sends them', () => {
    const expected: DesiredObject[] = [
      { kind: 'backend', key: 'backend:http', name: 'http.web.default.prod', port: 'http', parent: null, fields: { name: 'http.web.default.prod', mode: 'tcp', health_check: HC, load_balancer: LB } },
      { kind: 'backend', key: 'backend:https', name: 'https.web.default.prod', port: 'https', parent: null, fields: { name: 'https.web.default.prod', mode: 'tcp', health_check: HC, load_balancer: LB } },
      { kind: 'frontend', key: 'frontend:http', name: 'http.web.default.prod', port: 'http', parent: 'backend:http', fields: { name: 'http.web.default.prod', mode: 'tcp', load_balancer: LB } },
      { kind: 'frontend', key: 'frontend:https', name: 'https.web.default.prod', port: 'https', parent: 'backend:https', fields: { name: 'https.web.default.prod', mode: 'tcp', load_balancer: LB } },
      { kind: 'bind', key: 'bind:http:203.0.113.10', name: 'v4.http.web.default.prod', port: 'http', parent: 'frontend:http', fields: { name: 'v4.http.web.default.prod', address: '203.0.113.10', port: 80, ssl: false } },
      { kind: 'bind', key: 'bind:http:2001:db8::10', name: 'v6.http.web.default.prod', port: 'http', parent: 'frontend:http', fields: { name: 'v6.http.web.default.prod', address: '2001:db8::10', port: 80, ssl: false } },
      { kind: 'bind', key: 'bind:https:203.0.113.10', name: 'v4.https.web.default.prod', port: 'https', parent: 'frontend:https', fields: { name: 'v4.https.web.default.prod', address: '203.0.113.10', port: 443, ssl: false } },
      { kind: 'bind', key: 'bind:https:2001:db8::10', name: 'v6.https.web.default.prod', port: 'https', parent: 'frontend:https', fields: { name: 'v6.https.web.default.prod', address: '2001:db8::10', port: 443, ssl: false } },
      { kind: 'server', key: 'server:http:node-1', name: 'node-1.http.web.default.prod', port: 'http', parent: 'backend:http', fields: { name: 'node-1.http.web.default.prod', ip: '10.0.0.11', port: 30080, check: 'enabled' } },
      { kind: 'server', key: 'server:http:node-2', name: 'node-2.http.web.default.prod', port: 'http', parent: 'backend:http', fields: { name: 'node-2.http.web.default.prod', ip: '10.0.0.12', port: 30080, check: 'enabled' } },
      { kind: 'server', key: 'server:https:node-1', name: 'node-1.https.web.default.prod', port: 'https', parent: 'backend:https', fields: { name: 'node-1.https.web.default.prod', ip: '10.0.0.11', port: 30443, check: 'enabled' } },
      { kind: 'server', key: 'server:https:node-2', name: 'node-2.https.web.default.prod', port: 'https', parent: 'backend:https', fields: { name: 'node-2.https.web.default.prod', ip: '10.0.0.12', port: 30443, check: 'enabled' } },
    ];
    assert.deepEqual(desiredObjects(spec(), LB), expected);
  });

  test('keys are unique and every parent comes before its children', () => {
    const seen = new Set<string>();
    for (const d of desiredObjects(spec(), LB)) {
      assert.equal(seen.has(d.key), false, `duplicate key ${d.key}`);
      if (d.parent !== null) assert.equal(seen.has(d.parent), true, `${d.key} before its parent ${d.parent}`);
      seen.add(d.key);
    }
    assert.equal(seen.size, 12);
  });

  test('an unnamed single port leaves the port out of every name', () => {
    const objects = desiredObjects(spec({ nameSuffix: 'svc', ports: { '': { external: 80, internal: 30080 } }, servers: [{ name: 'node-1', address: '10.0.0.11' }] }), LB);
    assert.deepEqual(
      objects.map((d) => [d.kind, d.key, d.name, d.parent]),
      [
        ['backend', 'backend:', 'svc', null],
        ['frontend', 'frontend:', 'svc', 'backend:'],
        ['bind', 'bind::203.0.113.10', 'v4.svc', 'frontend:'],
        ['bind', 'bind::2001:db8::10', 'v6.svc', 'frontend:'],
        ['server', 'server::node-1', 'node-1.svc', 'backend:'],
      ],
    );
  });

  test('an empty nameSuffix leaves the suffix out of every name', () => {
    const objects = desiredObjects(spec({ nameSuffix: '', ports: { http: { external: 80, internal: 30080 } } }), LB);
    assert.deepEqual(
      objects.map((d) => d.name),
      ['http', 'http', 'v4.http', 'v6.http', 'node-1.http', 'node-2.http'],
    );
  });

  test('IPv6 binds are named v6 with the compressed address; an IPv4-mapped address becomes a v4 bind', () => {
    const objects = desiredObjects(spec({ externalAddresses: ['2001:DB8:0:0:0:0:0:1', '::ffff:198.51.100.1'], ports: { http: { external: 80, internal: 30080 } } }), LB);
    assert.deepEqual(
      objects.filter((d) => d.kind === 'bind').map((d) => [d.key, d.name, d.fields]),
      [
        ['bind:http:2001:db8::1', 'v6.http.web.default.prod', { name: 'v6.http.web.default.prod', address: '2001:db8::1', port: 80, ssl: false }],
        ['bind:http:198.51.100.1', 'v4.http.web.default.prod', { name: 'v4.http.web.default.prod', address: '198.51.100.1', port: 80, ssl: false }],
      ],
    );
  });

  test('ports are taken in name order whatever the map order, including integer-like names', () => {
    const ports = { http: { external: 80, internal: 1 }, '8080': { external: 8080, internal: 2 }, '443': { external: 443, internal: 3 } };
    const backends = desiredObjects(spec({ ports }), LB).filter((d) => d.kind === 'backend');
    assert.deepEqual(backends.map((d) => d.port), ['443', '8080', 'http']);
  });

  test('an empty ports map means no objects at all', () => {
    assert.deepEqual(desiredObjects(spec({ ports: {} }), LB), []);
  });
});
