/**
 * The simulator as a process and across restarts: `--state` persistence, the one ready line on stdout,
 * SIGTERM shutdown, usage errors with exit code 2, and `--seed-demo`.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEMO_LOAD_BALANCERS, startSimulator } from '../../simulator/index';
import { rawRequest } from '../../simulator/testkit';

type Json = Record<string, unknown>;
const MAIN = path.join(__dirname, '..', '..', 'simulator', 'main.js');
const BE = '/api/LBaaS/v1/backend.json';

const madeDirs: string[] = [];
/** A temporary directory of this file's tests, removed when the file is done. */
function tmpDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lbaas-sim-test-'));
  madeDirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of madeDirs) fs.rmSync(dir, { recursive: true, force: true });
});

interface Proc {
  url: string;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
  kill: (sig: NodeJS.Signals) => void;
}

function startProcess(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Proc> {
  const child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready line; stderr: ${err}`)), 10_000);
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^engine simulator listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve({ url: m[1], stdout: () => out, stderr: () => err, exit, kill: (sig) => child.kill(sig) });
      }
    });
    void exit.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before ready; stderr: ${err}`));
    });
  });
}

function runToExit(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('state file', () => {
  test('--state keeps objects, states, tags and the identifier stream across a restart (atomic write, no temporary file left)', async () => {
    const dir = tmpDir();
    const file = path.join(dir, 'nested', 'sim-state.json');
    const first = await startSimulator({ port: 0, seed: 1, stateFile: file, deployMs: { min: 0, max: 0 } });
    const lb = first.seedObject({ kind: 'loadbalancer', fields: { name: 'lb', ip_address: '198.51.100.9' }, tags: ['keep=me'] });
    const be = (await rawRequest(first.url, 'POST', BE, { body: { name: 'b', health_check: '"adv_check": "tcp-check"', load_balancer: lb } })).json as Json;
    await new Promise((r) => setTimeout(r, 20));
    first.patchObject(lb, { state: 'DeploymentError' });
    await first.close();
    assert.ok(fs.existsSync(file));
    assert.deepEqual(fs.readdirSync(path.dirname(file)), ['sim-state.json']);

    const second = await startSimulator({ port: 0, seed: 1, stateFile: file, deployMs: { min: 0, max: 0 } });
    try {
      const got = (await rawRequest(second.url, 'GET', `${BE}/${be.identifier as string}`)).json as Json;
      assert.deepEqual(got, { ...be, state: { id: '3', title: 'Deployed', text: 'Deployed', type: 1 } });
      const lbState = ((await rawRequest(second.url, 'GET', `/api/LBaaS/v1/loadbalancer.json/${lb}`)).json as { state: Json }).state;
      assert.equal(lbState.title, 'DeploymentError');
      const tagged = (await rawRequest(second.url, 'GET', '/api/core/v1/resource.json?tag_name=keep%3Dme')).json as { data: Json[] };
      assert.deepEqual(tagged.data, [{ identifier: lb, name: 'lb' }]);
      const fresh = (await rawRequest(second.url, 'POST', BE, { body: { name: 'c', load_balancer: lb } })).json as Json;
      assert.ok(![lb, be.identifier].includes(fresh.identifier), 'the same seed does not hand out an identifier again');
    } finally {
      await second.close();
    }
  });

  test('a corrupt state file fails the start with a message naming the file', async () => {
    const file = path.join(tmpDir(), 'bad.json');
    fs.writeFileSync(file, '{"version": 7}');
    await assert.rejects(startSimulator({ port: 0, stateFile: file }), (err: Error) => err.message.includes(file));
  });
});

describe('sim process', () => {
  test('prints exactly one ready line on stdout, serves, and on SIGTERM saves the state file and exits 0', async () => {
    const file = path.join(tmpDir(), 'state.json');
    const p = await startProcess(['--port', '0', '--quiet', '--deploy-ms', '0', '--seed', '5', '--state', file]);
    const res = await rawRequest(p.url, 'POST', '/_sim/objects', { body: { kind: 'loadbalancer', fields: { name: 'persisted' } } });
    assert.equal(res.status, 201);
    const list = await rawRequest(p.url, 'GET', '/api/LBaaS/v1/loadbalancer.json');
    assert.equal(list.status, 200);
    p.kill('SIGTERM');
    assert.equal(await p.exit, 0);
    assert.equal(p.stdout().split('\n').filter(Boolean).length, 1);
    assert.equal(p.stderr(), '', '--quiet');
    const saved = JSON.parse(fs.readFileSync(file, 'utf8')) as { objects: Json[] };
    assert.deepEqual(saved.objects.map((o) => o.name), ['persisted']);
  });

  test('--token and LBAAS_SIM_TOKEN set the token; LBAAS_SIM_PORT sets the port', async () => {
    const p = await startProcess(['--quiet'], { LBAAS_SIM_TOKEN: 'sekret', LBAAS_SIM_PORT: '0' });
    try {
      assert.equal((await rawRequest(p.url, 'GET', BE)).status, 401);
      assert.equal((await rawRequest(p.url, 'GET', BE, { token: 'sekret' })).status, 200);
    } finally {
      p.kill('SIGINT');
      assert.equal(await p.exit, 0);
    }
  });

  test('--profile realistic (and LBAAS_SIM_PROFILE) starts the realistic profile; --delete-ms still overrides its delete delay', async () => {
    const p = await startProcess(['--port', '0', '--quiet', '--profile', 'realistic']);
    const q = await startProcess(['--port', '0', '--quiet', '--delete-ms', '100'], { LBAAS_SIM_PROFILE: 'realistic' });
    try {
      const model = (await rawRequest(p.url, 'GET', '/_sim/faults')).json as Json;
      assert.equal(model.profile, 'realistic');
      assert.deepEqual(model.rateLimit, { rps: 5, burst: 10, retryAfter: false });
      assert.deepEqual(model.deleteMs, { min: 2000, max: 5000 });
      const other = (await rawRequest(q.url, 'GET', '/_sim/faults')).json as Json;
      assert.equal(other.profile, 'realistic');
      assert.deepEqual(other.deleteMs, { min: 100, max: 100 });
    } finally {
      p.kill('SIGTERM');
      q.kill('SIGTERM');
      await Promise.all([p.exit, q.exit]);
    }
  });

  test('--seed-demo creates the two demo load balancers with fixed identifiers in state Deployed', async () => {
    const p = await startProcess(['--port', '0', '--quiet', '--seed-demo']);
    try {
      for (const lb of DEMO_LOAD_BALANCERS) {
        const got = (await rawRequest(p.url, 'GET', `/api/LBaaS/v1/loadbalancer.json/${lb.identifier}`)).json as Json;
        assert.equal(got.name, lb.name);
        assert.equal(got.ip_address, lb.ip_address);
        assert.equal((got.state as Json).title, 'Deployed');
      }
    } finally {
      p.kill('SIGTERM');
      await p.exit;
    }
  });

  for (const [args, env, flag] of [
    [['--port', 'abc'], {}, '--port'],
    [['--port', '70000'], {}, '--port'],
    [[], { LBAAS_SIM_PORT: 'x' }, 'LBAAS_SIM_PORT'],
    [['--deploy-ms', '900-100'], {}, '--deploy-ms'],
    [['--delete-ms', 'soon'], {}, '--delete-ms'],
    [['--seed', '1.5'], {}, '--seed'],
    [['--profile', 'harsh'], {}, '--profile'],
    [[], { LBAAS_SIM_PROFILE: 'kind' }, 'LBAAS_SIM_PROFILE'],
    [['--no-such-flag'], {}, '--no-such-flag'],
  ] as const) {
    test(`a bad flag (${args.join(' ') || JSON.stringify(env)}) exits with code 2 and names ${flag}`, async () => {
      const r = await runToExit([...args], env);
      assert.equal(r.code, 2, r.stderr);
      assert.ok(r.stderr.includes(flag), r.stderr);
      assert.equal(r.stdout, '');
    });
  }
});
