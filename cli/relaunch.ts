/**
 * `lbaas worker` and `lbaas dev` run a Temporal worker, whose workflow thread's heap is bounded by the process's own
 * `--max-old-space-size` (worker/heap.ts). bin/lbaas.js calls `relaunch` first: when such a command runs in a node
 * started without that flag (neither on its command line nor in NODE_OPTIONS), node is started again with
 * `--max-old-space-size=<LBAAS_WORKFLOW_HEAP_MIB, default 448>` and the same arguments. An operator's own flag wins.
 * Node is also started again when MALLOC_ARENA_MAX is not set, with it set to 2 (worker/heap.ts: the C library reads
 * it only at start); an operator's own value wins.
 *
 * Where node has process.execve the process replaces itself (same pid, nothing in between). Elsewhere (Node 20) the
 * new node is a child that stands in for us: signals we get are passed on, its exit is ours, and it keeps our pid in
 * its Temporal identity (`<our pid>@<host>`, what the SDK would have given us). A signal can then reach it twice
 * (a Ctrl-C goes to the whole process group, systemd signals every process of a unit): only the first one counts,
 * the SDK drains on it, and a second must not end the process mid-drain. If we are killed outright (SIGKILL), it
 * kills itself within a quarter of a second, as if it had been killed with us.
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import { nativeMemoryEnv, processHeapMiB, wantedHeapMiB } from '../worker/heap';

/** Commands that run a worker in the CLI's process. */
const WORKER_COMMANDS = new Set(['worker', 'dev']);
const FORWARDED: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR2'];
/** Set in the started node's environment: the pid of the process it stands in for. */
const LAUNCHER_PID = 'LBAAS_LAUNCHER_PID';
/** How often the started node checks that its launcher still runs. */
const LAUNCHER_CHECK_MS = 250;

/**
 * The node arguments to start again with (`argv` as process.argv: node, script, command, ...), or null when this
 * process can run the command as it is: not a worker command, a heap flag and MALLOC_ARENA_MAX already set, or an
 * invalid LBAAS_WORKFLOW_HEAP_MIB (the worker then refuses it, naming the variable). With the heap flag set and
 * MALLOC_ARENA_MAX not, node starts again with its own arguments for the variable alone.
 */
export function relaunchArgs(argv: readonly string[], env: NodeJS.ProcessEnv, execArgv: readonly string[]): string[] | null {
  const command = argv.slice(2).find((a) => !a.startsWith('-'));
  if (command === undefined || !WORKER_COMMANDS.has(command) || argv.slice(2).some((a) => a === '--help' || a === '-h')) return null;
  if (processHeapMiB(execArgv, env) !== null) return Object.keys(nativeMemoryEnv(env)).length > 0 ? [...execArgv, ...argv.slice(1)] : null;
  const mib = wantedHeapMiB(env);
  if (mib === null) return null;
  return [...execArgv, `--max-old-space-size=${mib}`, ...argv.slice(1)];
}

type Execve = (file: string, args: string[], env: NodeJS.ProcessEnv) => never;

/** Starts node again when `relaunchArgs` says so and resolves to its exit code; null when this process runs the command. */
export function relaunch(argv: readonly string[] = process.argv): Promise<number> | null {
  const launcher = Number(process.env[LAUNCHER_PID]);
  if (launcher > 0 && launcher === process.ppid) {
    standIn(launcher);
    return null;
  }
  const args = relaunchArgs(argv, process.env, process.execArgv);
  if (!args) return null;
  const env = { ...process.env, ...nativeMemoryEnv(process.env) };
  const execve = (process as unknown as { execve?: Execve }).execve;
  if (typeof execve === 'function') {
    try {
      execve(process.execPath, [process.execPath, ...args], env);
    } catch {
      // Not on this platform (Windows): a child stands in instead.
    }
  }
  const child = spawn(process.execPath, args, { stdio: 'inherit', env: { ...env, [LAUNCHER_PID]: String(process.pid) } });
  const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
  const handlers = FORWARDED.map((s) => [s, forward(s)] as const);
  for (const [s, h] of handlers) process.on(s, h);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      for (const [s, h] of handlers) process.off(s, h);
      resolve(code ?? 128 + (signal ? (os.constants.signals[signal] ?? 0) : 0));
    });
  });
}

/** The Temporal identity the worker gets: its launcher's pid when it stands in for one (the SDK's `<pid>@<host>`). */
export function workerIdentity(env: NodeJS.ProcessEnv = process.env): string {
  const launcher = Number(env[LAUNCHER_PID]);
  return `${launcher > 0 && launcher === process.ppid ? launcher : process.pid}@${os.hostname()}`;
}

/** In the node started by `relaunch`: one shutdown per signal name, and death with the launcher. */
function standIn(launcher: number): void {
  // A listener of our own keeps node from ending the process on a signal once the SDK has stopped listening.
  for (const s of FORWARDED) process.on(s, () => undefined);
  setInterval(() => {
    if (process.ppid !== launcher) process.kill(process.pid, 'SIGKILL');
  }, LAUNCHER_CHECK_MS).unref();
}
