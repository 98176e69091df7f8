/**
 * Finds or installs the Temporal server and its SQL schema tool, pinned to v1.29.1: the server version inside the
 * pinned Temporal CLI v1.5.1 (client/temporal-path.ts), so the cluster runs the same server code as `lbaas dev`.
 *
 * Order, for each binary: an explicit path (TEMPORAL_SERVER_PATH, TEMPORAL_SQL_TOOL_PATH), the user cache, then
 * `go install` (there is no release archive of the bare server for every platform; the Go module proxy is what a new
 * user can always reach). A build goes into a private temporary directory and is renamed into place, and a lock
 * directory keeps two runs from building at once, so a half-written binary is never found in the cache. Every step
 * tried is recorded; a failure lists them with the fix.
 */
import { execFile, spawn } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { access, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { cacheDir as cliCacheDir } from '../dev/temporal-path';

const execFileAsync = promisify(execFile);

export const TEMPORAL_SERVER_VERSION = '1.29.1';
/** go.temporal.io/server v1.29.1 declares `go 1.25.0` in its go.mod. */
const MIN_GO = [1, 25] as const;
/** A lock older than this is a crashed run's: a cold build of both binaries takes ~3 min on 2 cores, 30 is generous. */
const STALE_LOCK_MS = 30 * 60_000;

export interface ServerBinaries {
  server: string;
  sqlTool: string;
}

interface Binary {
  /** File name in the cache. */
  file: string;
  /** Package path, built by `go install <pkg>@v1.29.1`; its last element is the name go gives the binary. */
  pkg: string;
  envVar: string;
}

const BINARIES: Record<keyof ServerBinaries, Binary> = {
  server: { file: 'temporal-server', pkg: 'go.temporal.io/server/cmd/server', envVar: 'TEMPORAL_SERVER_PATH' },
  sqlTool: { file: 'temporal-sql-tool', pkg: 'go.temporal.io/server/cmd/tools/sql', envVar: 'TEMPORAL_SQL_TOOL_PATH' },
};

export class TemporalServerNotFoundError extends Error {
  constructor(readonly tried: string[]) {
    super(
      `could not find or install the Temporal server v${TEMPORAL_SERVER_VERSION}. Tried:\n` +
        tried.map((t) => `  - ${t}`).join('\n') +
        `\nFix: install Go >= ${MIN_GO.join('.')} (the Go module proxy must be reachable) and run again, or build them ` +
        `yourself with \`go install ${BINARIES.server.pkg}@v${TEMPORAL_SERVER_VERSION}\` and ` +
        `\`go install ${BINARIES.sqlTool.pkg}@v${TEMPORAL_SERVER_VERSION}\` and set ` +
        `${BINARIES.server.envVar} and ${BINARIES.sqlTool.envVar} to them.`,
    );
    this.name = 'TemporalServerNotFoundError';
  }
}

/** Where the pinned server lives: beside the pinned CLI in the user cache ($LBAAS_CACHE_DIR, $XDG_CACHE_HOME, ~/.cache). */
export function serverCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(cliCacheDir(env), '..', '..', 'temporal-server', `v${TEMPORAL_SERVER_VERSION}`);
}

async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The version a Temporal Go binary reports (`temporal version 1.29.1`), or null. */
export async function binaryVersion(file: string): Promise<string | null> {
  try {
    const { stdout } = await execFileAsync(file, ['--version'], { timeout: 20_000 });
    return /version (\S+)/.exec(stdout)?.[1] ?? null;
  } catch {
    return null;
  }
}

