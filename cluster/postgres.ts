/**
 * A private PostgreSQL for the local cluster: its own data directory, its own port on the loopback interface, a
 * password of its own, started and stopped by us (no system service is touched).
 *
 * initdb and postgres refuse to run as root. Run as root (CI, containers), both are started as the `postgres` system
 * user through setpriv, which execs in place: the pid we hold is the postmaster's, so signals reach it directly.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, readdirSync } from 'node:fs';
import { chmod, chown, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** The role Temporal connects as; a private cluster, so the name is fixed. */
export const PG_USER = 'temporal';
/**
 * Temporal's processes each open up to maxConns per store (config.ts: 20 + 10) and the schema tool a few: five
 * processes need ~150 at most; 200 leaves room for a psql and a restarted process whose old connections linger.
 */
const MAX_CONNECTIONS = 200;

export interface PgInstallation {
  /** Directory with initdb, postgres, pg_isready, psql. */
  bin: string;
  /** Present when we are root: who runs PostgreSQL instead. */
  runAs: { uid: number; gid: number } | null;
}

async function hasPgBinaries(dir: string): Promise<boolean> {
  return ['initdb', 'postgres', 'pg_isready', 'psql'].every((b) => existsSync(path.join(dir, b)));
}

/** Finds PostgreSQL's server binaries: $LBAAS_PG_BIN, `pg_config --bindir`, PATH, /usr/lib/postgresql/<newest>/bin. */
export async function findPostgres(env: NodeJS.ProcessEnv = process.env): Promise<PgInstallation> {
  const tried: string[] = [];
  const candidates: string[] = [];
  if (env.LBAAS_PG_BIN) candidates.push(env.LBAAS_PG_BIN);
  else tried.push('LBAAS_PG_BIN: not set');
  try {
    candidates.push((await execFileAsync('pg_config', ['--bindir'], { env })).stdout.trim());
  } catch {
    tried.push('pg_config: not on PATH');
  }
  candidates.push(...(env.PATH ?? '').split(path.delimiter).filter(Boolean));
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const versions = readdirSync(debian).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
    candidates.push(...versions.map((v) => path.join(debian, v, 'bin')));
  }
  let bin: string | null = null;
  for (const dir of candidates) {
    if (await hasPgBinaries(dir)) {
      bin = dir;
      break;
    }
  }
  if (!bin) {
    tried.push(`no directory with initdb, postgres, pg_isready and psql among ${candidates.length} candidates (PATH, ${debian}/*/bin)`);
    throw new Error(
      `PostgreSQL (12 or newer) is needed for the local cluster. Tried:\n${tried.map((t) => `  - ${t}`).join('\n')}\n` +
        'Fix: install it (Debian/Ubuntu: apt-get install postgresql; macOS: brew install postgresql) or set LBAAS_PG_BIN to its bin directory.',
    );
  }
  let runAs: PgInstallation['runAs'] = null;
  if (process.getuid?.() === 0) {
    try {
      const uid = Number((await execFileAsync('id', ['-u', 'postgres'])).stdout.trim());
      const gid = Number((await execFileAsync('id', ['-g', 'postgres'])).stdout.trim());
      runAs = { uid, gid };
    } catch {
      throw new Error('running as root, and PostgreSQL refuses to run as root: a `postgres` system user is needed to run it as (Debian\'s postgresql package creates one), or run as an ordinary user');
    }
  }
  return { bin, runAs };
}

export interface PostgresOptions {
  pg: PgInstallation;
  /** Directory for the cluster's database (created; `data/` inside is PostgreSQL's data directory). Kept across runs. */
  dir: string;
  port: number;
  logFile: string;
}

export interface Postgres {
  port: number;
  password: string;
  /** The postmaster's pid while it runs, else -1. */
  readonly pid: number;
  /** Starts the postmaster (initdb first when the data directory is new) and waits until it accepts connections. */
  start(): Promise<void>;
  /** Fast shutdown (SIGINT: open transactions roll back, connections are cut), as an operator's restart does. */
  stop(): Promise<void>;
  /** Synchronous last resort when our own process exits: immediate shutdown (SIGQUIT); crash recovery on the next start. */
  killNow(): void;
  /** Runs one SQL statement as the Temporal role; returns psql's unaligned output. */
  query(database: string, sql: string): Promise<string>;
}

/** Runs a PostgreSQL binary, as the postgres user when we are root. */
function command(pg: PgInstallation, bin: string, args: string[]): [string, string[]] {
  const file = path.join(pg.bin, bin);
  if (!pg.runAs) return [file, args];
  return ['setpriv', [`--reuid=${pg.runAs.uid}`, `--regid=${pg.runAs.gid}`, '--clear-groups', '--', file, ...args]];
}

/**
 * Makes the directory ours (or the postgres user's, as root) and checks that the postgres user can reach it: a
 * private directory under /root or a 0700 temporary directory would make initdb fail with a bare "permission denied".
 */
