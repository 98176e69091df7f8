/**
 * dev/devserver.ts: a dev server that exits during start-up (a Go panic, for example a port taken between our check
 * and its bind) is started again on new ports when the ports are ours to choose, and the error of one that keeps
 * exiting names the panic, not only the end of its goroutine dump. With a frontend port the caller chose it is started
 * again only when another of its ports was taken. The Temporal server is wrapped by a script that
 * panics on its first runs and then runs the real server.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { drawPort } from '../../common/ports';
import { DEV_SERVER_START_ATTEMPTS, DevServerExitedError, membershipPortsFile, startDevServer, takenOtherPort } from '../../dev/devserver';
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
  const port = await drawPort(new Set());
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

test('started again on a kept SQLite file, the server takes the previous run\'s membership ports (the rows it left there name this run\'s services); one taken in between is replaced by a free one', async () => {
  const dbFile = path.join(dir, 'kept.db');
  const first = await startDevServer({ dbFile });
  await first.stop();
  assert.deepEqual(JSON.parse(readFileSync(membershipPortsFile(dbFile), 'utf8')), first.membershipPorts);
  assert.equal(new Set(Object.values(first.membershipPorts)).size, 4, 'four distinct ports');

  const again = await startDevServer({ dbFile });
  try {
    assert.deepEqual(again.membershipPorts, first.membershipPorts);
  } finally {
    await again.stop();
  }

  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(first.membershipPorts.history, '127.0.0.1', resolve));
  try {
    const third = await startDevServer({ dbFile });
    try {
      const { history, ...rest } = third.membershipPorts;
      assert.notEqual(history, first.membershipPorts.history, 'the taken port is not reused');
      assert.deepEqual(rest, { frontend: first.membershipPorts.frontend, matching: first.membershipPorts.matching, worker: first.membershipPorts.worker });
      assert.deepEqual(JSON.parse(readFileSync(membershipPortsFile(dbFile), 'utf8')), third.membershipPorts);
    } finally {
      await third.stop();
    }
  } finally {
    blocker.close();
  }
});

test('a server whose services cannot join each other says so in a progress line naming the kept file and the log', async () => {
  const { server: real } = await ensureTemporalServer({ which: ['server'] });
  const cli = path.join(dir, 'temporal-join-failure');
  const warn = '{"level":"warn","msg":"unable to bootstrap ringpop. retrying","error":"join duration of 30.1s exceeded max 30s"}';
  writeFileSync(cli, `#!/bin/sh\necho '${warn}'\nexec '${real}' "$@"\n`);
  chmodSync(cli, 0o755);
  const dbFile = path.join(dir, 'join.db');
  const logFile = path.join(dir, 'join.log');
  const lines: string[] = [];
  const server = await startDevServer({ serverPath: cli, dbFile, logFile, progress: (l) => lines.push(l) });
  await server.stop();
  assert.deepEqual(
    lines.filter((l) => /could not join/.test(l)),
    [
      `the Temporal server's services could not join each other within 30s: ${dbFile} names members that sent a heartbeat less than 20 s ago, which no longer answer (a server on it stopped moments ago, or another one uses it); it tries again every 10 s, up to five times (its log: ${logFile})`,
    ],
  );
});
