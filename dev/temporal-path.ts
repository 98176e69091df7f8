/**
 * Finds or installs the Temporal CLI (dev server + Web UI), pinned to v1.5.1 (docs/spec.md#temporal-cli).
 *
 * Order: TEMPORAL_CLI_PATH, a `temporal` on PATH that reports 1.5.1, the user cache, the official release archive
 * (checksum verified), then `go install` into the user cache. Every step that is tried is recorded, so a failure
 * lists what was tried and how to fix it; no step fails silently. Installs into the cache take a lock file there,
 * so runs started at once (two test runs, `npm test` beside `npm start`) install once and never see a half-written
 * or unchecked binary.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { goInstall, INSTALL_DIR_PREFIX, installAtomically, isExecutable, MIN_GO } from './go-install';
import { withInstallLock } from './install-lock';

const execFileAsync = promisify(execFile);

export const TEMPORAL_CLI_VERSION = '1.5.1';
/** The newest CLI release that `go install` accepts (later ones carry replace directives in go.mod). */
export const TEMPORAL_CLI_MODULE = `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`;
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

/** The user cache of lbaas-orchestrator: $LBAAS_CACHE_DIR, else lbaas-orchestrator in $XDG_CACHE_HOME or ~/.cache. */
export function cacheBase(env: NodeJS.ProcessEnv = process.env): string {
  return env.LBAAS_CACHE_DIR || path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'lbaas-orchestrator');
}

/** The user cache directory for the pinned CLI. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(cacheBase(env), 'temporal-cli', `v${TEMPORAL_CLI_VERSION}`);
}

const exeName = process.platform === 'win32' ? 'temporal.exe' : 'temporal';

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
        await installVia(dir, (tmp) => buildWithGo(tmp, env, progress));
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

/** Private install directories of runs that crashed (only the lock holder makes them, so none is in use now). */
async function removeLeftovers(dir: string): Promise<void> {
  for (const name of await readdir(dir)) {
    if (name.startsWith(INSTALL_DIR_PREFIX)) await rm(path.join(dir, name), { recursive: true, force: true });
  }
}

/** `install` puts the binary into a private directory; it is checked there and only then renamed into the cache. */
async function installVia(dir: string, install: (tmp: string) => Promise<void>): Promise<void> {
  await installAtomically({
    dir,
    file: exeName,
    build: async (tmp) => {
      await install(tmp);
      return path.join(tmp, exeName);
    },
    versionOf: cliVersion,
    version: TEMPORAL_CLI_VERSION,
  });
}

function releasePlatform(): { os: string; arch: string } {
  const osName = { linux: 'linux', darwin: 'darwin', win32: 'windows' }[process.platform as string];
  const arch = { x64: 'amd64', arm64: 'arm64' }[process.arch as string];
  if (!osName || !arch) throw new Error(`no release archive for ${process.platform}/${process.arch}`);
  return { os: osName, arch };
}

async function fetchBytes(url: string): Promise<Buffer> {
  // Loaded here, not at the top: every `lbaas` command imports this file (`lbaas temporal-path`), and only a download
  // needs an HTTP client (undici took about a sixth of the CLI's start-up).
  const { Agent, interceptors, request } = await import('undici');
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

function buildWithGo(dir: string, env: NodeJS.ProcessEnv, progress: (l: string) => void): Promise<void> {
  return goInstall({
    module: TEMPORAL_CLI_MODULE,
    dir,
    what: `the Temporal CLI v${TEMPORAL_CLI_VERSION}`,
    env,
    progress,
    // Release builds stamp their version with this ldflag; without it a source build reports 0.0.0-DEV and could not
    // be told apart from any other build.
    flags: ['-ldflags', `-X github.com/temporalio/cli/temporalcli.Version=${TEMPORAL_CLI_VERSION}`],
    expect: 'a few minutes the first time',
  });
}
