/**
 * `lbaas dev --cluster` as a person runs it: the real CLI as a process, until the example has converged on the
 * cluster; then Ctrl-C (SIGINT to the whole process group, as a terminal sends it) must stop every process it started:
 * the five Temporal server processes and PostgreSQL, whose pids it printed.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

/** bin/lbaas.js of this checkout (this file runs from dist/test/cluster). */
const LBAAS_BIN = path.resolve(__dirname, '..', '..', '..', 'bin', 'lbaas.js');
const REPO = path.resolve(__dirname, '..', '..', '..');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test('lbaas dev --cluster converges the example on the cluster, and Ctrl-C leaves no process behind', { timeout: 1_200_000 }, async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-dev-cluster-'));
  // As root, PostgreSQL runs as the postgres user, which must pass through this directory (mkdtemp makes it 0700).
  await chmod(dir, 0o711);
  let child: ChildProcess | undefined;
  try {
    const running = spawn(process.execPath, [LBAAS_BIN, 'dev', '--cluster', '--state-dir', path.join(dir, 'cluster'), '--sim-port', '0'], {
      cwd: REPO,
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, so that the SIGINT below reaches every process in it, as a terminal's Ctrl-C does.
      detached: true,
    });
    let out = '';
    let err = '';
    child = running;
    running.stdout.on('data', (d: Buffer) => (out += d.toString()));
    running.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => running.once('exit', (code) => resolve(code)));
    const deadline = Date.now() + 900_000;
    while (!out.includes('try: ')) {
      if (running.exitCode !== null) assert.fail(`lbaas dev --cluster exited with ${running.exitCode}:\n${err.slice(-3000)}`);
      if (Date.now() > deadline) assert.fail(`no "try:" line within 15 minutes:\n${out}\n${err.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    t.diagnostic(out.trim());
    assert.match(out, /^converged on 2 load balancers in [\d.]+ s$/m);
    const pids = [...out.matchAll(/^ {2}(\S+)\s+pid (\d+),/gm)].map((m) => ({ name: m[1] as string, pid: Number(m[2]) }));
    const names = ['history-1', 'history-2', 'matching', 'frontend', 'worker', 'postgresql'];
    const notRunning = names.filter((n) => !pids.some((p) => p.name === n));
    // A process that was not running when the list was printed: its log says why.
    const logs = await Promise.all(notRunning.map(async (n) => `--- ${n}.log\n${(await readFile(path.join(dir, 'cluster', 'logs', `${n === 'postgresql' ? 'postgres' : n}.log`), 'utf8').catch((e: Error) => e.message)).slice(-3000)}`));
    assert.deepEqual(pids.map((p) => p.name), names, `not running when listed: ${notRunning.join(', ')}\n${err.slice(-2000)}\n${logs.join('\n')}`);
    for (const p of pids) assert.ok(alive(p.pid), `${p.name} (pid ${p.pid}) runs`);

    process.kill(-(running.pid as number), 'SIGINT');
    const code = await exited;
    assert.equal(code, 0, err.slice(-2000));
    // PostgreSQL's backends and a server draining its shards may take a moment after their parent's exit.
    const gone = Date.now() + 20_000;
    while (pids.some((p) => alive(p.pid)) && Date.now() < gone) await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(pids.filter((p) => alive(p.pid)).map((p) => `${p.name} (pid ${p.pid})`), [], 'every process it started has exited');
  } finally {
    // A failed assertion before the Ctrl-C above must not leave the cluster running: the same Ctrl-C, then SIGKILL.
    if (child?.pid && child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child?.once('exit', r));
      process.kill(-child.pid, 'SIGINT');
      const timer = setTimeout(() => child?.pid && process.kill(-child.pid, 'SIGKILL'), 60_000);
      await gone;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  }
});
