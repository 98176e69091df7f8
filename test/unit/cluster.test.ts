/**
 * The pure parts of the local cluster (cluster/): the generated server configuration, the install lock and the
 * explicit-binary paths of the installer, and the cluster section of docs/benchmarks.md. The cluster itself runs in
 * `npm run test:cluster`.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { findings, replaceSection, SECTION_END, SECTION_START, withClusterSection, type RunResult } from '../../bench/cluster-report';
import { renderDynamicConfig, renderProcessConfig, type ProcessPorts, type TemporalService } from '../../cluster/config';
import { acquireLock, ensureTemporalServer, TemporalServerNotFoundError } from '../../cluster/install';

const ports = (base: number, http = false): ProcessPorts => ({ grpc: base, membership: base + 1, metrics: base + 2, ...(http ? { http: base + 3 } : {}) });
const input = (service: TemporalService, history: ProcessPorts) => ({
  service,
  ports: { frontend: ports(7000, true), history, matching: ports(7100), worker: ports(7200) },
  frontendAddress: '127.0.0.1:7000',
  pg: { port: 5555, user: 'temporal', password: 's3cret' },
  numHistoryShards: 4,
  dynamicConfigFile: '/tmp/dc.yaml',
  logLevel: 'warn' as const,
});

/** A value at a path of a parsed YAML document. */
const at = (doc: unknown, ...keys: string[]): unknown => keys.reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], doc);

test('each process config names every service (the membership monitor needs all) with its own history ports and metrics port', () => {
  const second = parse(renderProcessConfig(input('history', ports(7400))));
  assert.deepEqual(Object.keys(at(second, 'services') as object).sort(), ['frontend', 'history', 'matching', 'worker']);
  assert.deepEqual(at(second, 'services', 'history', 'rpc'), { grpcPort: 7400, membershipPort: 7401, bindOnIP: '127.0.0.1' });
  assert.deepEqual(at(second, 'services', 'frontend', 'rpc'), { grpcPort: 7000, membershipPort: 7001, bindOnIP: '127.0.0.1', httpPort: 7003 });
  assert.equal(at(second, 'global', 'metrics', 'prometheus', 'listenAddress'), '127.0.0.1:7402');
  const frontend = parse(renderProcessConfig(input('frontend', ports(7300))));
  assert.equal(at(frontend, 'global', 'metrics', 'prometheus', 'listenAddress'), '127.0.0.1:7002');
  assert.equal(at(frontend, 'clusterMetadata', 'clusterInformation', 'active', 'rpcAddress'), '127.0.0.1:7000');
  assert.equal(at(frontend, 'publicClient', 'hostPort'), '127.0.0.1:7000');
});

test('the process config points both stores at the private PostgreSQL with postgres12 and the shard count given', () => {
  const c = parse(renderProcessConfig(input('matching', ports(7300))));
  assert.equal(at(c, 'persistence', 'numHistoryShards'), 4);
  assert.equal(at(c, 'persistence', 'defaultStore'), 'default');
  assert.equal(at(c, 'persistence', 'visibilityStore'), 'visibility');
  for (const [store, db] of [['default', 'temporal'], ['visibility', 'temporal_visibility']]) {
    const sql = (k: string) => at(c, 'persistence', 'datastores', store as string, 'sql', k);
    assert.deepEqual(['pluginName', 'databaseName', 'connectAddr', 'user', 'password'].map(sql), ['postgres12', db, '127.0.0.1:5555', 'temporal', 's3cret']);
  }
  assert.equal(at(c, 'dynamicConfigClient', 'filepath'), '/tmp/dc.yaml');
});

test('the dynamic config turns on what lbaas apply needs, in the server file format (a list of {value})', () => {
  const d = parse(renderDynamicConfig()) as Record<string, { value: unknown }[]>;
  assert.deepEqual(d['frontend.enableUpdateWorkflowExecution'], [{ value: true }]);
  assert.deepEqual(d['frontend.enableExecuteMultiOperation'], [{ value: true }]);
});

