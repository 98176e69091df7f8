/**
 * Waiting for a long Temporal call (a pass, a delete) with a deadline, polling progress about once a second meanwhile.
 * Progress lines go to stderr only (stdout stays one JSON document) and only when they change, with a reminder every
 * 10 s that we are still waiting; a workflow task that no worker takes is explained there too (client/pickup.ts).
 */
import type { Client } from '@temporalio/client';
import { PickupWatch } from '../client/pickup';
import { elapsed } from './views';

export const PROGRESS_EVERY_MS = 1_000;
/** Unchanged progress is repeated this often, so a person sees the CLI is alive. */
const REPEAT_UNCHANGED_MS = 10_000;

export interface WaitOptions<T> {
  client: Client;
  run: () => Promise<T>;
  timeoutMs: number;
  /** Lines describing what is still pending; called about once a second. */
  progress?: () => Promise<string[]>;
  /** Where progress is printed; no printing when absent (the lines are still collected for the timeout message). */
  print?: (line: string) => void;
  /** Say why the workflow waited on is not picked up, if it is not (client/pickup.ts), whatever `print` is. */
  pickup?: PickupOptions;
}

export interface PickupOptions {
  /** The workflow the call waits on: its tasks and those of its pending children are looked at. */
  workflowId: string;
  taskQueue: string;
  /** Where the diagnosis goes (stderr: stdout stays one JSON document). */
  say: (line: string) => void;
}

/**
 * Checks every 5 s whether the workflow's task has waited 10 s or more for a worker, and says why with the fix then and
 * every 30 s while it lasts (client/pickup.ts), so that a wait is never silent.
 */
export function watchPickup(client: Client, o: PickupOptions, started: number): PickupWatch {
  return new PickupWatch({
    client,
    namespace: client.options.namespace,
    taskQueue: o.taskQueue,
    target: () => ({ workflowId: o.workflowId }),
    report: (d) => o.say(`[${elapsed(started)}] warning: ${d.message}`),
    resolved: () => o.say(`[${elapsed(started)}] the waiting task was picked up`),
  }).start();
}

export type WaitOutcome<T> = { done: true; value: T } | { done: false; lastProgress: string[] };

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

export async function waitWithProgress<T>(o: WaitOptions<T>): Promise<WaitOutcome<T>> {
  const started = Date.now();
  const abort = new AbortController();
  const work = o.client.withAbortSignal(abort.signal, o.run).then((value) => ({ done: true as const, value }));
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<{ done: false }>((resolve) => {
    timer = setTimeout(() => resolve({ done: false }), o.timeoutMs);
  });
  let stopped = false;
  let last: string[] = [];
  let wake: (() => void) | null = null;
  const poll = async () => {
    let printed = '';
    let printedAt = 0;
    let seen = false;
    while (!stopped) {
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, PROGRESS_EVERY_MS).unref();
      });
      if (stopped || !o.progress) return;
      try {
        last = await o.progress();
      } catch {
        continue; // Progress is best effort: the wait itself reports real failures.
      }
      if (last.length > 0) seen = true;
      const text = last.length > 0 ? last.join('\n') : seen ? 'finishing the pass' : 'waiting for the pass to start';
      if (!stopped && o.print && (text !== printed || Date.now() - printedAt >= REPEAT_UNCHANGED_MS)) {
        const prefix = `[${elapsed(started)}] `;
        for (const line of text.split('\n')) o.print(`${prefix}${line}`);
        printed = text;
        printedAt = Date.now();
      }
    }
  };
  const polling = poll();
  const pickup = o.pickup ? watchPickup(o.client, o.pickup, started) : null;
  try {
    const r = await Promise.race([work, timeout]);
    if (r.done) return r;
    // Timed out before the first poll: one look, so the caller can say what is still pending.
    if (last.length === 0 && o.progress) last = await Promise.race([o.progress().catch(() => []), sleep(2_000).then(() => [])]);
    return { done: false, lastProgress: last };
  } finally {
    stopped = true;
    // Not awaited: a check in flight reports nothing once stopped, and the command need not wait for its answer.
    void pickup?.stop();
    (wake as (() => void) | null)?.();
    clearTimeout(timer);
    abort.abort();
    work.catch(() => undefined);
    await polling.catch(() => undefined);
  }
}

/** `run` bounded by `ms`; past it, the call is abandoned and `onTimeout()` is thrown (a CliError with exit 3). */
export async function within<T>(client: Client, ms: number, run: () => Promise<T>, onTimeout: () => Error, pickup?: PickupOptions): Promise<T> {
  const o = await waitWithProgress({ client, run, timeoutMs: ms, ...(pickup ? { pickup } : {}) });
  if (!o.done) throw onTimeout();
  return o.value;
}
