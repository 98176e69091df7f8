import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  addMembers,
  desiredObjects,
  formatIssues,
  POOL_NAME_RULE,
  removeMembers,
  resolvePool,
  sameMembers,
  validatePoolFile,
  validateMembers,
  validateSpec,
  type ServiceSpec,
  type ValidatedSpec,
} from '../../domain';

const base = {
  serviceUid: 'svc-1',
  nameSuffix: 'web.default',
  loadBalancers: ['lb-1'],
  externalAddresses: ['203.0.113.10'],
  ports: { http: { external: 80, internal: 30080 }, https: { external: 443, internal: 30443 } },
};
const nodes = [
  { name: 'node-2', address: '10.0.0.12' },
  { name: 'node-1', address: '10.0.0.11' },
];

function spec(input: unknown): ValidatedSpec {
  const r = validateSpec(input);
  assert.ok(r.ok, r.ok ? '' : formatIssues(r.issues));
  return r.spec;
}

describe('serverPool in the spec', () => {
  test('a pool spec is valid; its canonical form names the pool and has no servers until resolved', () => {
    assert.deepEqual(spec({ ...base, serverPool: 'nodes' }).servers, []);
    assert.equal(spec({ ...base, serverPool: 'nodes' }).serverPool, 'nodes');
    assert.equal('serverPool' in spec({ ...base, servers: nodes }), false);
  });

  test('exactly one of servers and serverPool, with a field-named error', () => {
    const both = validateSpec({ ...base, servers: nodes, serverPool: 'nodes' });
    assert.deepEqual(both.ok ? [] : both.issues, [{ path: 'serverPool', message: 'give either servers or serverPool, not both' }]);
    const neither = validateSpec(base);
    assert.deepEqual(neither.ok ? [] : neither.issues, [{ path: 'servers', message: 'required (or serverPool: the name of a server pool)' }]);
    const bad = validateSpec({ ...base, serverPool: 'a/b' });
    assert.deepEqual(bad.ok ? [] : bad.issues, [{ path: 'serverPool', message: POOL_NAME_RULE }]);
    const notString = validateSpec({ ...base, serverPool: 7 });
    assert.deepEqual(notString.ok ? [] : notString.issues, [{ path: 'serverPool', message: 'must be a string' }]);
  });

  test('a service resolved from an equal pool means exactly the objects of the inline spec', () => {
    const inline = spec({ ...base, servers: nodes });
    const resolved = resolvePool(spec({ ...base, serverPool: 'nodes' }), [...nodes].reverse());
    assert.ok(resolved.ok);
    const names = (s: ServiceSpec) => desiredObjects(s, 'lb-1').map((o) => `${o.kind} ${o.name} ${JSON.stringify(o.fields)}`).sort();
    assert.deepEqual(names(resolved.spec), names(inline));
    assert.equal('serverPool' in resolved.spec, false);
    const servers = desiredObjects(resolved.spec, 'lb-1').filter((o) => o.kind === 'server').map((o) => o.name).sort();
    assert.deepEqual(servers, ['node-1.http.web.default', 'node-1.https.web.default', 'node-2.http.web.default', 'node-2.https.web.default']);
  });

  test('an empty pool resolves to no Server objects; Backends, Frontends and Binds stay', () => {
    const r = resolvePool(spec({ ...base, serverPool: 'nodes' }), []);
    assert.ok(r.ok);
    assert.deepEqual(desiredObjects(r.spec, 'lb-1').map((o) => o.kind).sort(), ['backend', 'backend', 'bind', 'bind', 'frontend', 'frontend']);
  });

  test('members that are not valid servers (a poolMembers signal any client can send) fail resolution, naming the pool and the member', () => {
    const r = resolvePool(spec({ ...base, serverPool: 'nodes' }), [{ name: 'node-1', address: 'not-an-ip' }]);
    assert.equal(r.ok, false);
    assert.match(r.ok ? '' : r.message, /^serverPool nodes: its members are invalid:\n.*servers\[0\]\.address/);
  });

  test('a pool too large for the objects-per-load-balancer limit fails resolution, naming the pool', () => {
    const many = Array.from({ length: 1024 }, (_, i) => ({ name: `n${i}`, address: `10.1.${i >> 8}.${i & 255}` }));
    const ports = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`p${i}`, { external: 1000 + i, internal: 30000 + i }]));
    const r = resolvePool(spec({ ...base, ports, serverPool: 'big' }), many);
    assert.deepEqual(r, { ok: false, message: 'serverPool big: its 1024 servers make 5135 Engine objects per load balancer (ports x (2 + externalAddresses + servers)); at most 5100 are supported' });
  });
});

