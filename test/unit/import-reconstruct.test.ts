/**
 * domain/import.ts without a server: specs rebuilt from inventories laid out the way the upstream controller lays
 * objects out (written here by hand from its naming scheme, independently of domain/kinds), and every case that
 * must be reported instead of written.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { reconstructService, servicesIn, type InventoryObject, type LoadBalancerInventory } from '../../domain/import';
import { groupIntoPool, withPool } from '../../domain/import-pool';
import { readSuffix, serverNameOf } from '../../domain/import-names';

const UID = '9a5f0c1e-3b7d-4c7a-9d8e-0f1a2b3c4d5e';
const LB1 = 'lb1aaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
const LB2 = 'lb2bbbbbbbbbbbbbbbbbbbbbbbbbbbbb';
const HC = '"adv_check": "tcp-check"';

interface Layout {
  uid?: string;
  suffix: string;
  ports: Record<string, [number, number]>;
  addresses: string[];
  servers: [string, string][];
}

/** What the upstream controller leaves on one load balancer: per port a Backend, a Frontend, Binds and Servers, all tagged. */
function upstream(lb: string, l: Layout): InventoryObject[] {
  const tag = [l.uid ?? UID];
  const n = (...parts: string[]) => [...parts, l.suffix].filter((p) => p !== '').join('.');
  const out: InventoryObject[] = [];
  let seq = 0;
  const add = (kind: InventoryObject['kind'], name: string, fields: InventoryObject['fields']) => {
    const identifier = `${lb.slice(0, 3)}-${kind}-${++seq}`;
    out.push({ kind, identifier, name, state: 'Deployed', serviceUids: tag, fields: { name, ...fields } });
    return identifier;
  };
  for (const [port, [external, internal]] of Object.entries(l.ports)) {
    const be = add('backend', n(port), { mode: 'tcp', health_check: HC, load_balancer: lb });
    const fe = add('frontend', n(port), { mode: 'tcp', load_balancer: lb, default_backend: be });
    for (const a of l.addresses) add('bind', n(a.includes(':') ? 'v6' : 'v4', port), { address: a, port: external, ssl: false, frontend: fe });
    for (const [server, ip] of l.servers) add('server', n(server, port), { ip, port: internal, check: 'enabled', backend: be });
  }
  return out;
}

const WEB: Layout = {
  suffix: 'web.default.prod',
  ports: { http: [80, 30080], https: [443, 30443] },
  addresses: ['2001:db8::10', '203.0.113.10'],
  servers: [
    ['node-2', '10.0.0.12'],
    ['node-1', '10.0.0.11'],
  ],
};
const inv = (loadBalancer: string, objects: InventoryObject[]): LoadBalancerInventory => ({ loadBalancer, found: true, objects });
const messages = (s: { problems: { message: string }[] }) => s.problems.map((p) => p.message);

test('two ports, IPv4 and IPv6, two servers on two load balancers: the exact spec, no problems', () => {
  const s = reconstructService(UID, [inv(LB1, upstream(LB1, WEB)), inv(LB2, upstream(LB2, WEB))]);
  assert.deepEqual(s.problems, []);
  assert.deepEqual(s.notes, []);
  assert.equal(s.objects, 2 * 12);
  assert.deepEqual(s.spec, {
    serviceUid: UID,
    nameSuffix: 'web.default.prod',
    loadBalancers: [LB1, LB2],
    externalAddresses: ['203.0.113.10', '2001:db8::10'],
    ports: { http: { external: 80, internal: 30080 }, https: { external: 443, internal: 30443 } },
    servers: [
      { name: 'node-1', address: '10.0.0.11' },
      { name: 'node-2', address: '10.0.0.12' },
    ],
  });
});

test('one port: read as port + suffix, with a note naming the other reading of the same names', () => {
  const s = reconstructService(UID, [inv(LB1, upstream(LB1, { ...WEB, ports: { http: [80, 30080] } }))]);
  assert.deepEqual(s.problems, []);
  assert.equal(s.spec?.nameSuffix, 'web.default.prod');
  assert.deepEqual(Object.keys(s.spec?.ports ?? {}), ['http']);
  assert.match(s.notes.join('\n'), /unnamed port "" with nameSuffix "http\.web\.default\.prod" names the same objects/);
});

test('a service tagged only on some of the given load balancers lists only those', () => {
  const s = reconstructService(UID, [inv(LB1, upstream(LB1, WEB)), inv(LB2, [])]);
  assert.deepEqual(s.spec?.loadBalancers, [LB1]);
  assert.deepEqual(s.problems, []);
});

test('servers whose internal ports disagree: reported with every value and where, no spec', () => {
  const objects = upstream(LB1, WEB);
  const server = objects.find((o) => o.name === 'node-2.http.web.default.prod') as InventoryObject;
  server.fields.port = 30081;
  const s = reconstructService(UID, [inv(LB1, objects)]);
  assert.equal(s.spec, null);
  assert.deepEqual(messages(s), [
    `port "http": its Servers disagree on the internal port: 30081 (node-2.http.web.default.prod on ${LB1}); 30080 (node-1.http.web.default.prod on ${LB1})`,
  ]);
});

test('a different shape on one load balancer (a server missing there): named as the object apply would create', () => {
  const short = { ...WEB, servers: [WEB.servers[1] as [string, string]] };
  const s = reconstructService(UID, [inv(LB1, upstream(LB1, WEB)), inv(LB2, upstream(LB2, short))]);
  assert.deepEqual(
    s.problems.map((p) => `${p.loadBalancer} ${p.kind} ${p.name}`),
    [`${LB2} server node-2.http.web.default.prod`, `${LB2} server node-2.https.web.default.prod`],
  );
  assert.match(messages(s)[0] as string, /missing here: .* apply would create it/);
});

