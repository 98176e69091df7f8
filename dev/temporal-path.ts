/**
 * Finds or installs the Temporal CLI (dev server + Web UI), pinned to v1.5.1 (docs/spec.md#temporal-cli).
 *
 * Order: TEMPORAL_CLI_PATH, a `temporal` on PATH that reports 1.5.1, the user cache, the official release archive
 * (checksum verified), then `go install` into the user cache. Every step that is tried is recorded, so a failure
 * lists what was tried and how to fix it; no step fails silently. Installs into the cache take a lock file there,
 * so runs started at once (two test runs, `npm test` beside `npm start`) install once and never see a half-written
 * or unchecked binary.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { access, mkdir, mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Agent, interceptors, request } from 'undici';
import { withInstallLock } from './install-lock';

const execFileAsync = promisify(execFile);

export const TEMPORAL_CLI_VERSION = '1.5.1';
/** The newest CLI release that `go install` accepts (later ones carry replace directives in go.mod). */
export const TEMPORAL_CLI_MODULE = `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`;
/** Go >= 1.25 is required by the CLI's go.mod at v1.5.1. */
const MIN_GO = [1, 25] as const;
/** Short: on a machine without internet the download must give up quickly and fall through to `go install`. */
const DOWNLOAD_TIMEOUT_MS = 15_000;

/** Where release archives live; `<base>/v<version>/<archive>` (GitHub answers with a redirect). */
export const RELEASE_BASE = 'https://github.com/temporalio/cli/releases/download';

export interface TemporalPathOptions {
  env?: NodeJS.ProcessEnv;
  /** Release download base; default $LBAAS_TEMPORAL_RELEASE_BASE (a mirror), else RELEASE_BASE. */
  releaseBase?: string;
  /** Progress lines for people (stderr in the CLI). */
  progress?: (line: string) => void;
  /** Skip the release download (tests of the fallback). */
  skipDownload?: boolean;
}

export class TemporalCliNotFoundError extends Error {
  constructor(readonly tried: string[]) {
    super(
      `could not find or install the Temporal CLI v${TEMPORAL_CLI_VERSION}. Tried:\n` +
        tried.map((t) => `  - ${t}`).join('\n') +
        `\nFix: install Go >= ${MIN_GO.join('.')} and run \`go install ${TEMPORAL_CLI_MODULE}\`, ` +
        `or download the v${TEMPORAL_CLI_VERSION} release and set TEMPORAL_CLI_PATH to the binary.`,
    );
    this.name = 'TemporalCliNotFoundError';
  }
}

/** The user cache directory for the pinned CLI: $LBAAS_CACHE_DIR, $XDG_CACHE_HOME or ~/.cache. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.LBAAS_CACHE_DIR || path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'lbaas-orchestrator');
  return path.join(base, 'temporal-cli', `v${TEMPORAL_CLI_VERSION}`);
}

const exeName = process.platform === 'win32' ? 'temporal.exe' : 'temporal';

async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Runs `<file> --version` and returns the CLI version it reports ("temporal version 1.5.1 (Server ...)"). */
export async function cliVersion(file: string): Promise<string | null> {
  try {
    const { stdout } = await execFileAsync(file, ['--version'], { timeout: 20_000 });
    return /temporal version (\S+)/.exec(stdout)?.[1] ?? null;
  } catch {
    return null;
  }
}

async function whichAll(name: string, env: NodeJS.ProcessEnv): Promise<string[]> {
  const found: string[] = [];
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (await isExecutable(candidate)) found.push(candidate);
  }
  return found;
}

/**
 * Returns the path of a Temporal CLI v1.5.1, installing it into the user cache when needed.
 * Throws TemporalCliNotFoundError listing every step tried.
 */
