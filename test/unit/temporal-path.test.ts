import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { cacheDir, ensureTemporalCli, TemporalCliNotFoundError } from '../../dev/temporal-path';

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-tpath-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A stand-in `temporal` that reports the given version, like the real CLI's `--version`. */
async function fakeCli(where: string, version: string): Promise<string> {
  await mkdir(where, { recursive: true });
  const file = path.join(where, 'temporal');
  await writeFile(file, `#!/bin/sh\necho "temporal version ${version} (Server 1.29.1, UI 2.42.1)"\n`);
  await chmod(file, 0o755);
  return file;
}

/** An environment with nothing to find: empty PATH (so no go either), a private cache. */
const bare = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({ PATH: path.join(dir, 'empty-path'), LBAAS_CACHE_DIR: path.join(dir, `cache-${Math.random()}`), ...extra });

describe('ensureTemporalCli looks in the order of docs/spec.md#temporal-cli', () => {
  test('TEMPORAL_CLI_PATH wins over everything else', async () => {
    const explicit = await fakeCli(path.join(dir, 'explicit'), '1.5.1');
    const onPath = await fakeCli(path.join(dir, 'onpath-a'), '1.5.1');
    assert.equal(await ensureTemporalCli({ env: bare({ TEMPORAL_CLI_PATH: explicit, PATH: path.dirname(onPath) }), skipDownload: true }), explicit);
  });

  test('a TEMPORAL_CLI_PATH that is not an executable is an error naming it, not a silent fallback', async () => {
    const missing = path.join(dir, 'nope', 'temporal');
    await assert.rejects(ensureTemporalCli({ env: bare({ TEMPORAL_CLI_PATH: missing }), skipDownload: true }), (err: Error) => {
      assert.ok(err instanceof TemporalCliNotFoundError);
      assert.match(err.message, new RegExp(`TEMPORAL_CLI_PATH=${missing.replace(/[/.]/g, '\\$&')}: not an executable file`));
      return true;
    });
  });

  test('a temporal on PATH is used only when it reports 1.5.1', async () => {
    const old = await fakeCli(path.join(dir, 'old'), '1.4.0');
    const good = await fakeCli(path.join(dir, 'good'), '1.5.1');
    const env = bare({ PATH: [path.dirname(old), path.dirname(good)].join(path.delimiter) });
    assert.equal(await ensureTemporalCli({ env, skipDownload: true }), good);
  });

  test('the user cache is used when PATH has no 1.5.1', async () => {
    const env = bare();
    const cached = await fakeCli(cacheDir(env), '1.5.1');
    assert.equal(await ensureTemporalCli({ env, skipDownload: true }), cached);
  });

  test('with nothing found and no go, the error lists every step tried and how to fix it', async () => {
    const old = await fakeCli(path.join(dir, 'old2'), '1.4.0');
    const env = bare({ PATH: path.dirname(old) });
    await assert.rejects(ensureTemporalCli({ env, skipDownload: true }), (err: Error) => {
      assert.ok(err instanceof TemporalCliNotFoundError);
      assert.deepEqual(err.tried, [
        'TEMPORAL_CLI_PATH: not set',
        `${old} on PATH: reports version 1.4.0, need 1.5.1`,
        `${path.join(cacheDir(env), 'temporal')} (user cache): not present`,
        'go install github.com/temporalio/cli/cmd/temporal@v1.5.1: `go` is not on PATH',
      ]);
      assert.match(err.message, /Fix: install Go >= 1\.25 and run `go install github\.com\/temporalio\/cli\/cmd\/temporal@v1\.5\.1`/);
      return true;
    });
  });
});

test('lbaas temporal-path prints the path on stdout and exits 0 (as a process)', async () => {
  const explicit = await fakeCli(path.join(dir, 'cli'), '1.5.1');
  const { stdout } = await promisify(execFile)(process.execPath, [path.join(__dirname, '..', '..', '..', 'bin', 'lbaas.js'), 'temporal-path'], {
    env: { ...process.env, TEMPORAL_CLI_PATH: explicit },
  });
  assert.equal(stdout, `${explicit}\n`);
});

describe('the release download (redirects followed, checksum verified, binary extracted)', () => {
  const arch = ({ x64: 'amd64', arm64: 'arm64' } as Record<string, string>)[process.arch] ?? process.arch;
  const archive = `temporal_cli_1.5.1_${process.platform}_${arch}.tar.gz`;
  let server: http.Server;
  let base: string;
  let archiveBytes: Buffer;
  let checksums: string;

  before(async () => {
    // A release archive holding a stand-in `temporal`, like the real one holds the CLI.
    const src = path.join(dir, 'release-src');
    await fakeCli(src, '1.5.1');
    await promisify(execFile)('tar', ['-czf', path.join(dir, archive), '-C', src, 'temporal']);
    archiveBytes = await readFile(path.join(dir, archive));
    checksums = `${createHash('sha256').update(archiveBytes).digest('hex')}  ${archive}\n`;
    server = http.createServer((req, res) => {
      // Like the real release host: the asset URL redirects to where the bytes are.
      if (req.url === `/v1.5.1/${archive}`) return void res.writeHead(302, { location: '/storage/archive' }).end();
      if (req.url === '/v1.5.1/temporal_cli_1.5.1_checksums.txt') return void res.writeHead(302, { location: '/storage/checksums' }).end();
      if (req.url === '/storage/archive') return void res.writeHead(200).end(archiveBytes);
      if (req.url === '/storage/checksums') return void res.writeHead(200).end(checksums);
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  test('installs the binary from the archive into the user cache after following the redirects and checking the checksum', async () => {
    const env = bare();
    const installed = await ensureTemporalCli({ env, releaseBase: base });
    assert.equal(installed, path.join(cacheDir(env), 'temporal'));
    const { stdout } = await promisify(execFile)(installed, ['--version']);
    assert.match(stdout, /^temporal version 1\.5\.1 /);
  });

  test('an archive whose checksum does not match is refused, and the error says so', async () => {
    const good = checksums;
    checksums = `${'0'.repeat(64)}  ${archive}\n`;
    try {
      const env = bare();
      await assert.rejects(ensureTemporalCli({ env, releaseBase: base }), (err: Error) => {
        assert.ok(err instanceof TemporalCliNotFoundError);
        assert.ok(err.tried.includes(`official release archive: checksum mismatch for ${archive}`), err.tried.join('\n'));
        return true;
      });
    } finally {
      checksums = good;
    }
  });
});