describe('pool files', () => {
  test('a valid pool file comes back canonical, servers sorted by name', () => {
    assert.deepEqual(validatePoolFile({ name: 'nodes', servers: [{ name: 'b', address: '2001:DB8::1' }, { name: 'a', address: '10.0.0.1' }] }), {
      ok: true,
      pool: { name: 'nodes', servers: [{ name: 'a', address: '10.0.0.1' }, { name: 'b', address: '2001:db8::1' }] },
    });
    assert.deepEqual(validatePoolFile({ name: 'empty', servers: [] }), { ok: true, pool: { name: 'empty', servers: [] } });
  });

  test('servers are validated exactly as a spec validates them, every issue at its path', () => {
    const r = validatePoolFile({ name: 'lbaas-pool/x', servers: [{ name: 'a', address: '10.0.0.300' }, { name: 'a', address: '10.0.0.2', port: 1 }], extra: 1 });
    assert.deepEqual(r.ok ? [] : r.issues, [
      { path: 'extra', message: 'unknown key (allowed: name, servers)' },
      { path: 'name', message: POOL_NAME_RULE },
      { path: 'servers[0].address', message: 'must be an IPv4 or IPv6 address without zone, like 203.0.113.10 or 2001:db8::10' },
      { path: 'servers[1].port', message: 'unknown key (allowed: name, address)' },
      { path: 'servers[1].name', message: 'duplicate of servers[0].name' },
    ]);
    const s = validateSpec({ ...base, servers: [{ name: 'a', address: '10.0.0.300' }, { name: 'a', address: '10.0.0.2', port: 1 }] });
    assert.deepEqual((s.ok ? [] : s.issues).filter((i) => i.path.startsWith('servers')), (r.ok ? [] : r.issues).filter((i) => i.path.startsWith('servers')));
    assert.deepEqual(validatePoolFile([]), { ok: false, issues: [{ path: '', message: 'the pool file must be a mapping with the keys name, servers' }] });
    assert.deepEqual(validatePoolFile({ name: 'x' }), { ok: false, issues: [{ path: 'servers', message: 'required' }] });
  });
});

describe('member changes', () => {
  const current = [
    { name: 'n1', address: '10.0.0.1' },
    { name: 'n2', address: '10.0.0.2' },
  ];
  test('adding a member that is there with the same address changes nothing', () => {
    assert.deepEqual(addMembers(current, [{ name: 'n1', address: '10.0.0.1' }]), { servers: current, added: [], removed: [], changed: [] });
  });
  test('add reports new members and address changes separately', () => {
    const c = addMembers(current, [{ name: 'n3', address: '10.0.0.3' }, { name: 'n1', address: '10.0.0.9' }]);
    assert.deepEqual(c, { servers: [{ name: 'n1', address: '10.0.0.9' }, { name: 'n2', address: '10.0.0.2' }, { name: 'n3', address: '10.0.0.3' }], added: ['n3'], removed: [], changed: ['n1'] });
  });
  test('remove ignores names that are not members', () => {
    assert.deepEqual(removeMembers(current, ['n2', 'n7']), { servers: [{ name: 'n1', address: '10.0.0.1' }], added: [], removed: ['n2'], changed: [] });
    assert.deepEqual(removeMembers(current, ['n7']).removed, []);
  });
  test('sameMembers ignores order and sees an address change', () => {
    assert.equal(sameMembers(current, [...current].reverse()), true);
    assert.equal(sameMembers(current, [current[0]!, { name: 'n2', address: '10.0.0.3' }]), false);
  });
});

test('validateMembers refuses a member with a key it does not take, naming it (the member is otherwise readable)', () => {
  const r = validateMembers([{ name: 'n1', address: '10.0.0.1', weight: 1 }]);
  assert.equal(r.ok, false);
  assert.match(r.ok ? '' : formatIssues(r.issues), /servers\[0\]\.weight: unknown key/);
});
