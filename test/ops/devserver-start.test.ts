/**
 * dev/devserver.ts: a dev server that exits during start-up (a Go panic, for example a port taken between our check
 * and its bind) is started again on new ports when the ports are ours to choose, and the error of one that keeps
 * exiting names the panic, not only the end of its goroutine dump. With a frontend port the caller chose it is started
 * again only when another of its ports was taken. The Temporal server is wrapped by a script that
 * panics on its first runs and then runs the real server.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { DEV_SERVER_START_ATTEMPTS, DevServerExitedError, freePort, startDevServer, takenOtherPort } from '../../dev/devserver';
import { ensureTemporalServer } from '../../dev/temporal-server';

const dir = mkdtempSync(path.join(os.tmpdir(), 'lbaas-devserver-start-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A server that panics (as it did in a CI run) on its first `failures` runs, then is the real one. */
async function flakyCli(failures: number): Promise<{ cli: string; runs: () => number }> {
  const { server: real } = await ensureTemporalServer({ which: ['server'] });
  const count = path.join(dir, `runs-${failures}`);
  writeFileSync(count, '');
  const cli = path.join(dir, `temporal-failing-${failures}`);
  const goroutines = Array.from({ length: 200 }, (_, i) => `\tgo.temporal.io/server/temporal.frame${i}(...)`).join('\n');
  writeFileSync(
    cli,
    `#!/bin/sh\necho run >> '${count}'\nif [ "$(wc -l < '${count}')" -le ${failures} ]; then\n  echo 'panic: listen tcp 127.0.0.1:7233: bind: address already in use' >&2\n  echo '' >&2\n  echo 'goroutine 1 [running]:' >&2\n  cat >&2 <<'EOF'\n${goroutines}\nEOF\n  exit 2\nfi\nexec '${real}' "$@"\n`,
  );
  chmodSync(cli, 0o755);
  return { cli, runs: () => readFileSync(count, 'utf8').split('\n').filter(Boolean).length };
}

test('a dev server that panics during start-up is started again on other ports, and answers', async () => {
  const { cli, runs } = await flakyCli(DEV_SERVER_START_ATTEMPTS - 1);
  const lines: string[] = [];
  const server = await startDevServer({ serverPath: cli, progress: (l) => lines.push(l) });
  try {
    assert.equal(runs(), DEV_SERVER_START_ATTEMPTS);
    assert.equal(lines.filter((l) => /exited during start-up .*starting it again on other ports/.test(l)).length, DEV_SERVER_START_ATTEMPTS - 1);
    assert.match(server.address, /^127\.0\.0\.1:\d+$/);
  } finally {
    await server.stop();
  }
});

test('one that keeps panicking fails after the attempts, naming the panic; with a port the caller chose, at the first', async () => {
  const always = await flakyCli(100);
  await assert.rejects(startDevServer({ serverPath: always.cli }), (err: Error) => {
    assert.ok(err instanceof DevServerExitedError);
    assert.match(err.message, /panic: listen tcp 127\.0\.0\.1:7233: bind: address already in use/);
    return true;
  });
  assert.equal(always.runs(), DEV_SERVER_START_ATTEMPTS);

  const fixed = await flakyCli(100);
  await assert.rejects(startDevServer({ serverPath: fixed.cli, port: 7233 }), DevServerExitedError);
  assert.equal(fixed.runs(), 1);
});

test('with a frontend port the caller chose, a bind failure on another of its ports (seen in CI: the worker service) is started again on the same frontend port', async () => {
  const { cli, runs } = await flakyCli(1);
  const port = await freePort();
  assert.notEqual(port, 7233);
  const lines: string[] = [];
  const server = await startDevServer({ serverPath: cli, port, progress: (l) => lines.push(l) });
  try {
    assert.equal(runs(), 2);
    assert.equal(lines.filter((l) => /exited during start-up .*starting it again on other ports/.test(l)).length, 1);
    assert.equal(server.address, `127.0.0.1:${port}`);
  } finally {
    await server.stop();
  }
});

test('takenOtherPort reads the port of a failed bind from the panic text and from the JSON log line', () => {
  const json = '{"level":"fatal","msg":"Failed to start gRPC listener","error":"listen tcp 127.0.0.1:41315: bind: address already in use","service":"worker"}';
  assert.equal(takenOtherPort(json, 7233), true);
  assert.equal(takenOtherPort(json, 41315), false);
  assert.equal(takenOtherPort('panic: listen tcp 127.0.0.1:7233: bind: address already in use', 7233), false);
  assert.equal(takenOtherPort('panic: something else', 7233), false);
});
