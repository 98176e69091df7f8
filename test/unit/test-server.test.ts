import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { ensureTestServer, TEST_SERVER_VERSION, testServerCacheDir, TestServerNotFoundError } from '../../dev/test-server';

const execFileAsync = promisify(execFile);

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-test-server-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function script(where: string, name: string, body: string): Promise<string> {
  await mkdir(where, { recursive: true });
  const file = path.join(where, name);
  await writeFile(file, `#!/bin/sh\n${body}\n`);
  await chmod(file, 0o755);
  return file;
}

/**
 * A PATH with a stand-in `java` (prints its arguments) and, unless `mvn` is null, a stand-in `mvn` that counts its
 * runs and copies a jar of the pinned server into the -DoutputDirectory it is given (or runs `mvn` as given).
 */
async function bin(name: string, mvn: string | null = 'copy'): Promise<{ env: NodeJS.ProcessEnv; mvnRuns: () => Promise<number> }> {
  const where = path.join(dir, name);
  await script(where, 'java', 'echo "java $*"');
  // The few tools the launcher and the stand-in mvn use, and no real java or mvn.
  for (const tool of ['dirname', 'mkdir']) await symlink(path.join('/usr/bin', tool), path.join(where, tool)).catch(() => symlink(path.join('/bin', tool), path.join(where, tool)));
  const runs = path.join(where, 'mvn-runs');
  if (mvn === 'copy') {
    await script(
      where,
      'mvn',
      [
        'case "$1" in -v) echo "Apache Maven 3.8.7"; exit 0;; esac',
        `echo run >> ${runs}`,
        'for a in "$@"; do case "$a" in -DoutputDirectory=*) out="${a#-DoutputDirectory=}";; esac; done',
        'mkdir -p "$out"',
        `echo jar > "$out/temporal-test-server-${TEST_SERVER_VERSION}.jar"`,
        'echo jar > "$out/grpc-core-1.58.1.jar"',
      ].join('\n'),
    );
  } else if (mvn !== null) {
    await script(where, 'mvn', mvn);
  }
  return {
    env: { PATH: where, LBAAS_CACHE_DIR: path.join(dir, `cache-${name}`) },
    mvnRuns: async () => (await readFile(runs, 'utf8').catch(() => '')).split('\n').filter(Boolean).length,
  };
}

describe('ensureTestServer', () => {
  test('LBAAS_TEST_SERVER_PATH wins when it is an executable; one that is not is an error naming it', async () => {
    const exe = await script(path.join(dir, 'explicit'), 'temporal-test-server', 'exit 0');
    const { env } = await bin('explicit-bin');
    assert.equal(await ensureTestServer({ env: { ...env, LBAAS_TEST_SERVER_PATH: exe } }), exe);
    const missing = path.join(dir, 'nope', 'server');
    await assert.rejects(ensureTestServer({ env: { ...env, LBAAS_TEST_SERVER_PATH: missing } }), (err: Error) => {
      assert.ok(err instanceof TestServerNotFoundError);
      assert.ok(err.message.includes(`LBAAS_TEST_SERVER_PATH=${missing}: not an executable file`), err.message);
      return true;
    });
  });

  test('Maven fetches the jars once into the user cache; the launcher runs the server on the port it is given; a second call finds it', async () => {
    const { env, mvnRuns } = await bin('install');
    const lines: string[] = [];
    const launcher = await ensureTestServer({ env, progress: (l) => lines.push(l) });
    assert.equal(launcher, path.join(testServerCacheDir(env), 'temporal-test-server'));
    assert.equal(await mvnRuns(), 1);
    assert.ok(lines.some((l) => l.startsWith(`fetching io.temporal:temporal-test-server:${TEST_SERVER_VERSION} and its dependencies`)), lines.join('\n'));
    const { stdout } = await execFileAsync(launcher, ['43123'], { env });
    assert.equal(stdout.trim(), `java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx512m -cp ${testServerCacheDir(env)}/lib/* io.temporal.testserver.TestServer 43123`);
    assert.equal(await ensureTestServer({ env }), launcher);
    assert.equal(await mvnRuns(), 1);
  });

  test('without Java the error says to install a JRE; without Maven, to install Maven; nothing is left in the cache', async () => {
    const noJava = await bin('no-java');
    await rm(path.join(dir, 'no-java', 'java'));
    await assert.rejects(ensureTestServer({ env: noJava.env }), (err: Error) => {
      assert.ok(err instanceof TestServerNotFoundError);
      assert.match(err.message, /Fix: the test server runs on Java 8 or later: install a JRE \(Debian: apt-get install default-jre-headless\) or set JAVA_HOME/);
      return true;
    });
    const noMaven = await bin('no-maven', null);
    await assert.rejects(ensureTestServer({ env: noMaven.env }), (err: Error) => {
      assert.ok(err instanceof TestServerNotFoundError);
      assert.match(err.message, /mvn on PATH: none found/);
      assert.match(err.message, /Fix: install Maven \(Debian: apt-get install maven\)/);
      return true;
    });
    assert.equal(await execFileAsync('ls', ['-A', testServerCacheDir(noMaven.env)]).then((r) => r.stdout.trim()), '');
  });

  test('a Maven run that fails is reported with its last lines and leaves nothing in the cache', async () => {
    const failing = await bin('failing', 'case "$1" in -v) echo "Apache Maven 3.8.7"; exit 0;; esac\necho "[ERROR] Could not resolve dependencies: io.temporal:temporal-test-server:jar was not found"\nexit 1');
    await assert.rejects(ensureTestServer({ env: failing.env }), (err: Error) => {
      assert.ok(err instanceof TestServerNotFoundError);
      assert.match(err.message, /mvn dependency:copy-dependencies: exit code 1; its last lines:\n\s+\[ERROR\] Could not resolve dependencies/);
      assert.match(err.message, /Fix: check that Maven reaches Maven Central/);
      return true;
    });
    const cache = testServerCacheDir(failing.env);
    assert.deepEqual((await execFileAsync('ls', ['-A', cache])).stdout.trim(), '');
  });
});