export async function ensureTemporalCli(opts: TemporalPathOptions = {}): Promise<string> {
  const env = opts.env ?? process.env;
  const progress = opts.progress ?? (() => {});
  const tried: string[] = [];

  const explicit = env.TEMPORAL_CLI_PATH;
  if (explicit) {
    if (await isExecutable(explicit)) {
      const v = await cliVersion(explicit);
      if (v && v !== TEMPORAL_CLI_VERSION) progress(`warning: TEMPORAL_CLI_PATH=${explicit} reports version ${v}, not ${TEMPORAL_CLI_VERSION}`);
      return explicit;
    }
    // An explicit setting that points nowhere is a mistake the user must hear about, not something to paper over.
    throw new TemporalCliNotFoundError([`TEMPORAL_CLI_PATH=${explicit}: not an executable file`]);
  }
  tried.push('TEMPORAL_CLI_PATH: not set');

  const onPath = await whichAll(exeName, env);
  if (onPath.length === 0) tried.push('`temporal` on PATH: none found');
  for (const candidate of onPath) {
    const v = await cliVersion(candidate);
    if (v === TEMPORAL_CLI_VERSION) return candidate;
    tried.push(`${candidate} on PATH: reports version ${v ?? 'unknown'}, need ${TEMPORAL_CLI_VERSION}`);
  }

  const dir = cacheDir(env);
  const cached = path.join(dir, exeName);
  const status = await cachedStatus(cached);
  if (status === 'ready') return cached;
  tried.push(`${cached} (user cache): ${status}`);
  await mkdir(dir, { recursive: true });

  // One install at a time per cache: each builds in a private directory, checks the version there and renames the
  // binary into place, so the cache only ever holds a complete 1.5.1; a waiter then finds it and installs nothing.
  const onWait = (holder: string) => progress(`waiting for another install of the Temporal CLI into ${dir} (${holder})`);
  return withInstallLock(
    path.join(dir, '.install.lock'),
    async () => {
      if ((await cachedStatus(cached)) === 'ready') return cached;
      await removeLeftovers(dir);
      if (!opts.skipDownload) {
        try {
          await installVia(dir, (tmp) => downloadRelease(tmp, progress, opts.releaseBase ?? (env.LBAAS_TEMPORAL_RELEASE_BASE || RELEASE_BASE)));
          progress(`installed Temporal CLI v${TEMPORAL_CLI_VERSION} into ${dir}`);
          return cached;
        } catch (err) {
          tried.push(`official release archive: ${(err as Error).message}`);
          progress(`release download unavailable (${(err as Error).message}); falling back to go install`);
        }
      }
      try {
        await installVia(dir, (tmp) => goInstall(tmp, env, progress));
        progress(`installed Temporal CLI v${TEMPORAL_CLI_VERSION} into ${dir}`);
        return cached;
      } catch (err) {
        tried.push(`go install ${TEMPORAL_CLI_MODULE}: ${(err as Error).message}`);
      }
      throw new TemporalCliNotFoundError(tried);
    },
    { onWait },
  );
}

/** 'ready', or what is wrong with the cached binary (for the list of steps tried). */
async function cachedStatus(cached: string): Promise<string> {
  if (!(await isExecutable(cached))) return 'not present';
  const v = await cliVersion(cached);
  return v === TEMPORAL_CLI_VERSION ? 'ready' : `reports version ${v ?? 'unknown'}`;
}

const LEFTOVER_PREFIX = '.install-';

/** Private install directories of runs that crashed (only the lock holder makes them, so none is in use now). */
async function removeLeftovers(dir: string): Promise<void> {
  for (const name of await readdir(dir)) {
    if (name.startsWith(LEFTOVER_PREFIX)) await rm(path.join(dir, name), { recursive: true, force: true });
  }
}

/**
 * Runs `install` into a private directory beside the cache (same file system, so the rename is atomic), checks that
 * the binary reports 1.5.1 there, and only then renames it into the cache.
 */
