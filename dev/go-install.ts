/**
 * What the two installers of pinned Temporal binaries share (dev/temporal-path.ts: the CLI; cluster/install.ts: the
 * bare server and its SQL tool): building with `go install` from the Go module proxy, and putting a binary into a
 * user cache so that the cache only ever holds a complete binary that reported the pinned version.
 */
import { execFile, spawn } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { access, mkdtemp, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Both pinned modules (cli v1.5.1, server v1.29.1) declare `go 1.25` in their go.mod. */
export const MIN_GO = [1, 25] as const;

/** Prefix of the private directories installs build in; only a lock holder makes them, so any found is a crash's. */
export const INSTALL_DIR_PREFIX = '.install-';

export async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The `go` on PATH's version as [major, minor], or null when there is none. */
export async function goVersion(env: NodeJS.ProcessEnv): Promise<[number, number] | null> {
  try {
    const { stdout } = await execFileAsync('go', ['env', 'GOVERSION'], { env, timeout: 30_000 });
    const m = /go(\d+)\.(\d+)/.exec(stdout);
    return m ? [Number(m[1]), Number(m[2])] : null;
  } catch {
    return null;
  }
}

export interface GoInstall {
  /** `<package>@<version>`. */
  module: string;
  /** Where the binary goes (GOBIN). */
  dir: string;
  /** For the progress lines: what is being built. */
  what: string;
  env: NodeJS.ProcessEnv;
  progress: (line: string) => void;
  /** Extra flags before the module (e.g. `-ldflags` stamping the version a release build would carry). */
  flags?: string[];
  /** What the first progress line promises ("a few minutes the first time"). */
  expect: string;
}

/**
 * `go install` into `dir`, after checking that a new enough `go` is there. Progress every 30 s while go compiles in
 * silence; a failure names go's exit code and the last lines it printed.
 */
export async function goInstall(o: GoInstall): Promise<void> {
  const gv = await goVersion(o.env);
  if (!gv) throw new Error('`go` is not on PATH');
  if (gv[0] < MIN_GO[0] || (gv[0] === MIN_GO[0] && gv[1] < MIN_GO[1])) throw new Error(`go${gv.join('.')} is too old, need go${MIN_GO.join('.')} or newer`);
  o.progress(`building ${o.what} with go install ${o.module} (${o.expect})`);
  const started = Date.now();
  await new Promise<void>((resolve, reject) => {
    const child = spawn('go', ['install', ...(o.flags ?? []), o.module], { env: { ...o.env, GOBIN: o.dir }, stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = '';
    const onData = (chunk: Buffer) => {
      tail = (tail + chunk.toString('utf8')).slice(-2000);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const ticker = setInterval(() => o.progress(`  still building ${o.what} (${Math.round((Date.now() - started) / 1000)} s)`), 30_000);
    child.on('error', (e) => {
      clearInterval(ticker);
      reject(e);
    });
    child.on('close', (code) => {
      clearInterval(ticker);
      if (code === 0) resolve();
      else reject(new Error(`exited with code ${code}: ${tail.trim().split('\n').slice(-3).join(' | ')}`));
    });
  });
  o.progress(`built ${o.what} in ${Math.round((Date.now() - started) / 1000)} s`);
}

export interface AtomicInstall {
  /** The cache directory; the private build directory is made inside it, so the final rename stays on one file system. */
  dir: string;
  /** The file name in the cache. */
  file: string;
  /** Puts the binary into the private directory and returns its path there. */
  build: (tmp: string) => Promise<string>;
  /** The version the binary reports, or null. */
  versionOf: (file: string) => Promise<string | null>;
  version: string;
}

/**
 * Builds into a private directory, checks there that the binary reports the pinned version, and only then renames it
 * into the cache: a half-written or wrong binary is never found there. Call it holding the cache's install lock.
 */
export async function installAtomically(o: AtomicInstall): Promise<string> {
  const tmp = await mkdtemp(path.join(o.dir, INSTALL_DIR_PREFIX));
  try {
    const built = await o.build(tmp);
    const v = await o.versionOf(built);
    if (v !== o.version) throw new Error(`finished, but the binary reports version ${v ?? 'unknown'}, not ${o.version}`);
    const target = path.join(o.dir, o.file);
    await rename(built, target);
    return target;
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