async function prepareDir(dir: string, runAs: PgInstallation['runAs']): Promise<void> {
  await mkdir(dir, { recursive: true });
  if (!runAs) return;
  await chown(dir, runAs.uid, runAs.gid);
  await chmod(dir, 0o700);
  for (let p = path.dirname(dir); ; p = path.dirname(p)) {
    const s = await stat(p);
    const reachable = s.uid === runAs.uid ? (s.mode & 0o100) !== 0 : s.gid === runAs.gid ? (s.mode & 0o010) !== 0 : (s.mode & 0o001) !== 0;
    if (!reachable) throw new Error(`PostgreSQL runs as the postgres user, which cannot enter ${p} (mode ${(s.mode & 0o777).toString(8)}): choose a state directory outside it`);
    if (p === path.dirname(p)) break;
  }
}

export function createPostgres(o: PostgresOptions): Postgres {
  const data = path.join(o.dir, 'data');
  const passwordFile = path.join(o.dir, 'password');
  let password = '';
  let child: ChildProcess | null = null;
  let exited: Promise<void> = Promise.resolve();
  let tail = '';

  const ensureInitialized = async () => {
    await prepareDir(o.dir, o.pg.runAs);
    if (existsSync(path.join(data, 'PG_VERSION'))) {
      password = (await readFile(passwordFile, 'utf8')).trim();
      return;
    }
    password = randomBytes(18).toString('base64url');
    await writeFile(passwordFile, password, { mode: 0o600 });
    const pwfile = path.join(o.dir, 'initdb-password');
    await writeFile(pwfile, password, { mode: 0o600 });
    if (o.pg.runAs) await chown(pwfile, o.pg.runAs.uid, o.pg.runAs.gid);
    if (o.pg.runAs) await chown(passwordFile, o.pg.runAs.uid, o.pg.runAs.gid);
    const [file, args] = command(o.pg, 'initdb', ['-D', data, '-U', PG_USER, `--pwfile=${pwfile}`, '--auth=scram-sha-256', '--encoding=UTF8', '--locale=C']);
    try {
      await execFileAsync(file, args, { timeout: 120_000, env: { ...process.env, LC_ALL: 'C' } });
    } catch (err) {
      const e = err as Error & { stderr?: string };
      throw new Error(`initdb failed for ${data}: ${(e.stderr ?? e.message).trim().split('\n').slice(-3).join(' | ')}`);
    } finally {
      await rm(pwfile, { force: true });
    }
  };

  const pg: Postgres = {
    port: o.port,
    get password() {
      return password;
    },
    get pid() {
      return child && child.exitCode === null && child.signalCode === null ? (child.pid ?? -1) : -1;
    },
    async start() {
      await ensureInitialized();
      const [file, args] = command(o.pg, 'postgres', [
        '-D',
        data,
        '-p',
        String(o.port),
        '-c',
        'listen_addresses=127.0.0.1',
        // The socket goes into the private directory: the system's /var/run/postgresql may not exist or be writable.
        '-c',
        `unix_socket_directories=${o.dir}`,
        '-c',
        `max_connections=${MAX_CONNECTIONS}`,
      ]);
      const log = createWriteStream(o.logFile, { flags: 'a' });
      const c = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      child = c;
      const onData = (chunk: Buffer) => {
        tail = (tail + chunk.toString('utf8')).slice(-8192);
        log.write(chunk);
      };
      c.stdout?.on('data', onData);
      c.stderr?.on('data', onData);
      exited = new Promise((resolve) => c.once('exit', () => resolve()));
      void exited.then(() => log.end());
      const deadline = Date.now() + 60_000;
      for (;;) {
        if (c.exitCode !== null || c.signalCode !== null) throw new Error(`PostgreSQL exited during start-up (log ${o.logFile}):\n${tail.slice(-1500)}`);
        const ready = await execFileAsync(path.join(o.pg.bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(o.port), '-q']).then(
          () => true,
          () => false,
        );
        if (ready) return;
        if (Date.now() > deadline) {
          await pg.stop();
          throw new Error(`PostgreSQL on port ${o.port} did not accept connections within 60 s (log ${o.logFile}):\n${tail.slice(-1500)}`);
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    },
    async stop() {
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      c.kill('SIGINT');
      // A fast shutdown takes a checkpoint; SIGQUIT (immediate shutdown, crash recovery on the next start) if it hangs.
      const quit = setTimeout(() => c.kill('SIGQUIT'), 30_000);
      await exited;
      clearTimeout(quit);
    },
    killNow() {
      if (pg.pid > 0) child?.kill('SIGQUIT');
    },
    async query(database, sql) {
      const { stdout } = await execFileAsync(path.join(o.pg.bin, 'psql'), ['-h', '127.0.0.1', '-p', String(o.port), '-U', PG_USER, '-d', database, '-Atc', sql], {
        env: { ...process.env, PGPASSWORD: password },
        timeout: 30_000,
      });
      return stdout.trim();
    },
  };
  return pg;
}