test('an untagged object with one of the service names is reported', () => {
  const objects = upstream(LB1, WEB);
  objects.push({ kind: 'server', identifier: 'stray', name: 'node-1.http.web.default.prod', state: 'Deployed', serviceUids: [], fields: {} });
  const s = reconstructService(UID, [inv(LB1, objects)]);
  assert.deepEqual(s.problems.map((p) => [p.identifier, p.message]), [['stray', `is not tagged anxccm-svc-uid=${UID} but has one of the service's names: whose it is cannot be told`]]);
});

test('objects outside the naming scheme, and settings that are not the controller defaults, are named', () => {
  const objects = upstream(LB1, WEB);
  const rename = objects.find((o) => o.name === 'node-1.https.web.default.prod') as InventoryObject;
  rename.name = rename.fields.name = 'node-1-https';
  const be = objects.find((o) => o.kind === 'backend' && o.name === 'http.web.default.prod') as InventoryObject;
  be.fields.health_check = '"adv_check": "httpchk"';
  const s = reconstructService(UID, [inv(LB1, objects)]);
  assert.deepEqual(
    s.problems.map((p) => `${p.name}: ${p.message}`),
    [
      `http.web.default.prod: health_check is "\\"adv_check\\": \\"httpchk\\"", not the controller's "\\"adv_check\\": \\"tcp-check\\"": lbaas would replace it`,
      `node-1-https: does not fit <server>.<port>.<suffix> for port "https" and suffix "web.default.prod"`,
      'node-1.https.web.default.prod: missing here: the spec rebuilt from all given load balancers has it, so apply would create it',
    ],
  );
});

test('an object tagged for two services is reported for each', () => {
  const objects = upstream(LB1, WEB);
  (objects[0] as InventoryObject).serviceUids = [UID, 'other'];
  assert.deepEqual(servicesIn([inv(LB1, objects)]), [UID, 'other']);
  const s = reconstructService(UID, [inv(LB1, objects)]);
  assert.match(messages(s)[0] as string, /^is also tagged for other: one object cannot belong to two specs$/);
});

test('failed objects are notes, not problems: apply recovers them in place', () => {
  const objects = upstream(LB1, WEB);
  (objects[2] as InventoryObject).state = 'DeploymentError';
  const s = reconstructService(UID, [inv(LB1, objects)]);
  assert.deepEqual(s.problems, []);
  assert.deepEqual(s.notes, [`Bind v6.http.web.default.prod on ${LB1} is DeploymentError: apply recovers it in place (state "0")`]);
});

test('no Backend: nothing to rebuild from', () => {
  const objects = upstream(LB1, WEB).filter((o) => o.kind === 'server');
  const s = reconstructService(UID, [inv(LB1, objects)]);
  assert.equal(s.spec, null);
  assert.match(messages(s).at(-1) as string, /no Backend is tagged for this service/);
});

test('readSuffix: the suffix most Backends share; serverNameOf reads the server out of a name', () => {
  assert.deepEqual(readSuffix(['http.a.b', 'https.a.b', 'x.c']), { nameSuffix: 'a.b', ports: new Map([['http.a.b', 'http'], ['https.a.b', 'https']]), unfit: ['x.c'] });
  assert.deepEqual(readSuffix(['http', 'https']), { nameSuffix: '', ports: new Map([['http', 'http'], ['https', 'https']]), unfit: [] });
  assert.equal(readSuffix(['svc']).nameSuffix, 'svc');
  assert.equal(serverNameOf('node-1.example.com.http.web', 'http', 'web'), 'node-1.example.com');
  assert.equal(serverNameOf('node-1.http.other', 'http', 'web'), null);
  assert.equal(serverNameOf('node-1.web', '', 'web'), 'node-1');
});

test('groupIntoPool: the server set most services share becomes the pool; others keep their servers, named with the reason', () => {
  const spec = (serviceUid: string, servers: [string, string][]) => ({
    serviceUid,
    nameSuffix: serviceUid,
    loadBalancers: [LB1],
    externalAddresses: ['203.0.113.10'],
    ports: { http: { external: 80, internal: 30080 } },
    servers: servers.map(([name, address]) => ({ name, address })),
  });
  const nodes: [string, string][] = [
    ['node-2', '10.0.0.12'],
    ['node-1', '10.0.0.11'],
  ];
  const g = groupIntoPool('workers', [spec('c', [['edge', '10.0.9.1']]), spec('b', [...nodes].reverse()), spec('a', nodes)]);
  assert.deepEqual(g, {
    pool: { name: 'workers', servers: [{ name: 'node-1', address: '10.0.0.11' }, { name: 'node-2', address: '10.0.0.12' }] },
    members: ['a', 'b'],
    others: [{ serviceUid: 'c', reason: "its servers (edge) differ from pool workers's, so it keeps them inline" }],
  });
  // A tie goes to the set of the service first in uid order, whatever the order given.
  assert.deepEqual(groupIntoPool('p', [spec('y', nodes), spec('x', [['edge', '10.0.9.1']])]).members, ['x']);
  assert.deepEqual(groupIntoPool('p', []), { pool: null, members: [], others: [] });
  const named = withPool(spec('a', nodes), 'workers');
  assert.deepEqual(Object.keys(named), ['serviceUid', 'nameSuffix', 'loadBalancers', 'externalAddresses', 'ports', 'serverPool']);
  assert.equal(named.serverPool, 'workers');
});
