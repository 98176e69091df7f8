/**
 * `lbaas pool ...` end to end against a real Temporal dev server, with a worker and the Engine simulator in this
 * process: a few commands as processes (`node bin/lbaas.js`), the rest in-process through `main(argv, io)`, which
 * runs the same code and shows exactly what a user sees.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { main } from '../../cli/main';
import { LbaasClient } from '../../client/service-client';
import { cliEnv, runCli, type CliRun } from '../helpers/cli';
import { exampleSpec, seedLoadBalancer, taggedLines } from '../helpers/fixtures';
import { startStack, stopTemporalServer, temporalServer, type Stack } from '../helpers/stack';
import { until } from '../helpers/workflows';

let stack: Stack;
let lbaas: LbaasClient;
let env: NodeJS.ProcessEnv;
let dir: string;
let lb: string;
before(async () => {
  stack = await startStack();
  lbaas = new LbaasClient(stack.client, stack.taskQueue);
  const srv = await temporalServer();
  env = cliEnv({ address: srv.address, namespace: stack.namespace, taskQueue: stack.taskQueue });
  dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-cli-pool-'));
  lb = seedLoadBalancer(stack.sim, 'lb-cli-pool');
});
after(async () => {
  await stack?.stop();
  await stopTemporalServer();
  await rm(dir, { recursive: true, force: true });
});

const proc = (args: string[]) => runCli(args, { env });
/** The CLI in this process: exit code and everything it printed. */
async function cli(args: string[]): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const started = Date.now();
  const code = await main(['node', 'lbaas', ...args], { env, stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr, ms: Date.now() - started };
}
const file = async (name: string, content: unknown) => {
  const p = path.join(dir, name);
  await writeFile(p, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return p;
};
const exit = (r: CliRun, code: number, what: string) => assert.equal(r.code, code, `${what}: exit ${r.code}; stdout: ${r.stdout}; stderr: ${r.stderr}`);
function poolSpec(uid: string, pool: string, lbs = [lb]): Record<string, unknown> {
  const raw = exampleSpec(lbs, { serviceUid: uid, nameSuffix: uid, serverPool: pool });
  delete raw.servers;
  return raw;
}

test('pool set -f (a process) creates the pool and prints the change as JSON; exit 0', async () => {
  const p = await file('pool.yaml', 'name: nodes\nservers:\n  - name: node-2\n    address: 10.0.0.12\n  - name: node-1\n    address: 10.0.0.11\n');
  const r = await proc(['pool', 'set', '-f', p, '-o', 'json']);
  exit(r, 0, 'pool set');
  assert.deepEqual(JSON.parse(r.stdout), { name: 'nodes', revision: 1, changed: true, added: ['node-1', 'node-2'], removed: [], readdressed: [], services: 0 });
  const again = await cli(['pool', 'set', '-f', p]);
  exit(again, 0, 'pool set again');
  assert.equal(again.stdout, 'server pool nodes: unchanged (revision 1)\n');
});

test('pool set refuses an invalid pool file with every issue at its path (a process; exit 2), and creates nothing', async () => {
  const p = await file('bad.yaml', 'name: bad\nservers:\n  - name: n1\n    address: 10.0.0.300\n  - {name: n1, address: 10.0.0.2}\n');
  const r = await proc(['pool', 'set', '-f', p]);
  exit(r, 2, 'invalid pool file');
  assert.equal(
    r.stderr,
    `lbaas: ${p}: invalid pool file (2 issues):\nservers[0].address: must be an IPv4 or IPv6 address without zone, like 203.0.113.10 or 2001:db8::10\nservers[1].name: duplicate of servers[0].name\n`,
  );
  assert.equal(await lbaas.pools.exists('bad'), false);
});

test('pool add: new servers, a repeated add is a no-op, bad --server and a missing pool are refused (exit 2)', async () => {
  const r = await cli(['pool', 'add', 'nodes', '--server', 'node-3=10.0.0.13', '--server', 'node-4=10.0.0.14', '-o', 'json']);
  exit(r, 0, 'add');
  assert.deepEqual(JSON.parse(r.stdout), { name: 'nodes', revision: 2, changed: true, added: ['node-3', 'node-4'], removed: [], readdressed: [], services: 0 });
  const same = await cli(['pool', 'add', 'nodes', '--server', 'node-3=10.0.0.13']);
  exit(same, 0, 'same add');
  assert.equal(same.stdout, 'server pool nodes: unchanged (revision 2)\n');
  const noEq = await cli(['pool', 'add', 'nodes', '--server', 'node-5']);
  exit(noEq, 2, 'no =');
  assert.equal(noEq.stderr, 'lbaas: --server "node-5": must be NAME=ADDRESS, like node-1=10.0.0.11\n');
  const badIp = await cli(['pool', 'add', 'nodes', '--server', 'node-5=10.0.0.300']);
  exit(badIp, 2, 'bad address');
  assert.equal(badIp.stderr, 'lbaas: invalid --server (node-5=10.0.0.300):\n--server[0].address: must be an IPv4 or IPv6 address without zone, like 203.0.113.10 or 2001:db8::10\n');
  const none = await cli(['pool', 'add', 'nodes']);
  exit(none, 2, 'no --server');
  const missing = await cli(['pool', 'add', 'ghost', '--server', 'n=10.0.0.1']);
  exit(missing, 2, 'missing pool');
  assert.equal(missing.stderr, 'lbaas: no server pool ghost (create it with: lbaas pool set -f FILE)\n');
  assert.equal(await lbaas.pools.exists('ghost'), false);
  const badName = await cli(['pool', 'add', 'a/b', '--server', 'n=10.0.0.1']);
  exit(badName, 2, 'bad name');
});

test('pool remove: removes by name, says which names were not members; exit 0', async () => {
  const r = await cli(['pool', 'remove', 'nodes', 'node-4', 'ghost']);
  exit(r, 0, 'remove');
  assert.equal(r.stdout, 'server pool nodes revision 3: removed node-4; delivering to 0 services (lbaas pool status nodes --wait follows them)\n');
  assert.equal(r.stderr, 'not members of nodes (nothing to remove): ghost\n');
});

test('apply with serverPool converges the pool members; lbaas status shows the pool and its revision', async () => {
  const r = await cli(['apply', '-f', await file('svc.json', poolSpec('cli-pool-svc', 'nodes')), '--wait', '-o', 'json']);
  exit(r, 0, 'apply');
  assert.equal(JSON.parse(r.stdout).converged, true);
  assert.deepEqual(taggedLines(stack.sim, 'anxccm-svc-uid=cli-pool-svc').filter((l) => l.startsWith('server ')).sort(), [
    'server node-1.http.cli-pool-svc',
    'server node-1.https.cli-pool-svc',
    'server node-2.http.cli-pool-svc',
    'server node-2.https.cli-pool-svc',
    'server node-3.http.cli-pool-svc',
    'server node-3.https.cli-pool-svc',
  ]);
  const s = await cli(['status', 'cli-pool-svc', '-o', 'json']);
  exit(s, 0, 'status');
  assert.deepEqual(JSON.parse(s.stdout).pool, { name: 'nodes', revision: 3, servers: 3, convergedRevision: 3 });
  const text = await cli(['status', 'cli-pool-svc']);
  assert.match(text.stdout, /^server pool +nodes revision 3 \(3 servers, last pass on pool revision 3\)$/m);
});

test('apply naming a missing pool is refused (exit 2) and starts nothing', async () => {
  const r = await cli(['apply', '-f', await file('missing.json', poolSpec('cli-pool-missing', 'ghost'))]);
  exit(r, 2, 'apply missing pool');
  assert.equal(r.stderr, 'lbaas: service cli-pool-missing: serverPool: no server pool ghost (create it with: lbaas pool set -f FILE); nothing was applied\n');
  await assert.rejects(lbaas.controller('cli-pool-missing').describe(), /not found/i);
});

test('pool status --wait: exit 0 once every service converged the latest revision, with per-service revisions', async () => {
  await cli(['pool', 'add', 'nodes', '--server', 'node-6=10.0.0.16']);
  const r = await cli(['pool', 'status', 'nodes', '--wait', '--timeout', '60s', '-o', 'json']);
  exit(r, 0, 'status --wait');
  const s = JSON.parse(r.stdout);
  assert.equal(s.revision, 4);
  assert.deepEqual(s.services.map((x: { serviceUid: string; convergedRevision: number }) => [x.serviceUid, x.convergedRevision]), [['cli-pool-svc', 4]]);
  const text = await cli(['pool', 'status', 'nodes']);
  assert.match(text.stdout, /^revision +4$/m);
  assert.match(text.stdout, /^cli-pool-svc +4 +converged 4$/m);
});

test('pool status --wait: exit 3 when the services have not converged within --timeout', async () => {
  await cli(['pool', 'add', 'nodes', '--server', 'node-7=10.0.0.17']);
  const r = await cli(['pool', 'status', 'nodes', '--wait', '--timeout', '1ms']);
  exit(r, 3, 'status --wait timeout');
  assert.match(r.stderr, /timed out after 1ms waiting for the services of pool nodes to converge revision 5/);
  await lbaas.pools.waitConverged('nodes', 5);
});

test('pool status --wait: exit 1 when a service using the pool fails, naming it', async () => {
  const r = await cli(['apply', '-f', await file('fail.json', poolSpec('cli-pool-fail', 'nodes', ['no-such-load-balancer']))]);
  exit(r, 0, 'apply failing service');
  await until('the failing service subscribed', async () => (await lbaas.pools.status('nodes')).services.some((s) => s.serviceUid === 'cli-pool-fail' && s.last !== null));
  const w = await cli(['pool', 'status', 'nodes', '--wait', '--timeout', '60s']);
  exit(w, 1, 'status --wait with a failed service');
  assert.match(w.stderr, /revision 5 of pool nodes failed on 1 service: cli-pool-fail \(/);
  await lbaas.delete('cli-pool-fail');
});

test('pool list shows each pool with revision, servers and services', async () => {
  const r = await cli(['pool', 'list', '-o', 'json']);
  exit(r, 0, 'list');
  await until('nodes listed', async () => JSON.parse((await cli(['pool', 'list', '-o', 'json'])).stdout).length === 1);
  const again = JSON.parse((await cli(['pool', 'list', '-o', 'json'])).stdout);
  assert.deepEqual(again, [{ name: 'nodes', revision: 5, servers: 5, services: 1 }]);
});

test('plan with an empty pool says the service will have no Server objects', async () => {
  await cli(['pool', 'set', '-f', await file('empty.json', { name: 'empty', servers: [] })]);
  const r = await cli(['plan', '-f', await file('plan.json', poolSpec('cli-pool-plan', 'empty'))]);
  exit(r, 0, 'plan');
  assert.match(r.stdout, /^servers from pool empty \(revision 0\): none; the pool is empty, so the service has no Server objects/m);
  assert.match(r.stdout, /: 8 to create, 0 to destroy/);
  assert.doesNotMatch(r.stdout, /server node/i);
});

test('pool delete (a process) is refused while a service uses the pool, naming it (exit 2); allowed once none does', async () => {
  const r = await proc(['pool', 'delete', 'nodes']);
  exit(r, 2, 'delete refused');
  assert.equal(r.stderr, "lbaas: refused: server pool nodes is used by 1 service: cli-pool-svc; move them off the pool (or delete them) first\n");
  await lbaas.delete('cli-pool-svc');
  await until('unsubscribed', async () => (await lbaas.pools.status('nodes')).services.length === 0);
  const d = await cli(['pool', 'delete', 'nodes', '-o', 'json']);
  exit(d, 0, 'delete');
  assert.deepEqual(JSON.parse(d.stdout), { name: 'nodes', revision: 5, deleted: true });
  const gone = await cli(['pool', 'status', 'nodes']);
  exit(gone, 2, 'status of a deleted pool');
});
