/**
 * The work queue of lbaas kube, shaped like client-go's: keys (a Service's `namespace/name`, or the node pool) rather
 * than events, so a burst of changes to one object is one sync of its latest state; at most one sync per key at a
 * time (a change during a sync runs it again afterwards); a failed sync retried after a delay that doubles per key.
 */
export type SyncOutcome = 'done' | { retry: string };

const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 60_000;

export class WorkQueue {
  readonly #waiting: string[] = [];
  readonly #queued = new Set<string>();
  readonly #running = new Set<string>();
  readonly #dirty = new Set<string>();
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #failures = new Map<string, number>();
  #active = 0;
  #stopped = false;
  #idle: (() => void)[] = [];

  constructor(
    readonly sync: (key: string) => Promise<SyncOutcome>,
    readonly concurrency: number,
    readonly log: (line: string) => void,
  ) {}

  add(key: string): void {
    if (this.#stopped) return;
    const timer = this.#timers.get(key);
    if (timer) {
      clearTimeout(timer);
      this.#timers.delete(key);
    }
    if (this.#running.has(key)) {
      this.#dirty.add(key);
      return;
    }
    if (this.#queued.has(key)) return;
    this.#queued.add(key);
    this.#waiting.push(key);
    this.#pump();
  }

  /** Stops taking work; resolves when the syncs in flight have finished. Retries pending are dropped. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#timers.clear();
    this.#waiting.length = 0;
    this.#queued.clear();
    this.#dirty.clear();
    if (this.#active > 0) await new Promise<void>((resolve) => this.#idle.push(resolve));
  }

  /** Accepts work again after stop() (a process that leads again). */
  restart(): void {
    this.#stopped = false;
    this.#failures.clear();
  }

  #pump(): void {
    while (!this.#stopped && this.#active < this.concurrency && this.#waiting.length > 0) {
      const key = this.#waiting.shift() as string;
      this.#queued.delete(key);
      this.#running.add(key);
      this.#active++;
      void this.#run(key);
    }
  }

  async #run(key: string): Promise<void> {
    let outcome: SyncOutcome;
    try {
      outcome = await this.sync(key);
    } catch (err) {
      outcome = { retry: (err as Error)?.message ?? String(err) };
    }
    this.#running.delete(key);
    this.#active--;
    if (outcome === 'done') this.#failures.delete(key);
    if (this.#dirty.delete(key)) this.add(key);
    else if (outcome !== 'done' && !this.#stopped) {
      const n = (this.#failures.get(key) ?? 0) + 1;
      this.#failures.set(key, n);
      const delay = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (n - 1));
      this.log(`${key}: ${outcome.retry}; retrying in ${Math.round(delay / 1000)} s`);
      this.#timers.set(
        key,
        setTimeout(() => {
          this.#timers.delete(key);
          this.add(key);
        }, delay),
      );
    }
    if (this.#active === 0) for (const resolve of this.#idle.splice(0)) resolve();
    this.#pump();
  }
}
