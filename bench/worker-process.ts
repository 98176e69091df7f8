/** The parent side of a benchmark worker process (see worker-child.ts). */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { FromChild, ToChild, WorkerChildConfig, WorkerStats } from './worker-child';

export class WorkerProcess {
  #nextId = 1;
  readonly #waiting = new Map<number, (s: WorkerStats) => void>();
  readonly #exited: Promise<void>;

  private constructor(readonly child: ChildProcess) {
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()));
    child.on('message', (m: FromChild) => {
      if (m.type === 'stats') {
        this.#waiting.get(m.id)?.(m.stats);
        this.#waiting.delete(m.id);
      }
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  static start(cfg: WorkerChildConfig): Promise<WorkerProcess> {
    const child = fork(path.join(__dirname, 'worker-child.js'), [], {
      env: { ...process.env, LBAAS_BENCH_WORKER: JSON.stringify(cfg) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const wp = new WorkerProcess(child);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('benchmark worker did not start within 120 s')), 120_000);
      child.on('message', (m: FromChild) => {
        if (m.type === 'ready') {
          clearTimeout(timer);
          resolve(wp);
        } else if (m.type === 'failed') {
          clearTimeout(timer);
          reject(new Error(`benchmark worker failed: ${m.message}`));
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`benchmark worker exited with ${code}`));
      });
    });
  }

  /** Request count, latency and RSS since the last reset; `reset` starts a new window. */
  stats(reset = false): Promise<WorkerStats> {
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('benchmark worker did not answer a stats request')), 30_000);
      this.#waiting.set(id, (s) => {
        clearTimeout(timer);
        resolve(s);
      });
      this.child.send({ type: 'stats', id, reset } satisfies ToChild);
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.send({ type: 'stop' } satisfies ToChild);
    const kill = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    await this.#exited;
    clearTimeout(kill);
  }
}
