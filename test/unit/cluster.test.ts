/**
 * The pure parts of the local cluster (cluster/): the generated server configuration, the installer (explicit paths,
 * and installs with a stand-in go under the shared install lock), and the tables of the `bench:cluster` section of docs/benchmarks.md. The cluster itself runs in
 * `npm run test:cluster`.
 */
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { clusterSection, type RunResult } from '../../bench/cluster-report';
import { renderDynamicConfig, renderProcessConfig, type ProcessPorts, type TemporalService } from '../../cluster/config';
import { binaryVersion, ensureTemporalServer, serverCacheDir, TEMPORAL_SERVER_VERSION, TemporalServerNotFoundError } from '../../dev/temporal-server';
import { PORT_RANGE, portLayout } from '../../cluster/ports';
import { shardsNotTaken } from '../../cluster/shards';

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
  // Server 1.32 always allows multi-operations (update-with-start) and no longer knows the key that turned them on.
  assert.equal(d['frontend.enableExecuteMultiOperation'], undefined);
});

test('the dynamic config turns on Worker Deployment Versions and their workflow APIs, which every lbaas worker polls with', () => {
  const d = parse(renderDynamicConfig()) as Record<string, { value: unknown }[]>;
  assert.deepEqual(d['system.enableDeploymentVersions'], [{ value: true }]);
  assert.deepEqual(d['frontend.workerVersioningWorkflowAPIs'], [{ value: true }]);
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
    const server = await fake('server', TEMPORAL_SERVER_VERSION);
    const sqlTool = await fake('sql', '1.28.0');
    const warnings: string[] = [];
    const found = await ensureTemporalServer({ env: { TEMPORAL_SERVER_PATH: server, TEMPORAL_SQL_TOOL_PATH: sqlTool, LBAAS_CACHE_DIR: dir }, progress: (l) => warnings.push(l) });
    assert.deepEqual(found, { server, sqlTool });
    assert.deepEqual(warnings, [`warning: TEMPORAL_SQL_TOOL_PATH=${sqlTool} reports version 1.28.0, not ${TEMPORAL_SERVER_VERSION}`]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

/**
 * A stand-in `go` whose `install <pkg>@v<version>` counts its runs and writes $GOBIN/<last element of pkg>: first a
 * binary reporting 0.0.0-DEV, then 400 ms later one reporting `version` (a slow, non-atomic build).
 */
async function fakeGo(dir: string, version: string): Promise<{ bin: string; runs: string }> {
  const bin = path.join(dir, 'go-bin');
  await mkdir(bin, { recursive: true });
  const runs = path.join(bin, 'runs');
  const write = (v: string) => `printf '#!/bin/sh\\necho "temporal version %s"\\n' ${v} > "$GOBIN/$name"; /bin/chmod 755 "$GOBIN/$name"`;
  await writeFile(
    path.join(bin, 'go'),
    ['#!/bin/sh', 'case "$1" in', '  env) echo go1.25.4 ;;', '  install)', '    name=$(/usr/bin/basename "${2%@*}")', `    echo "$name" >> '${runs}'`, `    ${write('0.0.0-DEV')}`, '    /bin/sleep 0.4', `    ${write(version)}`, '    ;;', 'esac', ''].join('\n'),
  );
  await chmod(path.join(bin, 'go'), 0o755);
  return { bin, runs };
}

test('two server installs at once build each binary once under the shared install lock, and the cache never holds an unchecked one', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-cluster-lock-'));
  try {
    const go = await fakeGo(dir, TEMPORAL_SERVER_VERSION);
    const env = { PATH: go.bin, LBAAS_CACHE_DIR: path.join(dir, 'cache') };
    const cache = serverCacheDir(env);
    const said: string[] = [];
    let done = false;
    const seen = new Set<string>();
    const watch = (async () => {
      while (!done) {
        for (const f of ['temporal-server', 'temporal-sql-tool']) seen.add((await binaryVersion(path.join(cache, f))) ?? 'absent');
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    let both: { server: string; sqlTool: string }[];
    try {
      both = await Promise.all([0, 1].map(() => ensureTemporalServer({ env, progress: (l) => said.push(l) })));
    } finally {
      done = true;
      await watch;
    }
    const expected = { server: path.join(cache, 'temporal-server'), sqlTool: path.join(cache, 'temporal-sql-tool') };
    assert.deepEqual(both, [expected, expected]);
    assert.deepEqual((await readFile(go.runs, 'utf8')).trim().split('\n').sort(), ['server', 'sql']);
    assert.equal(said.filter((l) => l.startsWith(`waiting for another install of the Temporal server into ${cache} (pid ${process.pid} on `)).length, 1);
    assert.deepEqual([...seen].filter((v) => v !== 'absent' && v !== TEMPORAL_SERVER_VERSION), []);
    assert.deepEqual((await readdir(cache)).sort(), ['temporal-server', 'temporal-sql-tool']);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a go install whose server binary reports another version fails naming it, and puts nothing into the cache', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-cluster-dev-'));
  try {
    const go = await fakeGo(dir, '1.28.0');
    const env = { PATH: go.bin, LBAAS_CACHE_DIR: path.join(dir, 'cache') };
    await assert.rejects(ensureTemporalServer({ env }), (err: Error) => {
      assert.ok(err instanceof TemporalServerNotFoundError);
      assert.deepEqual(err.tried, [
        `TEMPORAL_SERVER_PATH: not set; ${path.join(serverCacheDir(env), 'temporal-server')} (user cache): not present; go install go.temporal.io/server/cmd/server@v${TEMPORAL_SERVER_VERSION}: finished, but the binary reports version 1.28.0, not ${TEMPORAL_SERVER_VERSION}`,
        `TEMPORAL_SQL_TOOL_PATH: not set; ${path.join(serverCacheDir(env), 'temporal-sql-tool')} (user cache): not present; go install go.temporal.io/server/cmd/tools/sql@v${TEMPORAL_SERVER_VERSION}: finished, but the binary reports version 1.28.0, not ${TEMPORAL_SERVER_VERSION}`,
      ]);
      return true;
    });
    assert.deepEqual(await readdir(serverCacheDir(env)), []);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('the bench:cluster section is the run and one row per Temporal and worker count, figures only', () => {
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
    serviceP95Ms: 2500,
  });
  const md = clusterSection([run('dev server', 1, 6, 1), run('cluster', 4, 24.4, 0.987)], { command: 'npm run bench:cluster -- --services 30', services: 30, seed: 42, cpus: 2, loadStart: [0.4, 1.3, 2.7], loadEnd: [8.9, 7.1, 4.7], revision: 'abc1234' });
  assert.ok(md.includes('| command | `npm run bench:cluster -- --services 30` |\n| commit | abc1234 |\n'));
  assert.ok(md.includes('| load average | 0.4/1.3/2.7 at start, 8.9/7.1/4.7 at end |'));
  assert.ok(md.includes('| dev server | 1 | 6 | 1.0 s / 2.5 s | 60.0 | 2000 ms | 20.0 | 2.0 | 100 % | 195.3 KiB |\n'));
  assert.ok(md.endsWith('| cluster | 4 | 24 | 1.0 s / 2.5 s | 60.0 | 2000 ms | 20.0 | 2.0 | 99 % | 195.3 KiB |'));
  // Figures only: every line is a table row or the blank line between the two tables.
  assert.deepEqual(md.split('\n').filter((l) => l !== '' && !l.startsWith('|')), []);
});

test('the cluster draws every port below the ephemeral range and within a SMALLINT, distinct, never a reserved one, and keeps a saved layout only while it qualifies', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-ports-'));
  try {
    const file = path.join(dir, 'ports.json');
    const plan = [
      { name: 'history-1', service: 'history' as const },
      { name: 'history-2', service: 'history' as const },
      { name: 'matching', service: 'matching' as const },
      { name: 'frontend', service: 'frontend' as const },
      { name: 'worker', service: 'worker' as const },
    ];
    const first = await portLayout(file, plan);
    const all = [first.postgres, ...Object.values(first.processes).flatMap((p) => Object.values(p) as number[])];
    // 5 processes x (gRPC, membership, metrics) + the frontend's HTTP + PostgreSQL
    assert.equal(all.length, 17);
    assert.equal(new Set(all).size, 17, 'no port twice');
    assert.deepEqual(all.filter((p) => p < PORT_RANGE.low || p > PORT_RANGE.high), [], 'every port in 20000-32767');
    assert.deepEqual(PORT_RANGE, { low: 20_000, high: 32_767 });
    assert.deepEqual(await portLayout(file, plan), first, 'a saved layout whose ports are free is kept');

    // A layout saved by an older lbaas, with ephemeral ports (where outgoing connections take their local ends).
    const old = { ...first, postgres: 40_001 };
    await writeFile(file, JSON.stringify(old));
    const redrawn = await portLayout(file, plan);
    assert.ok(redrawn.postgres >= PORT_RANGE.low && redrawn.postgres <= PORT_RANGE.high, `postgres port ${redrawn.postgres} redrawn`);
    assert.deepEqual(JSON.parse(await readFile(file, 'utf8')), redrawn, 'the new layout is saved');

    // A saved port that something else now listens on.
    const held = net.createServer();
    await new Promise<void>((r) => held.listen(redrawn.processes['frontend']?.grpc, '127.0.0.1', r));
    try {
      const moved = await portLayout(file, plan);
      assert.notEqual(moved.processes['frontend']?.grpc, redrawn.processes['frontend']?.grpc);
    } finally {
      await new Promise((r) => held.close(r));
    }

    // A port the caller binds later (lbaas dev --cluster --sim-port) in the saved layout: redrawn, and never drawn.
    const kept = await portLayout(file, plan);
    const reserved = kept.postgres;
    const around = await portLayout(file, plan, [reserved]);
    const ports = [around.postgres, ...Object.values(around.processes).flatMap((p) => Object.values(p) as number[])];
    assert.ok(!ports.includes(reserved), `the reserved port ${reserved} is not in ${ports.join(', ')}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('shardsNotTaken: a shard counts as taken only once its range id grew past the one read before the start', () => {
  const none = new Map<number, number>();
  assert.deepEqual(shardsNotTaken(4, none, none), [1, 2, 3, 4], 'a new database: no shard has a row yet');
  assert.deepEqual(shardsNotTaken(4, none, new Map([[1, 1], [3, 1]])), [2, 4], 'shards 2 and 4 not created yet');
  const before = new Map([[1, 5], [2, 5], [3, 7], [4, 7]]);
  assert.deepEqual(shardsNotTaken(4, before, before), [1, 2, 3, 4], 'a kept database: rows of the last run are not ownership now');
  assert.deepEqual(shardsNotTaken(4, before, new Map([[1, 6], [2, 5], [3, 8], [4, 9]])), [2], 'shard 2 still at its old range id');
  assert.deepEqual(shardsNotTaken(2, before, new Map([[1, 6], [2, 6]])), [], 'both shards taken');
});