async function installVia(dir: string, install: (tmp: string) => Promise<void>): Promise<void> {
  const tmp = await mkdtemp(path.join(dir, LEFTOVER_PREFIX));
  try {
    await install(tmp);
    const v = await cliVersion(path.join(tmp, exeName));
    if (v !== TEMPORAL_CLI_VERSION) throw new Error(`finished, but the binary reports version ${v ?? 'unknown'}, not ${TEMPORAL_CLI_VERSION}`);
    await rename(path.join(tmp, exeName), path.join(dir, exeName));
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

function releasePlatform(): { os: string; arch: string } {
  const osName = { linux: 'linux', darwin: 'darwin', win32: 'windows' }[process.platform as string];
  const arch = { x64: 'amd64', arm64: 'arm64' }[process.arch as string];
  if (!osName || !arch) throw new Error(`no release archive for ${process.platform}/${process.arch}`);
  return { os: osName, arch };
}

async function fetchBytes(url: string): Promise<Buffer> {
  // Release assets answer with a redirect to their storage; undici 7 follows redirects only through this interceptor.
  const dispatcher = new Agent({ headersTimeout: DOWNLOAD_TIMEOUT_MS, bodyTimeout: 120_000 }).compose(interceptors.redirect({ maxRedirections: 5 }));
  try {
    const res = await request(url, { dispatcher, signal: AbortSignal.timeout(180_000) });
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new Error(`GET ${url}: HTTP ${res.statusCode}`);
    }
    return Buffer.from(await res.body.arrayBuffer());
  } finally {
    await dispatcher.close();
  }
}

async function downloadRelease(dir: string, progress: (l: string) => void, releaseBase: string): Promise<void> {
  if (process.platform === 'win32') throw new Error('automatic download is not supported on Windows');
  const { os: osName, arch } = releasePlatform();
  const v = TEMPORAL_CLI_VERSION;
  const base = `${releaseBase}/v${v}`;
  const archive = `temporal_cli_${v}_${osName}_${arch}.tar.gz`;
  progress(`downloading ${base}/${archive}`);
  const [sums, data] = await Promise.all([fetchBytes(`${base}/temporal_cli_${v}_checksums.txt`), fetchBytes(`${base}/${archive}`)]);
  const expected = sums
    .toString('utf8')
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .find((parts) => parts[1] === archive)?.[0];
  const actual = createHash('sha256').update(data).digest('hex');
  if (!expected || expected !== actual) throw new Error(`checksum mismatch for ${archive}`);
  await writeFile(path.join(dir, archive), data);
  await execFileAsync('tar', ['-xzf', archive, exeName], { cwd: dir });
}

async function goVersion(env: NodeJS.ProcessEnv): Promise<[number, number] | null> {
  try {
    const { stdout } = await execFileAsync('go', ['env', 'GOVERSION'], { env, timeout: 30_000 });
    const m = /go(\d+)\.(\d+)/.exec(stdout);
    return m ? [Number(m[1]), Number(m[2])] : null;
  } catch {
    return null;
  }
}

async function goInstall(dir: string, env: NodeJS.ProcessEnv, progress: (l: string) => void): Promise<void> {
  const gv = await goVersion(env);
  if (!gv) throw new Error('`go` is not on PATH');
  if (gv[0] < MIN_GO[0] || (gv[0] === MIN_GO[0] && gv[1] < MIN_GO[1])) {
    throw new Error(`go${gv.join('.')} is too old, need go${MIN_GO.join('.')} or newer`);
  }
  progress(`building the Temporal CLI with go install ${TEMPORAL_CLI_MODULE} (a few minutes the first time)`);
  const started = Date.now();
  await new Promise<void>((resolve, reject) => {
    // Release builds stamp their version with this ldflag; without it a source build reports 0.0.0-DEV and could not
    // be told apart from any other build.
    const ldflags = `-X github.com/temporalio/cli/temporalcli.Version=${TEMPORAL_CLI_VERSION}`;
    const child = spawn('go', ['install', '-ldflags', ldflags, TEMPORAL_CLI_MODULE], {
      env: { ...env, GOBIN: dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let tail = '';
    const onData = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      tail = (tail + text).slice(-2000);
      for (const line of text.split('\n')) if (line.trim()) progress(`  ${line.trim()}`);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    // go is silent while compiling; tell people it is still alive.
    const ticker = setInterval(() => progress(`  still building (${Math.round((Date.now() - started) / 1000)} s)`), 30_000);
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
  progress(`built Temporal CLI v${TEMPORAL_CLI_VERSION} in ${Math.round((Date.now() - started) / 1000)} s`);
}
