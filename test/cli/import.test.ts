/**
 * `lbaas import` against a real Temporal dev server, with a worker and the simulator in this test process (the CLI
 * gets no Engine token; test/helpers/cli-stack.ts): output formats, files, --check, --force, --pool and the exit
 * codes. The first import runs as a process (YAML on stdout, the report on stderr, exit 0), the others in this
 * process.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import YAML from 'yaml';
import { admin, writeRequests } from '../helpers/engine-state';
import { type CliRun } from '../helpers/cli';
import { cliStack } from '../helpers/cli-stack';
import { seedLoadBalancer } from '../helpers/fixtures';
import { expectedSpec, seedUpstream, type UpstreamService } from '../helpers/upstream';

const cs = cliStack('import', { sim: { deployMs: { min: 20, max: 60 } } });
const { cli, proc } = cs;
const code = (r: CliRun, want: number, what: string) => assert.equal(r.code, want, `${what}: exit ${r.code}; stderr: ${r.stderr}`);
const svc = (suffix: string, nodes: [string, string][] = [['node-1', '10.0.0.11'], ['node-2', '10.0.0.12']]): UpstreamService => ({
  uid: `cli-${randomUUID()}`,
  suffix,
  ports: { http: [80, 30080], https: [443, 30443] },
  addresses: ['203.0.113.10', '2001:db8::10'],
  nodes,
});

test('YAML on stdout: one document per service, exactly the rebuilt specs; the report on stderr; exit 0', async () => {
  const [lb1, lb2] = [seedLoadBalancer(cs.stack.sim, 'cli-imp-1'), seedLoadBalancer(cs.stack.sim, 'cli-imp-2')];
  const a = svc('a.default.prod');
  const b = svc('b.default.prod');
  for (const lb of [lb1, lb2]) await seedUpstream(cs.stack.sim, lb, a);
  await seedUpstream(cs.stack.sim, lb1, b);
  cs.stack.sim.resetStats();
  const r = await proc(['import', '--load-balancer', lb1, '--load-balancer', lb2]);
  code(r, 0, 'import');
  assert.equal(cs.stack.sim.stats().mutations, 0);
  const docs = YAML.parseAllDocuments(r.stdout).map((d) => d.toJS() as { serviceUid: string });
  const byUid = Object.fromEntries(docs.map((d) => [d.serviceUid, d]));
  assert.deepEqual(byUid, { [a.uid]: expectedSpec(a, [lb1, lb2]), [b.uid]: expectedSpec(b, [lb1]) });
  assert.match(r.stdout, new RegExp(`^# imported by lbaas import from 24 objects on ${lb1}, ${lb2}\n`, 'm'));
  assert.match(r.stderr, new RegExp(`^imported ${a.uid} \\(24 objects on ${lb1}, ${lb2}\\)$`, 'm'));
  assert.match(r.stderr, new RegExp(`^load balancer ${lb1}: 24 objects, 0 of them untagged \\(left alone\\)$`, 'm'));
});

test('--out-dir -o json --check: one file per service, a JSON report on stdout, no change planned; apply of the file writes nothing', async () => {
  const lb = seedLoadBalancer(cs.stack.sim, 'cli-imp-json');
  const a = svc('json.default.prod');
  await seedUpstream(cs.stack.sim, lb, a);
  const out = path.join(cs.dir, 'json');
  const r = await cli(['import', '--load-balancer', lb, '--out-dir', out, '-o', 'json', '--check']);
  code(r, 0, 'import --check');
  const file = path.join(out, `${a.uid}.json`);
  assert.deepEqual(await readdir(out), [`${a.uid}.json`]);
  assert.deepEqual(JSON.parse(await readFile(file, 'utf8')), expectedSpec(a, [lb]));
  const report = JSON.parse(r.stdout) as { services: { serviceUid: string; written: boolean; file: string; problems: unknown[]; check: { changes: number; loadBalancers: Record<string, unknown> } }[] };
  assert.deepEqual(
    report.services.map((s) => [s.serviceUid, s.written, s.file, s.problems, s.check]),
    [[a.uid, true, file, [], { changes: 0, loadBalancers: { [lb]: { create: 0, destroy: 0, recover: 0, wait: 0, keep: 12 } } }]],
  );
  assert.match(r.stderr, new RegExp(`^check ${a.uid}: no change$`, 'm'));

  cs.stack.sim.resetStats();
  const applied = await cli(['apply', '-f', file, '--wait', '-o', 'json']);
  code(applied, 0, 'apply');
  assert.deepEqual((JSON.parse(applied.stdout) as { loadBalancers: Record<string, unknown> }).loadBalancers[lb], {
    status: { '203.0.113.10': [80, 443], '2001:db8::10': [80, 443] },
    created: 0,
    destroyed: 0,
    recovered: 0,
  });
  assert.equal((await admin.stats(cs.stack.sim)).mutations, 0);
  assert.deepEqual(writeRequests(await admin.stats(cs.stack.sim)), {});
  await cs.stack.client.workflow.getHandle(`lbaas/${a.uid}`).terminate('test done');
});

test('a service that cannot be rebuilt exactly is reported and not written (exit 1); --force writes it with a warning comment (exit 0)', async () => {
  const [lb1, lb2] = [seedLoadBalancer(cs.stack.sim, 'cli-imp-amb-1'), seedLoadBalancer(cs.stack.sim, 'cli-imp-amb-2')];
  const good = svc('good.default.prod');
  const shape = svc('shape.default.prod');
  await seedUpstream(cs.stack.sim, lb1, good);
  await seedUpstream(cs.stack.sim, lb1, shape);
  await seedUpstream(cs.stack.sim, lb2, { ...shape, nodes: [['node-1', '10.0.0.11']] });
  const r = await cli(['import', '--load-balancer', lb1, '--load-balancer', lb2]);
  code(r, 1, 'import');
  assert.deepEqual(YAML.parseAllDocuments(r.stdout).map((d) => (d.toJS() as { serviceUid: string }).serviceUid), [good.uid]);
  assert.match(
    r.stderr,
    new RegExp(
      `^NOT WRITTEN ${shape.uid} \\(22 objects on ${lb1}, ${lb2}\\): 2 problems \\(--force writes it anyway, with a warning\\)\n` +
        `  load balancer ${lb2} Server node-2\\.http\\.shape\\.default\\.prod: missing here: the spec rebuilt from all given load balancers has it, so apply would create it\n` +
        `  load balancer ${lb2} Server node-2\\.https\\.shape\\.default\\.prod: missing here`,
      'm',
    ),
  );
  const forced = await cli(['import', '--load-balancer', lb1, '--load-balancer', lb2, '--service-uid', shape.uid, '--force']);
  code(forced, 0, 'import --force');
  assert.match(forced.stdout, /^# WARNING: written with --force; this spec does NOT match what the load balancers hold/m);
  assert.match(forced.stdout, /^# {3}- load balancer \S+ Server node-2\.http\.shape\.default\.prod: missing here/m);
  assert.deepEqual(YAML.parse(forced.stdout), expectedSpec(shape, [lb1, lb2]));
  assert.match(forced.stderr, new RegExp(`^WRITTEN WITH PROBLEMS \\(--force\\) ${shape.uid}`, 'm'));
});

test('--pool: services with the same servers name the pool, its file is written beside them, others keep their servers', async () => {
  const lb = seedLoadBalancer(cs.stack.sim, 'cli-imp-pool');
  const [a, b] = [svc('pa.default.prod'), svc('pb.default.prod')];
  const c = svc('pc.default.prod', [['edge-1', '10.0.9.1']]);
  for (const s of [a, b, c]) await seedUpstream(cs.stack.sim, lb, s);
  const out = path.join(cs.dir, 'pool');
  const r = await cli(['import', '--load-balancer', lb, '--out-dir', out, '--pool', 'workers']);
  code(r, 0, 'import --pool');
  assert.deepEqual((await readdir(out)).sort(), [`${a.uid}.yaml`, `${b.uid}.yaml`, `${c.uid}.yaml`, 'workers.pool.yaml'].sort());
  assert.deepEqual(YAML.parse(await readFile(path.join(out, 'workers.pool.yaml'), 'utf8')), { name: 'workers', servers: expectedSpec(a, []).servers });
  for (const s of [a, b]) {
    const { servers: _servers, ...rest } = expectedSpec(s, [lb]);
    assert.deepEqual(YAML.parse(await readFile(path.join(out, `${s.uid}.yaml`), 'utf8')), { ...rest, serverPool: 'workers' });
  }
  assert.deepEqual(YAML.parse(await readFile(path.join(out, `${c.uid}.yaml`), 'utf8')), expectedSpec(c, [lb]));
  assert.match(r.stderr, new RegExp(`^  ${c.uid}: its servers \\(edge-1\\) differ from pool workers's, so it keeps them inline$`, 'm'));
});

test('an empty load balancer writes nothing and says so (exit 0); usage errors and unknown load balancers exit 2', async () => {
  const lb = seedLoadBalancer(cs.stack.sim, 'cli-imp-empty');
  const empty = await cli(['import', '--load-balancer', lb]);
  code(empty, 0, 'empty');
  assert.equal(empty.stdout, '');
  assert.match(empty.stderr, /^no services found on 1 load balancer: nothing written$/m);

  for (const [args, message] of [
    [['import'], /--load-balancer ID is required/],
    [['import', '--load-balancer', lb, '--service-uid', 'bad uid'], /--service-uid "bad uid": not a service uid/],
    [['import', '--load-balancer', lb, '-o', 'xml'], /argument 'xml' is invalid/],
    [['import', '--load-balancer', lb, '--pool', '-x'], /--pool "-x": must be/],
    [['import', '--load-balancer', 'f'.repeat(32)], /no load balancer f{32} on the Engine; nothing was written/],
  ] as const) {
    const r = await cli([...args]);
    code(r, 2, args.join(' '));
    assert.equal(r.stdout, '');
    assert.match(r.stderr, message);
  }
});

test("--cluster-name reads a single port by the upstream's <service>.<namespace>.<cluster>: the unnamed port as named upstream; without it, reported as ambiguous", async () => {
  const lb = seedLoadBalancer(cs.stack.sim, 'cli-imp-cluster');
  const unnamed: UpstreamService = { uid: `cli-${randomUUID()}`, suffix: 'web.default.prod', ports: { '': [8080, 31000] }, addresses: ['203.0.113.10'], nodes: [['node-1', '10.0.0.11']] };
  const named: UpstreamService = { ...unnamed, uid: `cli-${randomUUID()}`, suffix: 'api.default.prod', ports: { http: [8081, 31001] } };
  await seedUpstream(cs.stack.sim, lb, unnamed);
  await seedUpstream(cs.stack.sim, lb, named);
  const specsOf = (r: CliRun) => Object.fromEntries(YAML.parseAllDocuments(r.stdout).map((d) => d.toJS() as { serviceUid: string; nameSuffix: string; ports: unknown }).map((d) => [d.serviceUid, [d.nameSuffix, d.ports]]));

  const plain = await cli(['import', '--load-balancer', lb]);
  code(plain, 0, 'import');
  assert.deepEqual(specsOf(plain)[unnamed.uid], ['default.prod', { web: { external: 8080, internal: 31000 } }]);
  assert.match(plain.stderr, /note: ambiguous: one port: its Backend web\.default\.prod is read as port "web" with nameSuffix "default\.prod"/);

  const r = await cli(['import', '--load-balancer', lb, '--cluster-name', 'prod', '--check']);
  code(r, 0, 'import --cluster-name --check');
  assert.deepEqual(specsOf(r), {
    [unnamed.uid]: ['web.default.prod', { '': { external: 8080, internal: 31000 } }],
    [named.uid]: ['api.default.prod', { http: { external: 8081, internal: 31001 } }],
  });
  assert.doesNotMatch(r.stderr, /ambiguous/);
  assert.match(r.stderr, new RegExp(`note: cluster prod: the single unnamed port "" with nameSuffix "web\\.default\\.prod", as the upstream named it`));
  assert.match(r.stderr, new RegExp(`^check ${unnamed.uid}: no change$`, 'm'));
  assert.match(r.stderr, new RegExp(`^check ${named.uid}: no change$`, 'm'));

  const other = await cli(['import', '--load-balancer', lb, '--cluster-name', 'stage']);
  code(other, 0, 'import --cluster-name stage');
  assert.match(other.stderr, /note: ambiguous: neither nameSuffix "default\.prod" nor "web\.default\.prod" is <service>\.<namespace>\.stage/);
  const bad = await cli(['import', '--load-balancer', lb, '--cluster-name', 'a b']);
  code(bad, 2, 'bad --cluster-name');
  assert.match(bad.stderr, /--cluster-name "a b": must be/);
});
