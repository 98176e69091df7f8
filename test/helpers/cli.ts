/**
 * Running the real `lbaas` command line as a child process, the way an operator or a script does; or its `main(argv,
 * io)` in the test's own process (the code bin/lbaas.js runs, with the same environment), which takes milliseconds
 * where a process takes about a second of CPU to start.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import { main } from '../../cli/main';
import { drawPorts } from '../../common/ports';

/** The repository root, from dist/test/helpers. */
export const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
export const LBAAS_BIN = path.join(REPO_ROOT, 'bin', 'lbaas.js');

/**
 * `lbaas dev` arguments on three freshly drawn ports (gRPC, Web UI, simulator: common/ports.ts) with the repository's
 * example service, `flags` (such as `--kube`) right after `dev`.
 */
export async function devArgs(...flags: string[]): Promise<string[]> {
  const [port, ui, sim] = (await drawPorts(3)) as [number, number, number];
  return ['dev', ...flags, '--port', String(port), '--ui-port', String(ui), '--sim-port', String(sim), '--example', path.join(REPO_ROOT, 'examples', 'service.yaml')];
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface CliTarget {
  address: string;
  namespace?: string;
  taskQueue?: string;
}

/**
 * The environment of a CLI run: Temporal settings for the target only (inherited TEMPORAL_* and a user's
 * temporal.toml could point elsewhere), and never an Engine token: clients do not need one.
 */
export function cliEnv(target: CliTarget, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('TEMPORAL_') || k.startsWith('LBAAS_') || k.startsWith('ANEXIA_')) continue;
    env[k] = v;
  }
  env.TEMPORAL_ADDRESS = target.address;
  env.TEMPORAL_NAMESPACE = target.namespace ?? 'default';
  env.TEMPORAL_CONFIG_FILE = path.join(REPO_ROOT, 'does-not-exist', 'temporal.toml');
  if (target.taskQueue) env.LBAAS_TASK_QUEUE = target.taskQueue;
  return { ...env, ...extra };
}

/**
 * Runs `node bin/lbaas.js ...args` (or another build's lbaas.js, `bin`); resolves with exit code and output, or rejects
 * when it outlives `timeoutMs`.
 */
export function runCli(args: readonly string[], o: { env: NodeJS.ProcessEnv; input?: string | Uint8Array; timeoutMs?: number; bin?: string }): Promise<CliRun> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [o.bin ?? LBAAS_BIN, ...args], { env: o.env, cwd: REPO_ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`lbaas ${args.join(' ')} did not finish within ${o.timeoutMs ?? 60_000} ms; stderr: ${Buffer.concat(err).toString()}`));
    }, o.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString(), ms: Date.now() - started });
    });
    child.stdin.on('error', () => undefined); // The CLI may exit before reading all of stdin.
    child.stdin.end(o.input ?? '');
  });
}

/**
 * `lbaas ...args` through the CLI's main in this process with `env`, capturing what it writes. Not for commands that
 * read stdin (`-f -`) or start workers, nor for what only a process shows (its exit, its streams).
 */
export async function runInProcess(args: readonly string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  const started = Date.now();
  let stdout = '';
  let stderr = '';
  // A command may set process.exitCode (lbaas import does when an import failed) and main answers with it: here that
  // would outlive the run, answer for the next one and fail the test file's process.
  const exitCode = process.exitCode;
  process.exitCode = undefined;
  try {
    const code = await main(['node', 'lbaas', ...args], { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), env });
    return { code, stdout, stderr, ms: Date.now() - started };
  } finally {
    process.exitCode = exitCode;
  }
}

/** Columns of an aligned text table: each header's start offset, checked to be the same in every row. */
export function tableColumns(lines: readonly string[]): { headers: string[]; offsets: number[]; rows: string[][] } {
  const [header = '', ...body] = lines;
  const offsets: number[] = [];
  const headers: string[] = [];
  const re = /\S+(?: \S+)*/g;
  for (let m = re.exec(header); m !== null; m = re.exec(header)) {
    offsets.push(m.index);
    headers.push(m[0]);
  }
  const rows = body.map((line) =>
    offsets.map((start, i) => {
      const end = offsets[i + 1];
      if (start > 0 && line.length > start && (line[start - 1] !== ' ' || line[start] === ' ')) throw new Error(`column ${headers[i]} not aligned in: ${line}`);
      return (end === undefined ? line.slice(start) : line.slice(start, end)).trim();
    }),
  );
  return { headers, offsets, rows };
}

/** A long-running `lbaas` command (`lbaas dev`, for one) started as a user starts it, its output collected. */
export interface LongRun {
  proc: ChildProcessWithoutNullStreams;
  /** Everything it printed so far, stdout and stderr interleaved. */
  out(): string;
  /** Its exit code once it has exited. */
  exited: Promise<number | null>;
}

/**
 * Starts `lbaas <args>` in `cwd` with only PATH, HOME and `env`; killed with SIGKILL when the test ends if it still
 * runs (its own stops are the test's to check).
 */
export function startLongRun(t: { after(fn: () => void): void }, args: readonly string[], o: { cwd: string; env?: Record<string, string> }): LongRun {
  const proc = spawn(process.execPath, [LBAAS_BIN, ...args], { cwd: o.cwd, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...o.env }, stdio: ['pipe', 'pipe', 'pipe'] });
  proc.stdin.end();
  let out = '';
  proc.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
  proc.stderr.on('data', (c: Buffer) => (out += c.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  t.after(() => {
    if (proc.exitCode === null) proc.kill('SIGKILL');
  });
  return { proc, out: () => out, exited };
}
