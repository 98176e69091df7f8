/**
 * Finds or installs the Temporal server and its SQL schema tool, pinned to v1.29.1: the server version inside the
 * pinned Temporal CLI v1.5.1 (client/temporal-path.ts), so the cluster runs the same server code as `lbaas dev`.
 *
 * Order, for each binary: an explicit path (TEMPORAL_SERVER_PATH, TEMPORAL_SQL_TOOL_PATH), the user cache, then
 * `go install` (there is no release archive of the bare server for every platform; the Go module proxy is what a new
 * user can always reach). Installs are the CLI's (dev/go-install.ts, dev/install-lock.ts): built in a private
 * directory, checked there, renamed into place, under a lock file that other runs wait on, so a half-written binary
 * is never found in the cache. Every step tried is recorded; a failure lists them with the fix.
 */
import { execFile } from 'node:child_process';
import { mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { goInstall, INSTALL_DIR_PREFIX, installAtomically, isExecutable, MIN_GO } from '../dev/go-install';
import { withInstallLock } from '../dev/install-lock';
import { cacheDir as cliCacheDir } from '../dev/temporal-path';

const execFileAsync = promisify(execFile);

export const TEMPORAL_SERVER_VERSION = '1.29.1';

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
  const onWait = (holder: string) => progress(`waiting for another install of the Temporal server into ${dir} (${holder})`);
  await withInstallLock(
    path.join(dir, '.install.lock'),
    async () => {
      for (const name of await readdir(dir)) if (name.startsWith(INSTALL_DIR_PREFIX)) await rm(path.join(dir, name), { recursive: true, force: true });
      for (const key of missing) {
        const b = BINARIES[key];
        const target = path.join(dir, b.file);
        // Another run may have installed it while we waited for the lock.
        if ((await binaryVersion(target)) === TEMPORAL_SERVER_VERSION) {
          found[key] = target;
          continue;
        }
        const module = `${b.pkg}@v${TEMPORAL_SERVER_VERSION}`;
        try {
          found[key] = await installAtomically({
            dir,
            file: b.file,
            build: async (tmp) => {
              await goInstall({ module, dir: tmp, what: b.file, env, progress, expect: 'about 2 minutes the first time' });
              // go names the binary after the package's last element.
              return path.join(tmp, path.basename(b.pkg));
            },
            versionOf: binaryVersion,
            version: TEMPORAL_SERVER_VERSION,
          });
        } catch (err) {
          tried.push(`${b.envVar}: not set; ${target} (user cache): not present; go install ${module}: ${(err as Error).message}`);
        }
      }
    },
    { onWait },
  );
  if (tried.length > 0) throw new TemporalServerNotFoundError(tried);
  return found as ServerBinaries;
}
