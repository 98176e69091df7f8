/**
 * Installs into the user cache under a lock: runs started at once install once, nobody ever sees an unchecked binary
 * in the cache, and a lock whose holder died is broken. A stand-in `go` that writes a 0.0.0-DEV binary first and the
 * release one 400 ms later plays a slow, non-atomic `go install` (the real one takes minutes).
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { withInstallLock } from '../../dev/install-lock';
import { cacheDir, cliVersion, ensureTemporalCli, TemporalCliNotFoundError } from '../../dev/temporal-path';

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-tlock-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * A directory holding a stand-in `go` whose `install` appends a line to `runs` and writes $GOBIN/temporal: first one
 * reporting 0.0.0-DEV, then (unless `devOnly`) after 400 ms one reporting the version its -ldflags stamp.
 */
async function fakeGo(name: string, devOnly = false): Promise<{ bin: string; runs: string }> {
  const bin = path.join(dir, name);
  await mkdir(bin, { recursive: true });
  const runs = path.join(bin, 'runs');
  // `version` is a shell word: printf substitutes it.
  const cli = (version: string) => `printf '#!/bin/sh\\necho "temporal version %s (Server 1.29.1, UI 2.42.1)"\\n' ${version} > "$GOBIN/temporal"`;
  await writeFile(
    path.join(bin, 'go'),
    [
      '#!/bin/sh',
      'case "$1" in',
      '  env) echo go1.25.4 ;;',
      '  install)',
      `    echo run >> '${runs}'`,
      `    ${cli('0.0.0-DEV')}`,
      '    /bin/chmod 755 "$GOBIN/temporal"',
      devOnly ? '' : `    /bin/sleep 0.4\n    ${cli('"${3#*Version=}"')}`,
      '    ;;',
      'esac',
      '',
    ].join('\n'),
  );
  await chmod(path.join(bin, 'go'), 0o755);
  return { bin, runs };
}

async function runsOf(file: string): Promise<number> {
  return (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean).length;
}

const envWith = (goBin: string): NodeJS.ProcessEnv => ({ PATH: goBin, LBAAS_CACHE_DIR: path.join(dir, `cache-${Math.random()}`) });

test('two installs at once: one go install, both end with the checked 1.5.1 binary, and the cache never holds another', async () => {
  const go = await fakeGo('go-slow');
  const env = envWith(go.bin);
  const cached = path.join(cacheDir(env), 'temporal');
  const progress: string[] = [];
  let done = false;
  // What the cache holds while both runs work, looked at every 20 ms.
  const seen = new Set<string>();
  const watch = (async () => {
    while (!done) {
      seen.add((await cliVersion(cached)) ?? 'absent');
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  let both: string[];
  try {
    both = await Promise.all([0, 1].map(() => ensureTemporalCli({ env, skipDownload: true, progress: (l) => progress.push(l) })));
  } finally {
    done = true;
    await watch;
  }
  assert.deepEqual(both, [cached, cached]);
  assert.equal(await cliVersion(cached), '1.5.1');
  assert.equal(await runsOf(go.runs), 1);
  assert.equal(progress.filter((l) => l.startsWith(`waiting for another install of the Temporal CLI into ${cacheDir(env)} (pid ${process.pid} on `)).length, 1);
  assert.deepEqual([...seen].filter((v) => v !== 'absent' && v !== '1.5.1'), []);
  assert.deepEqual(await readdir(cacheDir(env)), ['temporal']);
});

test('a go install whose binary does not report 1.5.1 fails naming the version, and puts nothing into the cache', async () => {
  const go = await fakeGo('go-dev', true);
  const env = envWith(go.bin);
  await assert.rejects(ensureTemporalCli({ env, skipDownload: true }), (err: Error) => {
    assert.ok(err instanceof TemporalCliNotFoundError);
    assert.equal(err.tried.at(-1), 'go install github.com/temporalio/cli/cmd/temporal@v1.5.1: finished, but the binary reports version 0.0.0-DEV, not 1.5.1');
    return true;
  });
  assert.deepEqual(await readdir(cacheDir(env)), []);
});

test('a lock left by a process that no longer exists is broken, and a crashed install directory removed', async () => {
  const go = await fakeGo('go-stale-pid');
  const env = envWith(go.bin);
  const cache = cacheDir(env);
  const gone = spawn(process.execPath, ['-e', '']);
  const pid = gone.pid!;
  await new Promise((r) => gone.on('exit', r));
  await mkdir(path.join(cache, '.install-crashed'), { recursive: true });
  await writeFile(path.join(cache, '.install-crashed', 'temporal'), 'half');
  await writeFile(path.join(cache, '.install.lock'), JSON.stringify({ pid, host: os.hostname(), token: 'crashed' }));
  assert.equal(await ensureTemporalCli({ env, skipDownload: true }), path.join(cache, 'temporal'));
  assert.deepEqual(await readdir(cache), ['temporal']);
});

test('a lock nobody has touched for longer than it may be held is broken even if its pid exists', async () => {
  const go = await fakeGo('go-stale-age');
  const env = envWith(go.bin);
  const cache = cacheDir(env);
  await mkdir(cache, { recursive: true });
  const lock = path.join(cache, '.install.lock');
  // The pid is alive (this process), as when a crashed holder's pid has been reused; only the age tells.
  await writeFile(lock, JSON.stringify({ pid: process.pid, host: os.hostname(), token: 'old' }));
  const longAgo = new Date(Date.now() - 120_000);
  await utimes(lock, longAgo, longAgo);
  assert.equal(await ensureTemporalCli({ env, skipDownload: true }), path.join(cache, 'temporal'));
  assert.equal(await runsOf(go.runs), 1);
});

test('a holder killed with SIGKILL while holding the lock: the waiting process takes it over', async () => {
  const lock = path.join(dir, 'killed.lock');
  const lockModule = path.join(__dirname, '..', '..', 'dev', 'install-lock.js');
  const holder = spawn(process.execPath, ['-e', `require(${JSON.stringify(lockModule)}).withInstallLock(${JSON.stringify(lock)}, () => { console.log('held'); setInterval(() => {}, 1000); return new Promise(() => {}); })`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
  let waited = '';
  let ran = false;
  const waiter = withInstallLock(
    lock,
    async () => {
      ran = true;
    },
    { onWait: (h) => (waited = h), pollMs: 20 },
  );
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(ran, false, 'the waiter ran while the holder was alive');
  assert.equal(waited, `pid ${holder.pid} on ${os.hostname()}`);
  holder.kill('SIGKILL');
  await waiter;
  assert.equal(ran, true);
  await assert.rejects(readFile(lock), { code: 'ENOENT' });
});

test('lbaas temporal-path run twice at once (as processes) installs once', async () => {
  const go = await fakeGo('go-processes');
  const env = { ...envWith(go.bin), PATH: go.bin, HOME: dir };
  const lbaas = path.join(__dirname, '..', '..', '..', 'bin', 'lbaas.js');
  // A release host that refuses connections: the download fails at once and both fall through to go install.
  const run = () => promisify(execFile)(process.execPath, [lbaas, 'temporal-path'], { env: { ...env, LBAAS_TEMPORAL_RELEASE_BASE: 'http://127.0.0.1:9' } });
  const [a, b] = await Promise.all([run(), run()]);
  const cached = path.join(cacheDir(env), 'temporal');
  assert.deepEqual([a.stdout, b.stdout], [`${cached}\n`, `${cached}\n`]);
  assert.equal(await runsOf(go.runs), 1);
});
