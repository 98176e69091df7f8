/**
 * Worker processes for a chaos run: `node bin/lbaas.js worker`, a fixed number at a time, each one's stdout and
 * stderr kept in a log file of its own. A worker that exits is started again: after a SIGKILL of ours after a short
 * drawn pause, after an exit of its own after a second (counted, because nothing but us should end a worker).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import path from 'node:path';

/** bin/lbaas.js of this checkout (this file runs from dist/test/chaos). */
export const LBAAS_BIN = path.resolve(__dirname, '..', '..', '..', 'bin', 'lbaas.js');

/** The line `lbaas worker` prints once it polls. */
const READY = 'lbaas worker: task queue';

export interface WorkerPoolOptions {
  slots: number;
  env: NodeJS.ProcessEnv;
  logDir: string;
  /** Called with one line per lifecycle event (start, ready, kill, exit). */
  event?: (line: string) => void;
}

interface Slot {
  index: number;
  generation: number;
  child: ChildProcess | null;
  ready: boolean;
  killedByUs: boolean;
  exited: Promise<void>;
}

export class WorkerPool {
  readonly logFiles: string[] = [];
  starts = 0;
  kills = 0;
  /** Exits we did not cause (a worker giving up on an unreachable server, a crash), with when they happened. */
  ownExits: { name: string; how: string; at: number }[] = [];
  #slots: Slot[] = [];
  #stopping = false;
  #timers = new Set<NodeJS.Timeout>();

  constructor(private readonly o: WorkerPoolOptions) {}

  start(): void {
    for (let i = 0; i < this.o.slots; i++) {
      const slot: Slot = { index: i, generation: 0, child: null, ready: false, killedByUs: false, exited: Promise.resolve() };
      this.#slots.push(slot);
      this.#spawn(slot);
    }
  }

  #spawn(slot: Slot): void {
    if (this.#stopping) return;
    slot.generation++;
    slot.ready = false;
    slot.killedByUs = false;
    const name = `worker-${slot.index}-${slot.generation}`;
    const logFile = path.join(this.o.logDir, `${name}.log`);
    this.logFiles.push(logFile);
    const log = createWriteStream(logFile);
    const child = spawn(process.execPath, [LBAAS_BIN, 'worker'], { env: this.o.env, stdio: ['ignore', 'pipe', 'pipe'] });
    slot.child = child;
    this.starts++;
    this.o.event?.(`${name}: started (pid ${child.pid})`);
    const onData = (chunk: Buffer) => {
      log.write(chunk);
      if (!slot.ready && slot.child === child && chunk.toString('utf8').includes(READY)) {
        slot.ready = true;
        this.o.event?.(`${name}: polling`);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    slot.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        log.end();
        const ours = slot.killedByUs;
        if (slot.child === child) slot.child = null;
        this.o.event?.(`${name}: exited (${signal ?? `code ${code}`})`);
        if (!ours && !this.#stopping) this.ownExits.push({ name, how: signal ?? `code ${code}`, at: Date.now() });
        resolve();
        if (!this.#stopping && !ours) this.#later(1000, () => this.#spawn(slot));
      });
    });
  }

  #later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.#timers.delete(t);
      fn();
    }, ms);
    this.#timers.add(t);
  }

  /** Whether every slot has a worker that polls. */
  allReady(): boolean {
    return this.#slots.every((s) => s.ready);
  }

  async waitAllReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.allReady()) {
      if (Date.now() > deadline) throw new Error(`workers not polling within ${timeoutMs} ms (see ${this.o.logDir})`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /**
   * SIGKILLs one polling worker (`pick` chooses among them), waits until it is gone, and starts it again after
   * `restartAfterMs`. Waits (up to 60 s) for a worker to be polling when none is: killing one still bundling its
   * workflows would test nothing. Returns the victim's name, or null when none became ready.
   */
  async kill(pick: (n: number) => number, restartAfterMs: number): Promise<string | null> {
    const deadline = Date.now() + 60_000;
    let ready = this.#slots.filter((s) => s.ready && s.child);
    while (ready.length === 0) {
      if (Date.now() > deadline) return null;
      await new Promise((r) => setTimeout(r, 200));
      ready = this.#slots.filter((s) => s.ready && s.child);
    }
    const slot = ready[pick(ready.length)] as Slot;
    const name = `worker-${slot.index}-${slot.generation}`;
    slot.killedByUs = true;
    slot.ready = false;
    slot.child?.kill('SIGKILL');
    this.kills++;
    await slot.exited;
    this.#later(restartAfterMs, () => this.#spawn(slot));
    return name;
  }

  /** SIGTERM every worker and wait for them (SIGKILL after 15 s). */
  async stop(): Promise<void> {
    this.#stopping = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    await Promise.all(
      this.#slots.map(async (s) => {
        const child = s.child;
        if (!child) return;
        child.kill('SIGTERM');
        const force = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await s.exited;
        clearTimeout(force);
      }),
    );
  }
}
