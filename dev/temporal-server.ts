/**
 * Finds or installs the Temporal server, its SQL schema tool and the Temporal Web UI server, each pinned: the server
 * runs `lbaas dev`, the tests and the benchmarks (dev/devserver.ts: one process on SQLite) and the local cluster
 * (cluster/index.ts: five processes on PostgreSQL), so both run the same server code. Server 1.32 is the first line
 * this project runs that supports Upgrade on Continue-as-New (a PINNED run learns that a new Target Version exists
 * and continues as new onto it: docs/architecture.md, "Versions and patches"); the dev server inside the newest
 * Temporal CLI that `go install` can build (v1.5.1, dev/temporal-path.ts) is 1.29.1, which does not.
 *
 * Order, for each binary: an explicit path (TEMPORAL_SERVER_PATH, TEMPORAL_SQL_TOOL_PATH, TEMPORAL_UI_SERVER_PATH),
 * the user cache, then `go install` (there is no release archive of the bare server for every platform; the Go
 * module proxy is what a new user can always reach). Installs are the CLI's (dev/go-install.ts, dev/install-lock.ts):
 * built in a private directory, checked there, renamed into place, under a lock file that other runs wait on, so a
 * half-written binary is never found in the cache. Every step tried is recorded; a failure lists them with the fix.
 */
