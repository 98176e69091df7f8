/**
 * test/helpers/stack.ts: a test file that starts its own dev server and then dies without its `after` hooks (a worker
 * crash aborts the process) leaves no dev server running (test/helpers/reaper.ts). A file that ends the ordinary way
 * stops the server itself, and the watcher goes with it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const STACK = path.resolve(__dirname, '../helpers/stack.js');

/** Running: a zombie (ended, not yet reaped by whoever adopted it) is not. */
const alive = (pid: number) => {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

async function until(what: string, ok: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs a process that starts the file's own dev server, prints the pids of it and of its watcher, then `end`s. */
async function runFile(end: string): Promise<{ server: number; watcher: number; signal: string | null }> {
  const script = `
    const { temporalServer, stopTemporalServer } = require(${JSON.stringify(STACK)});
    (async () => {
      const s = await temporalServer();
      console.log(JSON.stringify({ server: s.own.process.pid, watcher: s.reaper ? s.reaper.process.pid : 0 }));
      ${end}
    })();
  `;
  // Not a test file's path: the helper starts a server of its own, as a file run alone does.
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LBAAS_TEST_TEMPORAL_ADDRESS: '' } });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  // process.abort() prints a stack trace; shown only when the pids are missing.
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const signal = await new Promise<string | null>((resolve) => child.on('exit', (_code, sig) => resolve(sig)));
  const line = out.split('\n').find((l) => l.startsWith('{'));
  assert.ok(line, `the process printed no pids: ${out}\n${err}`);
  return { ...(JSON.parse(line) as { server: number; watcher: number }), signal };
}

test('a test process that aborts after starting its own dev server leaves no dev server running', { timeout: 180_000 }, async () => {
  const r = await runFile('process.abort();');
  assert.equal(r.signal, 'SIGABRT');
  await until(`dev server ${r.server} stopped after its test process aborted`, () => !alive(r.server), 15_000);
  await until(`watcher ${r.watcher} exited`, () => !alive(r.watcher), 5_000);
});

test('a test process that stops its dev server the ordinary way ends the watcher too', { timeout: 180_000 }, async () => {
  const r = await runFile('await stopTemporalServer(); process.exitCode = 0;');
  assert.equal(r.signal, null);
  assert.equal(alive(r.server), false, 'the dev server was stopped by stopTemporalServer');
  await until(`watcher ${r.watcher} exited`, () => !alive(r.watcher), 5_000);
});