/** Returns both binaries, building what is missing into the user cache. Throws TemporalServerNotFoundError. */
export async function ensureTemporalServer(opts: { env?: NodeJS.ProcessEnv; progress?: (line: string) => void } = {}): Promise<ServerBinaries> {
  const env = opts.env ?? process.env;
  const progress = opts.progress ?? (() => {});
  const dir = serverCacheDir(env);
  const tried: string[] = [];
  const found: Partial<ServerBinaries> = {};
  const missing: (keyof ServerBinaries)[] = [];
  for (const [key, b] of Object.entries(BINARIES) as [keyof ServerBinaries, Binary][]) {
    const explicit = env[b.envVar];
    if (explicit) {
      if (!(await isExecutable(explicit))) throw new TemporalServerNotFoundError([`${b.envVar}=${explicit}: not an executable file`]);
      const v = await binaryVersion(explicit);
      if (v !== TEMPORAL_SERVER_VERSION) progress(`warning: ${b.envVar}=${explicit} reports version ${v ?? 'unknown'}, not ${TEMPORAL_SERVER_VERSION}`);
      found[key] = explicit;
      continue;
    }
    const cached = path.join(dir, b.file);
    if ((await binaryVersion(cached)) === TEMPORAL_SERVER_VERSION) found[key] = cached;
    else missing.push(key);
  }
  if (missing.length === 0) return found as ServerBinaries;

  try {
    await mkdir(dir, { recursive: true });
  } catch (err) {
    throw new TemporalServerNotFoundError([`creating the cache directory ${dir}: ${(err as Error).message}`]);
  }
  const release = await acquireLock(path.join(dir, '.install-lock'), progress);
  try {
    for (const key of missing) {
      const b = BINARIES[key];
      const target = path.join(dir, b.file);
      // Another run may have installed it while we waited for the lock.
      if ((await binaryVersion(target)) === TEMPORAL_SERVER_VERSION) {
        found[key] = target;
        continue;
      }
      try {
        await goInstall(b, dir, env, progress);
        const v = await binaryVersion(target);
        if (v === TEMPORAL_SERVER_VERSION) found[key] = target;
        else tried.push(`go install ${b.pkg}@v${TEMPORAL_SERVER_VERSION}: built, but ${target} reports ${v ?? 'no version'}`);
      } catch (err) {
        tried.push(`${b.envVar}: not set; ${target} (user cache): not present; go install ${b.pkg}@v${TEMPORAL_SERVER_VERSION}: ${(err as Error).message}`);
      }
    }
  } finally {
    await release();
  }
  if (tried.length > 0) throw new TemporalServerNotFoundError(tried);
  return found as ServerBinaries;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * mkdir is atomic: whoever creates the directory holds the lock. A lock whose owner is gone (its pid no longer
 * runs) or that is older than STALE_LOCK_MS is taken over. Returns the release function.
 */
export async function acquireLock(lockDir: string, progress: (line: string) => void): Promise<() => Promise<void>> {
  const waitedSince = Date.now();
  let said = 0;
  for (;;) {
    try {
      await mkdir(lockDir);
      await writeFile(path.join(lockDir, 'pid'), String(process.pid));
      return () => rm(lockDir, { recursive: true, force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new TemporalServerNotFoundError([`taking the install lock ${lockDir}: ${(err as Error).message}`]);
    }
    const owner = Number(await readFile(path.join(lockDir, 'pid'), 'utf8').catch(() => ''));
    const age = Date.now() - ((await stat(lockDir).catch(() => null))?.mtimeMs ?? Date.now());
    // A lock without a pid file yet is one being taken right now; give its owner a few seconds to write it.
    if ((owner > 0 && !alive(owner)) || age > STALE_LOCK_MS || (!owner && age > 10_000)) {
      progress(`taking over a stale install lock ${lockDir} (owner ${owner || 'unknown'} is gone)`);
      await rm(lockDir, { recursive: true, force: true });
      continue;
    }
    if (Date.now() - said > 30_000) {
      said = Date.now();
      progress(`waiting for another run (pid ${owner || 'unknown'}) that is installing the Temporal server (${Math.round((Date.now() - waitedSince) / 1000)} s)`);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
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

/** Builds one binary into a private directory beside the cache and renames it into place (atomic on one file system). */
async function goInstall(b: Binary, dir: string, env: NodeJS.ProcessEnv, progress: (line: string) => void): Promise<void> {
  const gv = await goVersion(env);
  if (!gv) throw new Error('`go` is not on PATH');
  if (gv[0] < MIN_GO[0] || (gv[0] === MIN_GO[0] && gv[1] < MIN_GO[1])) throw new Error(`go${gv.join('.')} is too old, need go${MIN_GO.join('.')} or newer`);
  const module = `${b.pkg}@v${TEMPORAL_SERVER_VERSION}`;
  const tmp = await mkdtemp(path.join(dir, '.build-'));
  const started = Date.now();
  progress(`building ${b.file} with go install ${module} (about 2 minutes the first time)`);
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn('go', ['install', module], { env: { ...env, GOBIN: tmp }, stdio: ['ignore', 'pipe', 'pipe'] });
      let tail = '';
      const onData = (chunk: Buffer) => {
        tail = (tail + chunk.toString('utf8')).slice(-2000);
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      // go is silent while compiling; say it is still alive.
      const ticker = setInterval(() => progress(`  still building ${b.file} (${Math.round((Date.now() - started) / 1000)} s)`), 30_000);
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
    await rename(path.join(tmp, path.basename(b.pkg)), path.join(dir, b.file));
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  progress(`built ${b.file} v${TEMPORAL_SERVER_VERSION} in ${Math.round((Date.now() - started) / 1000)} s: ${path.join(dir, b.file)}`);
}
