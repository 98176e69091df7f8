/**
 * importServices on the real dev server and the simulator over HTTP: services laid out exactly as the upstream
 * controller lays them out are rebuilt exactly, and applying the rebuilt specs writes nothing to the Engine; every
 * case that cannot be rebuilt exactly is reported per object and yields no exact spec; import itself never writes.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, afterEach, before, test } from 'node:test';
import type { Worker } from '@temporalio/worker';
import { LbaasClient } from '../../client/service-client';
import { runImport } from '../../client/import';
import type { ImportedService } from '../../domain/import-types';
import { admin, writeRequests } from '../helpers/engine-state';
import { seedLoadBalancer } from '../helpers/fixtures';
import { startStack, stopTemporalServer, type Stack } from '../helpers/stack';
import { expectedSpec, seedOverHttp, seedUpstream, type UpstreamService } from '../helpers/upstream';
import { chainOf, drained, failureOf, Runs } from '../helpers/workflows';

let stack: Stack;
let worker: Worker;
let runs: Runs;
let lbaas: LbaasClient;

before(async () => {
  stack = await startStack({ worker: false });
  worker = await stack.startWorker({ activities: { readiness: { pollFirstMs: 20, pollMaxMs: 100 } } });
  runs = new Runs(stack.client, stack.taskQueue);
  lbaas = new LbaasClient(stack.client, stack.taskQueue);
});
afterEach(async () => {
  await runs.terminateRunning();
  await drained(worker, () => stack.sim.stats().total);
});
after(async () => {
  await stack?.stop();
  await stopTemporalServer();
});

const uid = (name: string) => `${name}-${randomUUID()}`;
const web = (suffix = 'web.default.prod'): UpstreamService => ({
  uid: uid('web'),
  suffix,
  ports: { http: [80, 30080], https: [443, 30443] },
  addresses: ['203.0.113.10', '2001:db8::10'],
  nodes: [
    ['node-1', '10.0.0.11'],
    ['node-2', '10.0.0.12'],
  ],
});
const service = (services: ImportedService[], serviceUid: string) => {
  const s = services.find((x) => x.serviceUid === serviceUid);
  assert.ok(s, `service ${serviceUid} in the import result`);
  return s;
};
const where = (s: ImportedService) => s.problems.map((p) => `${p.loadBalancer ?? '-'} ${p.kind ?? '-'} ${p.name ?? '-'}: ${p.message}`);

test('upstream layouts (one and several load balancers, IPv4 and IPv6, one and several ports) are rebuilt exactly; applying them writes nothing', async () => {
  const [lb1, lb2] = [seedLoadBalancer(stack.sim, 'imp-1'), seedLoadBalancer(stack.sim, 'imp-2')];
  const a = web(); // two ports, v4 + v6, two nodes, on both load balancers
  const b: UpstreamService = { uid: uid('single'), suffix: 'api.shop.c1', ports: { tcp: [5432, 31432] }, addresses: ['203.0.113.20'], nodes: [['n1.example.com', '10.0.1.1'], ['n2.example.com', '10.0.1.2'], ['n3.example.com', '10.0.1.3']] };
  const c: UpstreamService = { uid: uid('v6'), suffix: 'mail.infra', ports: { smtp: [25, 30025], submission: [587, 30587], imaps: [993, 30993] }, addresses: ['2001:db8::25'], nodes: [['node-1', '2001:db8:1::1']] };
  for (const lb of [lb1, lb2]) await seedUpstream(stack.sim, lb, a);
  await seedUpstream(stack.sim, lb1, b);
  await seedUpstream(stack.sim, lb2, c);
  await seedOverHttp(stack.sim, { kind: 'backend', fields: { name: 'someone-else', mode: 'http', load_balancer: lb1 }, state: 'Deployed' });
  stack.sim.resetStats();

  const result = await runImport(lbaas, [lb1, lb2]);

  assert.equal(stack.sim.stats().mutations, 0, 'import writes nothing');
  assert.deepEqual(writeRequests(stack.sim.stats()), {});
  assert.deepEqual(result.loadBalancers, [
    { loadBalancer: lb1, found: true, objects: 12 + 6 + 1, untagged: 1 },
    { loadBalancer: lb2, found: true, objects: 12 + 3 * 4, untagged: 0 },
  ]);
  assert.deepEqual(result.services.map((s) => s.serviceUid), [a.uid, b.uid, c.uid].sort());
  const expected = { [a.uid]: expectedSpec(a, [lb1, lb2]), [b.uid]: expectedSpec(b, [lb1]), [c.uid]: expectedSpec(c, [lb2]) };
  for (const s of result.services) {
    assert.deepEqual(where(s), [], `no problems for ${s.serviceUid}`);
    assert.deepEqual(s.spec, expected[s.serviceUid]);
  }
  assert.match(service(result.services, b.uid).notes.join('\n'), /one port: its Backend tcp\.api\.shop\.c1 is read as port "tcp"/);

  stack.sim.resetStats();
  for (const s of result.services) {
    const r = await (await runs.service({ spec: s.spec })).result();
    assert.equal(r.converged, true, `${s.serviceUid} converged`);
    for (const lb of Object.values(r.loadBalancers)) assert.deepEqual([lb.created, lb.destroyed, lb.recovered], [0, 0, 0]);
  }
  const stats = await admin.stats(stack.sim);
  assert.equal(stats.mutations, 0, 'applying the imported specs writes nothing');
  assert.deepEqual(writeRequests(stats), {});
});

test('--service-uid narrows the import; a uid with nothing tagged is reported as not found', async () => {
  const lb = seedLoadBalancer(stack.sim, 'imp-filter');
  const [a, b] = [web(), web()];
  await seedUpstream(stack.sim, lb, a);
  await seedUpstream(stack.sim, lb, b);
  const result = await runImport(lbaas, [lb], [b.uid, 'nobody']);
  assert.deepEqual(result.services.map((s) => s.serviceUid), [b.uid]);
  assert.deepEqual(result.notFound, ['nobody']);
});

test('an empty load balancer yields no service; an unknown one is reported as not found', async () => {
  const lb = seedLoadBalancer(stack.sim, 'imp-empty');
  const result = await runImport(lbaas, [lb, 'f'.repeat(32)]);
  assert.deepEqual(result, {
    loadBalancers: [
      { loadBalancer: lb, found: true, objects: 0, untagged: 0 },
      { loadBalancer: 'f'.repeat(32), found: false, objects: 0, untagged: 0 },
    ],
    services: [],
    notFound: [],
  });
});

test('ambiguous layouts are reported per object, and none of them yields an exact spec', async () => {
  const [lb1, lb2, lb3] = [seedLoadBalancer(stack.sim, 'amb-1'), seedLoadBalancer(stack.sim, 'amb-2'), seedLoadBalancer(stack.sim, 'amb-3')];
  // 1. A tagged object outside the naming scheme.
  const naming = web('naming.default.prod');
  const ids1 = await seedUpstream(stack.sim, lb1, naming);
  await admin.patch(stack.sim, ids1['server node-2.https.naming.default.prod'] as string, { name: 'node-2-https' });
  // 2. Tagged on two load balancers with different shapes (node-2 missing on lb2).
  const shape = web();
  await seedUpstream(stack.sim, lb1, shape);
  await seedUpstream(stack.sim, lb2, { ...shape, nodes: [shape.nodes[0] as [string, string]] });
  // 3. Servers whose ports disagree.
  const ports = web('ports.default.prod');
  const ids3 = await seedUpstream(stack.sim, lb1, ports);
  await admin.patch(stack.sim, ids3['server node-2.http.ports.default.prod'] as string, { fields: { port: 31000 } });
  // 4. An untagged object with one of the service's names.
  const lookalike = web('look.default.prod');
  const ids4 = await seedUpstream(stack.sim, lb2, lookalike);
  const stray = await seedOverHttp(stack.sim, { kind: 'server', fields: { name: 'node-1.http.look.default.prod', ip: '10.0.0.99', port: 30080, check: 'enabled', backend: ids4['backend http.look.default.prod'] }, state: 'Deployed' });
  // 5. Objects tagged for the service on a load balancer that was not given.
  const elsewhere = web('far.default.prod');
  await seedUpstream(stack.sim, lb1, elsewhere);
  await seedUpstream(stack.sim, lb3, elsewhere);
  stack.sim.resetStats();

  const result = await runImport(lbaas, [lb1, lb2]);
  assert.equal(stack.sim.stats().mutations, 0);

  assert.deepEqual(where(service(result.services, naming.uid)), [
    `${lb1} server node-2-https: does not fit <server>.<port>.<suffix> for port "https" and suffix "naming.default.prod"`,
    `${lb1} server node-2.https.naming.default.prod: missing here: the spec rebuilt from all given load balancers has it, so apply would create it`,
  ]);
  assert.deepEqual(where(service(result.services, shape.uid)), [
    `${lb2} server node-2.http.web.default.prod: missing here: the spec rebuilt from all given load balancers has it, so apply would create it`,
    `${lb2} server node-2.https.web.default.prod: missing here: the spec rebuilt from all given load balancers has it, so apply would create it`,
  ]);
  const p = service(result.services, ports.uid);
  assert.equal(p.spec, null);
  assert.deepEqual(where(p), [
    `- - -: port "http": its Servers disagree on the internal port: 30080 (node-1.http.ports.default.prod on ${lb1}); 31000 (node-2.http.ports.default.prod on ${lb1})`,
  ]);
  const l = service(result.services, lookalike.uid);
  assert.deepEqual(
    l.problems.map((x) => [x.loadBalancer, x.identifier, x.message]),
    [[lb2, stray, `is not tagged anxccm-svc-uid=${lookalike.uid} but has one of the service's names: whose it is cannot be told`]],
  );
  const e = service(result.services, elsewhere.uid);
  assert.deepEqual(e.loadBalancers, [lb1]);
  assert.equal(e.problems.length, 1);
  assert.match(e.problems[0]?.message ?? '', /^12 object\(s\) tagged for this service are not on the given load balancers \(.*\): a spec without their load balancer would make lbaas destroy them/);
});

test('a bad input from any Temporal client fails the run at once, naming the field', async () => {
  for (const [input, message] of [
    [{ loadBalancers: [] }, /loadBalancers: must be a list of 1 to 64 identifiers$/],
    [{ loadBalancers: ['a/b'] }, /loadBalancers\[0\]: must be a non-empty identifier without "\/"$/],
    [{ loadBalancers: ['x'], serviceUids: ['bad uid'] }, /serviceUids\[0\]: must be a service uid$/],
  ] as const) {
    const chain = chainOf(await failureOf((await runs.raw('importServices', input)).result()));
    assert.equal(chain[0]?.type, 'InvalidInput');
    assert.equal(chain[0]?.nonRetryable, true);
    assert.match(chain[0]?.message ?? '', message);
  }
});