import { execFile } from 'node:child_process';
import { mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { goInstall, INSTALL_DIR_PREFIX, installAtomically, isExecutable, MIN_GO } from './go-install';
import { withInstallLock } from './install-lock';
import { cacheDir as cliCacheDir } from './temporal-path';

const execFileAsync = promisify(execFile);

export const TEMPORAL_SERVER_VERSION = '1.32.2';
/**
 * The Web UI server the Temporal CLI v1.9.1 embeds. Later ones need module versions the Go module proxy does not
 * serve here (2.58.1 asks for go.temporal.io/api v1.64.0).
 */
export const TEMPORAL_UI_VERSION = '2.54.1';

export interface ServerBinaries {
  server: string;
  sqlTool: string;
  ui: string;
}

export type ServerBinary = keyof ServerBinaries;

interface Binary {
  /** File name in the cache. */
  file: string;
  /** Package path, built by `go install <pkg>@v<version>`; its last element is the name go gives the binary. */
  pkg: string;
  version: string;
  envVar: string;
  /** What the progress line promises. */
  expect: string;
}

export const BINARIES: Readonly<Record<ServerBinary, Binary>> = {
  server: { file: 'temporal-server', pkg: 'go.temporal.io/server/cmd/server', version: TEMPORAL_SERVER_VERSION, envVar: 'TEMPORAL_SERVER_PATH', expect: 'about 4 minutes the first time' },
  sqlTool: { file: 'temporal-sql-tool', pkg: 'go.temporal.io/server/cmd/tools/sql', version: TEMPORAL_SERVER_VERSION, envVar: 'TEMPORAL_SQL_TOOL_PATH', expect: 'about 2 minutes the first time' },
  ui: { file: 'temporal-ui-server', pkg: 'github.com/temporalio/ui-server/v2/cmd/server', version: TEMPORAL_UI_VERSION, envVar: 'TEMPORAL_UI_SERVER_PATH', expect: 'about a minute the first time' },
};

export class TemporalServerNotFoundError extends Error {
  constructor(
    readonly tried: string[],
    which: readonly ServerBinary[] = ['server', 'sqlTool'],
  ) {
    super(
      `could not find or install the Temporal server v${TEMPORAL_SERVER_VERSION}${which.includes('ui') ? ` or its Web UI v${TEMPORAL_UI_VERSION}` : ''}. Tried:\n` +
        tried.map((t) => `  - ${t}`).join('\n') +
        `\nFix: install Go >= ${MIN_GO.join('.')} (the Go module proxy must be reachable; go fetches a newer toolchain from it when a module needs one) and run again, or build them ` +
        `yourself with ${which.map((k) => `\`go install ${BINARIES[k].pkg}@v${BINARIES[k].version}\``).join(' and ')} and set ` +
        `${which.map((k) => BINARIES[k].envVar).join(' and ')} to them.`,
    );
    this.name = 'TemporalServerNotFoundError';
  }
}

/** Where the pinned binaries live: beside the pinned CLI in the user cache ($LBAAS_CACHE_DIR, $XDG_CACHE_HOME, ~/.cache). */
export function serverCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(cliCacheDir(env), '..', '..', 'temporal-server', `v${TEMPORAL_SERVER_VERSION}`);
}

/** The version a Temporal Go binary reports (`temporal version 1.32.2`, `Temporal UI version 2.54.1`), or null. */
export async function binaryVersion(file: string): Promise<string | null> {
  try {
    const { stdout } = await execFileAsync(file, ['--version'], { timeout: 20_000 });
    return /version (\S+)/.exec(stdout)?.[1] ?? null;
  } catch {
    return null;
  }
}

export interface EnsureServerOptions {
  env?: NodeJS.ProcessEnv;
  progress?: (line: string) => void;
  /** The binaries wanted; the server and its SQL tool (what the local cluster runs) when absent. */
  which?: readonly ServerBinary[];
}

/**
 * Returns the binaries asked for, building what is missing into the user cache. Throws TemporalServerNotFoundError.
 * The modules declare a newer Go than some machines have (server 1.32 says go 1.26.10): go is allowed to fetch that
 * toolchain from the module proxy (GOTOOLCHAIN=auto) unless the environment says otherwise.
 */
export async function ensureTemporalServer<K extends ServerBinary = 'server' | 'sqlTool'>(opts: EnsureServerOptions & { which?: readonly K[] } = {}): Promise<Pick<ServerBinaries, K>> {
  const env = opts.env ?? process.env;
  const progress = opts.progress ?? (() => {});
  const which = (opts.which ?? ['server', 'sqlTool']) as readonly ServerBinary[];
  const dir = serverCacheDir(env);
  const tried: string[] = [];
  const found: Partial<ServerBinaries> = {};
  const missing: ServerBinary[] = [];
  for (const key of which) {
    const b = BINARIES[key];
    const explicit = env[b.envVar];
    if (explicit) {
      if (!(await isExecutable(explicit))) throw new TemporalServerNotFoundError([`${b.envVar}=${explicit}: not an executable file`], which);
      const v = await binaryVersion(explicit);
      if (v !== b.version) progress(`warning: ${b.envVar}=${explicit} reports version ${v ?? 'unknown'}, not ${b.version}`);
      found[key] = explicit;
      continue;
    }
    const cached = path.join(dir, b.file);
    if ((await binaryVersion(cached)) === b.version) found[key] = cached;
    else missing.push(key);
  }
  if (missing.length === 0) return found as Pick<ServerBinaries, K>;

  try {
    await mkdir(dir, { recursive: true });
  } catch (err) {
    throw new TemporalServerNotFoundError([`creating the cache directory ${dir}: ${(err as Error).message}`], which);
  }
  const onWait = (holder: string) => progress(`waiting for another install of the Temporal server into ${dir} (${holder})`);
  const goEnv = { ...env, GOTOOLCHAIN: env.GOTOOLCHAIN || 'auto' };
  await withInstallLock(
    path.join(dir, '.install.lock'),
    async () => {
      for (const name of await readdir(dir)) if (name.startsWith(INSTALL_DIR_PREFIX)) await rm(path.join(dir, name), { recursive: true, force: true });
      for (const key of missing) {
        const b = BINARIES[key];
        const target = path.join(dir, b.file);
        // Another run may have installed it while we waited for the lock.
        if ((await binaryVersion(target)) === b.version) {
          found[key] = target;
          continue;
        }
        const module = `${b.pkg}@v${b.version}`;
        try {
          found[key] = await installAtomically({
            dir,
            file: b.file,
            build: async (tmp) => {
              await goInstall({ module, dir: tmp, what: b.file, env: goEnv, progress, expect: b.expect });
              // go names the binary after the package's last element.
              return path.join(tmp, path.basename(b.pkg));
            },
            versionOf: binaryVersion,
            version: b.version,
          });
        } catch (err) {
          tried.push(`${b.envVar}: not set; ${target} (user cache): not present; go install ${module}: ${(err as Error).message}`);
        }
      }
    },
    { onWait },
  );
  if (tried.length > 0) throw new TemporalServerNotFoundError(tried, which);
  return found as Pick<ServerBinaries, K>;
}
