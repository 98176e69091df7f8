/**
 * Stops a process of the test's (its own Temporal dev server) when the test process dies without its `after` hooks:
 * a worker crash aborts the process, and the dev server it spawned would keep running, holding ports and CPU.
 *
 * A detached watcher holds the read end of a pipe whose write end only this process has: the pipe closes when this
 * process dies however it dies (an abort, SIGKILL), which a poll of its pid could not tell from a zombie. The
 * watcher then sends SIGTERM, and SIGKILL 5 s later. It exits by itself when the watched process is gone first
 * (stopped the ordinary way), so it never signals a pid the system has since given to another process.
 */
import { spawn, type ChildProcess } from 'node:child_process';

const WATCHER = `
const pid = Number(process.argv[1]);
const alive = () => { try { process.kill(pid, 0); return true; } catch { return false; } };
const gone = setInterval(() => { if (!alive()) process.exit(0); }, 500);
process.stdin.on('error', () => {});
process.stdin.on('close', () => {
  clearInterval(gone);
  if (!alive()) process.exit(0);
  try { process.kill(pid, 'SIGTERM'); } catch {}
  const end = Date.now() + 5000;
  const wait = setInterval(() => {
    if (!alive()) process.exit(0);
    if (Date.now() > end) { try { process.kill(pid, 'SIGKILL'); } catch {} process.exit(0); }
  }, 100);
});
process.stdin.resume();
`;

export interface Reaper {
  /** The watcher's process (for tests). */
  process: ChildProcess;
  /** Ends the watcher without touching the watched process (it was stopped the ordinary way). */
  cancel(): void;
}

/** Starts a watcher that stops `pid` when this process dies. It holds nothing that keeps this process running. */
export function stopWhenThisProcessDies(pid: number): Reaper {
  const watcher = spawn(process.execPath, ['-e', WATCHER, String(pid)], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  watcher.unref();
  // Never written to; only its closing matters. Unref'd so that an open pipe does not keep the test running.
  (watcher.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  watcher.stdin?.on('error', () => undefined);
  return {
    process: watcher,
    cancel() {
      if (watcher.exitCode === null && watcher.signalCode === null) watcher.kill('SIGKILL');
    },
  };
}
