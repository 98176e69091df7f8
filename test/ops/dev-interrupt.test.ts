/**
 * Ctrl-C stops `lbaas dev` at any moment of its start-up, not only once it prints "Ctrl-C stops everything": the
 * process (bin/lbaas.js, relaunched by cli/relaunch.ts where node needs it) exits within seconds, says so, and leaves
 * none of the processes it started behind (the Temporal server, its Web UI server).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { devArgs, startLongRun } from '../helpers/cli';
import { until } from '../helpers/workflows';

const children = (pid: number): number[] =>
  existsSync(`/proc/${pid}/task/${pid}/children`) ? readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number) : [];
const descendants = (pid: number): number[] => children(pid).flatMap((c) => [c, ...descendants(c)]);
const command = (pid: number): string => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
};
/** Whether the process still runs (a zombie has ended; its parent just has not reaped it yet). */
const alive = (pid: number): boolean => {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')[0] !== 'Z';
  } catch {
    return false;
  }
};

/** Starts `lbaas dev`, sends SIGINT once `ready` says so, and checks exit, message and that nothing it started runs. */
async function interruptDev(t: TestContext, ready: (out: string) => boolean): Promise<void> {
  const cwd = await mkdtemp(path.join(os.tmpdir(), 'lbaas-dev-interrupt-'));
  t.after(() => rm(cwd, { recursive: true, force: true }));
  const dev = startLongRun(t, await devArgs(), { cwd });
  const pid = dev.proc.pid!;
  const seen = new Set<number>();
  const watch = setInterval(() => descendants(pid).forEach((p) => seen.add(p)), 20);
  t.after(() => {
    clearInterval(watch);
    for (const p of seen) if (alive(p)) process.kill(p, 'SIGKILL');
  });

  await until('lbaas dev to reach the moment to interrupt', async () => {
    if (dev.proc.exitCode !== null) assert.fail(dev.out());
    return ready(dev.out()) && [...seen].some((p) => alive(p) && /temporal-server/.test(command(p)));
  }, 120_000, 20);
  assert.doesNotMatch(dev.out(), /Ctrl-C stops everything/, 'still starting when interrupted');
  const started = [...seen].filter(alive).map((p) => `${p} ${command(p)}`);

  dev.proc.kill('SIGINT');
  const sent = Date.now();
  const code = await Promise.race([dev.exited, new Promise<'running'>((r) => setTimeout(() => r('running'), 15_000).unref())]);
  assert.equal(code, 0, `exit code 15 s after SIGINT (started: ${started.join('; ')}):\n${dev.out()}`);
  clearInterval(watch);
  assert.match(dev.out(), /^SIGINT during start-up: stopping what has started …$/m, dev.out());
  await until('the processes lbaas dev started to end', async () => [...seen].every((p) => !alive(p)), 2_000, 50).catch(() => undefined);
  assert.deepEqual([...seen].filter(alive).map((p) => `${p} ${command(p)}`), [], `left behind ${Date.now() - sent} ms after SIGINT`);
}

const linuxOnly = { skip: process.platform !== 'linux' && 'reads /proc' };

test('Ctrl-C while lbaas dev starts the Temporal dev server: it exits 0 within seconds, says it stopped during start-up, and no process it started remains', linuxOnly, async (t) => {
  await interruptDev(t, (out) => /starting the Temporal dev server/.test(out) && !/Temporal Web UI/.test(out));
});

test('Ctrl-C while lbaas dev waits for the example service to converge: the same (the wait is cancelled before the worker closes its connection)', linuxOnly, async (t) => {
  await interruptDev(t, (out) => /^applied .*waiting for it to converge/m.test(out) && !/^converged on/m.test(out));
});
