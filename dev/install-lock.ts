/**
 * A lock file that serializes installs into one cache directory across processes (two `npm test` runs, `npm test`
 * beside `npm start`): the first takes it, the others wait, and a holder that died cannot block anyone for long.
 *
 * The lock is a file created with O_EXCL holding the holder's pid and host. It counts as stale, and is broken, when
 * its holder is a process on this host that no longer exists (a crash or SIGKILL: noticed at the next poll), or when
 * its holder has not touched it for `staleMs` (a holder on another host sharing the directory, or a reused pid):
 * holders touch it every `refreshMs` while they work. Two waiters that both judge it stale both try to remove it;
 * each first checks that the file still holds what it judged, so neither removes a lock taken in between except in
 * that check's own instant (the window proper-lockfile has too; harmless here, as installs are atomic renames).
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { open, readFile, rm, stat, utimes } from 'node:fs/promises';

export interface InstallLockOptions {
  /** A lock untouched this long is stale. 60 s: twenty missed refreshes, far beyond any event-loop stall. */
  staleMs?: number;
  /** How often the holder touches the lock. 3 s: cheap, and well inside staleMs. */
  refreshMs?: number;
  /** How often a waiter looks again. 200 ms: a wait follows an install of seconds to minutes. */
  pollMs?: number;
  /** Told once when this process starts waiting, with what the lock file says about its holder. */
  onWait?: (holder: string) => void;
}

interface Holder {
  pid: number;
  host: string;
  /** Tells this holding apart from a later one by the same process. */
  token: string;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function readHolder(file: string): Promise<{ text: string; holder: Holder | null; ageMs: number } | null> {
  try {
    const [text, st] = await Promise.all([readFile(file, 'utf8'), stat(file)]);
    let holder: Holder | null = null;
    try {
      holder = JSON.parse(text) as Holder;
    } catch {
      // Being written this very moment, or garbage: only its age can tell.
    }
    return { text, holder, ageMs: Date.now() - st.mtimeMs };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Runs `fn` while holding the lock file `file`, waiting for another holder first. */
export async function withInstallLock<T>(file: string, fn: () => Promise<T>, opts: InstallLockOptions = {}): Promise<T> {
  const staleMs = opts.staleMs ?? 60_000;
  const refreshMs = opts.refreshMs ?? 3_000;
  const pollMs = opts.pollMs ?? 200;
  const me: Holder = { pid: process.pid, host: hostname(), token: randomUUID() };
  const mine = JSON.stringify(me);
  let told = false;
  for (;;) {
    try {
      const handle = await open(file, 'wx');
      try {
        await handle.writeFile(mine);
      } finally {
        await handle.close();
      }
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const seen = await readHolder(file);
    if (!seen) continue;
    const { holder, ageMs } = seen;
    const dead = holder !== null && holder.host === me.host && !alive(holder.pid);
    // A file without a readable holder gets a short grace: its writer may be between create and write.
    if (dead || ageMs > staleMs || (holder === null && ageMs > Math.min(staleMs, 5_000))) {
      const again = await readHolder(file);
      if (again?.text === seen.text) await rm(file, { force: true });
      continue;
    }
    if (!told) {
      told = true;
      opts.onWait?.(holder ? `pid ${holder.pid} on ${holder.host}` : 'an unknown process');
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
  const refresh = setInterval(() => {
    const now = new Date();
    utimes(file, now, now).catch(() => {});
  }, refreshMs);
  refresh.unref();
  try {
    return await fn();
  } finally {
    clearInterval(refresh);
    // Only our own: had a waiter wrongly judged us stale, the file is now another holder's.
    if ((await readHolder(file))?.text === mine) await rm(file, { force: true });
  }
}
