/**
 * One Temporal server process of the local cluster (`temporal-server --root <work> --config config/<name> --env
 * cluster start --service <service>`): started, killed and started again with the same configuration and ports, its
 * output appended to a log file of its own.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import type { TemporalService } from './config';

/** SIGTERM lets a history host hand its shards over; one that has not exited after this is killed. */
const STOP_GRACE_MS = 15_000;

export class ServerProcess {
  #child: ChildProcess | null = null;
  #exited: Promise<void> = Promise.resolve();
  #tail = '';
  /** Exits nobody asked for (crashes, a failed start), with their exit code or signal. */
  readonly unexpectedExits: string[] = [];
  #expectExit = false;
  /** When the current process was started (to tell its membership record from an earlier one's). */
  startedAt: Date | null = null;
  /** Called on every exit nobody asked for, with the same text as unexpectedExits (lbaas dev --cluster prints it). */
  onUnexpectedExit: ((reason: string) => void) | null = null;

  constructor(
    /** frontend, history-1, history-2, matching, worker */
    readonly name: string,
    readonly service: TemporalService,
    readonly grpcPort: number,
    private readonly spawnArgs: { binary: string; root: string; configDir: string; env: string; logFile: string },
  ) {}

  get pid(): number {
    const c = this.#child;
    return c && c.exitCode === null && c.signalCode === null ? (c.pid ?? -1) : -1;
  }

  get running(): boolean {
    return this.pid > 0;
  }

  /** Where its output goes (appended across restarts). */
  get logFile(): string {
    return this.spawnArgs.logFile;
  }

  /** The last 16 KiB of its output (for error messages). */
  logTail(): string {
    return this.#tail;
  }

  start(): void {
    if (this.running) return;
    const a = this.spawnArgs;
    const args = ['--root', a.root, '--config', a.configDir, '--env', a.env, '--allow-no-auth', 'start', '--service', this.service];
    const c = spawn(a.binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#child = c;
    this.#expectExit = false;
    this.startedAt = new Date();
    const log = createWriteStream(a.logFile, { flags: 'a' });
    const onData = (chunk: Buffer) => {
      this.#tail = (this.#tail + chunk.toString('utf8')).slice(-16_384);
      log.write(chunk);
    };
    c.stdout?.on('data', onData);
    c.stderr?.on('data', onData);
    this.#exited = new Promise((resolve) =>
      c.once('exit', (code, signal) => {
        log.end();
        if (!this.#expectExit) {
          const reason = `${this.name} exited on its own (${signal ?? `code ${code}`})`;
          this.unexpectedExits.push(reason);
          this.onUnexpectedExit?.(reason);
        }
        resolve();
      }),
    );
  }

  /** SIGKILL, as a host that dies without a word; resolves once it is gone. */
  async kill(): Promise<void> {
    const c = this.#child;
    if (!c || !this.running) return;
    this.#expectExit = true;
    c.kill('SIGKILL');
    await this.#exited;
  }

  /** SIGTERM, then SIGKILL after a grace time; resolves once it is gone. */
  async stop(): Promise<void> {
    const c = this.#child;
    if (!c || !this.running) return;
    this.#expectExit = true;
    c.kill('SIGTERM');
    const force = setTimeout(() => c.kill('SIGKILL'), STOP_GRACE_MS);
    await this.#exited;
    clearTimeout(force);
  }

  /** Synchronous last resort when our own process exits: no server may outlive it. */
  killNow(): void {
    if (this.running) {
      this.#expectExit = true;
      this.#child?.kill('SIGKILL');
    }
  }
}
