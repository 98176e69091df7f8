/**
 * Finds or installs Temporal's time-skipping test server (the Java one, `io.temporal:temporal-test-server`, pinned to
 * TEST_SERVER_VERSION) for the fast workflow tests (test/fast; README.md, "Fast workflow tests").
 *
 * The SDK's `TestWorkflowEnvironment.createTimeSkipping` downloads a native build of this server from GitHub, which a
 * machine that reaches only package registries cannot do. The same server is published on Maven Central as a jar:
 * Maven fetches it with its runtime dependencies into the user cache, and a small launcher script there runs it as
 * `<launcher> <port> [--enable-time-skipping]`, the arguments the SDK passes to a test server executable.
 *
 * Order: LBAAS_TEST_SERVER_PATH (any executable taking those arguments, such as the native build), the user cache,
 * then Maven into the user cache. Installs take a lock file there (dev/install-lock.ts), so test runs started at once
 * install once and never see half a library directory.
 */
import { execFile, spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { INSTALL_DIR_PREFIX, isExecutable } from './go-install';
import { withInstallLock } from './install-lock';
import { cacheBase } from './temporal-path';

const execFileAsync = promisify(execFile);

/** The newest temporal-test-server on Maven Central that this was tried with. */
export const TEST_SERVER_VERSION = '1.32.1';
const ARTIFACT = { groupId: 'io.temporal', artifactId: 'temporal-test-server' };
/** The server logs through SLF4J; without a binding SLF4J prints a warning into every test's output. */
const SLF4J_NOP = { groupId: 'org.slf4j', artifactId: 'slf4j-nop', version: '1.7.36' };
/** Pinned, so that the same Maven resolves the same way on every machine. */
const DEPENDENCY_PLUGIN_VERSION = '3.6.1';
const MAIN_CLASS = 'io.temporal.testserver.TestServer';
const LAUNCHER = 'temporal-test-server';

export interface TestServerOptions {
  env?: NodeJS.ProcessEnv;
  /** Progress lines for people. */
  progress?: (line: string) => void;
}

export class TestServerNotFoundError extends Error {
  constructor(
    readonly tried: string[],
    fix: string,
  ) {
    super(`could not find or install Temporal's time-skipping test server ${ARTIFACT.groupId}:${ARTIFACT.artifactId}:${TEST_SERVER_VERSION}. Tried:\n${tried.map((t) => `  - ${t}`).join('\n')}\nFix: ${fix}`);
    this.name = 'TestServerNotFoundError';
  }
}

/** The user cache directory of the pinned test server. */
export function testServerCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(cacheBase(env), 'temporal-test-server', `v${TEST_SERVER_VERSION}`);
}

/** The jar whose presence, with the launcher, says an install finished. */
const serverJar = `${ARTIFACT.artifactId}-${TEST_SERVER_VERSION}.jar`;

/**
 * Returns the path of an executable that starts the test server on the port given as its first argument, installing
 * it into the user cache when needed. Throws TestServerNotFoundError naming every step tried and the fix.
 */
export async function ensureTestServer(opts: TestServerOptions = {}): Promise<string> {
  const env = opts.env ?? process.env;
  const progress = opts.progress ?? (() => {});
  const explicit = env.LBAAS_TEST_SERVER_PATH;
  if (explicit) {
    if (await isExecutable(explicit)) return explicit;
    throw new TestServerNotFoundError([`LBAAS_TEST_SERVER_PATH=${explicit}: not an executable file`], 'point LBAAS_TEST_SERVER_PATH at the test server executable, or unset it.');
  }
  const tried = ['LBAAS_TEST_SERVER_PATH: not set'];
  const dir = testServerCacheDir(env);
  const launcher = path.join(dir, LAUNCHER);
  if (await installed(dir)) {
    await requireJava(env, [...tried, `${launcher} (user cache): present`]);
    return launcher;
  }
  tried.push(`${launcher} (user cache): not present`);
  await requireJava(env, tried);
  await mkdir(dir, { recursive: true });
  const onWait = (holder: string) => progress(`waiting for another install of the time-skipping test server into ${dir} (${holder})`);
  return withInstallLock(
    path.join(dir, '.install.lock'),
    async () => {
      if (await installed(dir)) return launcher;
      for (const name of await readdir(dir)) {
        if (name.startsWith(INSTALL_DIR_PREFIX)) await rm(path.join(dir, name), { recursive: true, force: true });
      }
      const mvn = await mavenVersion(env);
      if (mvn === null) {
        throw new TestServerNotFoundError([...tried, 'mvn on PATH: none found'], 'install Maven (Debian: apt-get install maven), or set LBAAS_TEST_SERVER_PATH to a test server executable.');
      }
      const tmp = await mkdtemp(path.join(dir, INSTALL_DIR_PREFIX));
      try {
        progress(`fetching ${ARTIFACT.groupId}:${ARTIFACT.artifactId}:${TEST_SERVER_VERSION} and its dependencies (about 40 jars, 35 MB) with Maven ${mvn} into ${dir}: up to a few minutes the first time`);
        await fetchJars(tmp, env, progress).catch((err: Error) => {
          throw new TestServerNotFoundError([...tried, `mvn dependency:copy-dependencies: ${err.message}`], 'check that Maven reaches Maven Central (its settings.xml and proxy), or set LBAAS_TEST_SERVER_PATH to a test server executable.');
        });
        await writeFile(path.join(tmp, LAUNCHER), launcherScript(), { mode: 0o755 });
        await chmod(path.join(tmp, LAUNCHER), 0o755);
        // The libraries first, the launcher last: a launcher in the cache means its libraries are complete.
        await rm(path.join(dir, 'lib'), { recursive: true, force: true });
        await rename(path.join(tmp, 'lib'), path.join(dir, 'lib'));
        await rename(path.join(tmp, LAUNCHER), launcher);
      } finally {
        await rm(tmp, { recursive: true, force: true });
      }
      progress(`installed the time-skipping test server ${TEST_SERVER_VERSION} into ${dir}`);
      return launcher;
    },
    { onWait },
  );
}