test('an explicit server path that is not executable fails naming the variable; explicit binaries are used as they are', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-cluster-unit-'));
  try {
    await assert.rejects(ensureTemporalServer({ env: { TEMPORAL_SERVER_PATH: path.join(dir, 'nope'), LBAAS_CACHE_DIR: dir } }), (err: Error) => {
      assert.ok(err instanceof TemporalServerNotFoundError);
      assert.match(err.message, /TEMPORAL_SERVER_PATH=.*nope: not an executable file/);
      return true;
    });
    const fake = async (name: string, version: string) => {
      const file = path.join(dir, name);
      await writeFile(file, `#!/bin/sh\necho "temporal version ${version}"\n`);
      await chmod(file, 0o755);
      return file;
    };
    const server = await fake('server', '1.29.1');
    const sqlTool = await fake('sql', '1.28.0');
    const warnings: string[] = [];
    const found = await ensureTemporalServer({ env: { TEMPORAL_SERVER_PATH: server, TEMPORAL_SQL_TOOL_PATH: sqlTool, LBAAS_CACHE_DIR: dir }, progress: (l) => warnings.push(l) });
    assert.deepEqual(found, { server, sqlTool });
    assert.deepEqual(warnings, [`warning: TEMPORAL_SQL_TOOL_PATH=${sqlTool} reports version 1.28.0, not 1.29.1`]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('the install lock: a live holder makes the next run wait; a dead holder\'s lock is taken over', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-cluster-lock-'));
  const lock = path.join(dir, '.install-lock');
  try {
    const release = await acquireLock(lock, () => {});
    let second = false;
    const waiting = acquireLock(lock, () => {}).then((r) => {
      second = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(second, false, 'the second run waits while the first holds the lock');
    await release();
    await (await waiting)();
    assert.deepEqual(await readdir(dir), []);

    // A holder that died: a process that has exited leaves its pid behind.
    const dead = spawn(process.execPath, ['-e', '']);
    await new Promise((r) => dead.once('exit', r));
    await acquireLock(lock, () => {}).then((r) => r());
    await mkdir(lock);
    await writeFile(path.join(lock, 'pid'), String(dead.pid));
    const said: string[] = [];
    const taken = await acquireLock(lock, (l) => said.push(l));
    assert.match(said[0] ?? '', /taking over a stale install lock .* \(owner \d+ is gone\)/);
    assert.equal((await stat(path.join(lock, 'pid'))).isFile(), true);
    await taken();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('the cluster section of docs/benchmarks.md is replaced in place, appended when absent, and kept by a rerun of npm run bench', () => {
  const section = (n: number) => `${SECTION_START}\nrun ${n}\n${SECTION_END}`;
  const appended = replaceSection('# Benchmarks\n\ncore numbers\n', section(1));
  assert.equal(appended, `# Benchmarks\n\ncore numbers\n\n${section(1)}\n`);
  assert.equal(replaceSection(`${appended}tail\n`, section(2)), `# Benchmarks\n\ncore numbers\n\n${section(2)}\ntail\n`);
  assert.equal(withClusterSection('# Benchmarks\n\nnew core numbers\n', appended), `# Benchmarks\n\nnew core numbers\n\n${section(1)}\n`);
  assert.equal(withClusterSection('# fresh\n', '# old, no section\n'), '# fresh\n');
});

test('the findings of bench:cluster follow the numbers: saturation, what more workers bought, Temporal vs worker CPU, CPU share', () => {
  const run = (backend: 'dev server' | 'cluster', workers: number, perMin: number, busy: number): RunResult => ({
    backend,
    workers,
    services: 30,
    wallMs: (30 / perMin) * 60_000,
    servicesPerMinute: perMin,
    temporalCpuS: 60,
    workerCpuS: 20,
    simulatorCpuS: 2,
    machineBusyS: 100,
    machineBusy: busy,
    dbBytesPerService: 200_000,
    serviceP50Ms: 1000,
    serviceP95Ms: 2000,
  });
  const saturated = findings([run('dev server', 1, 6, 1), run('dev server', 4, 7, 1), run('cluster', 1, 21, 0.99), run('cluster', 4, 24, 1)]).join('\n');
  assert.match(saturated, /at least 99 % busy in every run/);
  assert.match(saturated, /dev server: 4 workers converged 1\.17x the services per minute of 1 \(more workers add little/);
  assert.match(saturated, /Temporal used 3\.0x the CPU of the workers \(median over runs\), so the server is where CPU goes first/);
  assert.match(saturated, /The cluster converged 3\.5x as many services per minute as the dev server \(medians\) at 2000 ms .* against 2000 ms\. On a saturated machine the kernel shares CPU per process/);
  const idle = findings([run('dev server', 1, 50, 0.5), run('dev server', 4, 150, 0.7), run('cluster', 1, 50, 0.5)]).join('\n');
  assert.match(idle, /not saturated in every run \(least busy 50 %\)/);
  assert.match(idle, /dev server: 4 workers converged 3\.00x the services per minute of 1;/);
  assert.doesNotMatch(idle, /kernel shares CPU per process/);
});