async function installed(dir: string): Promise<boolean> {
  if (!(await isExecutable(path.join(dir, LAUNCHER)))) return false;
  try {
    return (await stat(path.join(dir, 'lib', serverJar))).isFile();
  } catch {
    return false;
  }
}

/** The java the launcher runs: $JAVA_HOME/bin/java, else the first on PATH (the launcher does the same). */
async function requireJava(env: NodeJS.ProcessEnv, tried: string[]): Promise<void> {
  const java = env.JAVA_HOME ? path.join(env.JAVA_HOME, 'bin', 'java') : 'java';
  try {
    await execFileAsync(java, ['-version'], { env, timeout: 30_000 });
  } catch (err) {
    throw new TestServerNotFoundError(
      [...tried, `${java} -version: ${(err as Error).message.split('\n')[0]}`],
      'the test server runs on Java 8 or later: install a JRE (Debian: apt-get install default-jre-headless) or set JAVA_HOME.',
    );
  }
}

async function mavenVersion(env: NodeJS.ProcessEnv): Promise<string | null> {
  try {
    const { stdout } = await execFileAsync('mvn', ['-v', '-B'], { env, timeout: 60_000 });
    return /Apache Maven (\S+)/.exec(stdout)?.[1] ?? 'unknown version';
  } catch {
    return null;
  }
}

function pom(): string {
  const dep = (d: { groupId: string; artifactId: string; version: string }) =>
    `    <dependency><groupId>${d.groupId}</groupId><artifactId>${d.artifactId}</artifactId><version>${d.version}</version></dependency>`;
  return [
    '<project xmlns="http://maven.apache.org/POM/4.0.0">',
    '  <modelVersion>4.0.0</modelVersion>',
    '  <groupId>lbaas-orchestrator.local</groupId>',
    '  <artifactId>temporal-test-server-deps</artifactId>',
    '  <version>1</version>',
    '  <dependencies>',
    dep({ ...ARTIFACT, version: TEST_SERVER_VERSION }),
    dep(SLF4J_NOP),
    '  </dependencies>',
    `  <build><plugins><plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-dependency-plugin</artifactId><version>${DEPENDENCY_PLUGIN_VERSION}</version></plugin></plugins></build>`,
    '</project>',
    '',
  ].join('\n');
}

/** `mvn dependency:copy-dependencies` of a generated pom into `<tmp>/lib`; a progress line every 30 s while it runs. */
async function fetchJars(tmp: string, env: NodeJS.ProcessEnv, progress: (line: string) => void): Promise<void> {
  await writeFile(path.join(tmp, 'pom.xml'), pom());
  const args = ['-B', '-Dstyle.color=never', '-f', path.join(tmp, 'pom.xml'), 'dependency:copy-dependencies', '-DincludeScope=runtime', `-DoutputDirectory=${path.join(tmp, 'lib')}`];
  const started = Date.now();
  const tail: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const child = spawn('mvn', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (chunk: Buffer) => {
      tail.push(...chunk.toString('utf8').split('\n').filter((l) => l.trim() !== ''));
      tail.splice(0, Math.max(0, tail.length - 15));
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const ticker = setInterval(() => progress(`still fetching with Maven (${Math.round((Date.now() - started) / 1000)} s)`), 30_000);
    child.on('error', (err) => {
      clearInterval(ticker);
      reject(err);
    });
    child.on('exit', (code) => {
      clearInterval(ticker);
      if (code === 0) resolve();
      else reject(new Error(`exit code ${code}; its last lines:\n${tail.map((l) => `      ${l}`).join('\n')}`));
    });
  });
  if (!(await readdir(path.join(tmp, 'lib'))).includes(serverJar)) throw new Error(`finished, but ${serverJar} is not among the jars it copied`);
}

/**
 * The launcher. The JVM flags make start-up cheaper (several test files start a server each on a 2-core machine):
 * the client compiler only (tests are short), the serial collector (fewer threads) and a bounded heap.
 */
function launcherScript(): string {
  return [
    '#!/bin/sh',
    `# Temporal's time-skipping test server ${ARTIFACT.groupId}:${ARTIFACT.artifactId}:${TEST_SERVER_VERSION}, installed by lbaas-orchestrator (dev/test-server.ts).`,
    '# Usage: temporal-test-server <port> [--enable-time-skipping]',
    'dir=$(cd "$(dirname "$0")" && pwd)',
    'java=java',
    'if [ -n "$JAVA_HOME" ]; then java="$JAVA_HOME/bin/java"; fi',
    `exec "$java" -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx512m -cp "$dir/lib/*" ${MAIN_CLASS} "$@"`,
    '',
  ].join('\n');
}
