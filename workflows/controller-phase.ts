/**
 * What a service's controller is doing, as one tagged value: the loop (workflows/controller.ts) and the handlers ask
 * it questions and move it by events, instead of reading flags in combination. Pure and deterministic; stored in
 * the continue-as-new snapshot as it is.
 *
 *   idle ──apply, resync, new pool members──▶ due ──pass starts──▶ running ──converged──▶ idle
 *                                              ▲                      │
 *                                              └──retry time reached── retrying ◀──failed (revision still current)
 *   any but deleted ──delete──▶ deleting (teardown passes, retried on failure) ──teardown converged──▶ deleted
 *
 * `failures` counts consecutive failed passes of the current revision: it sets the retry delay and is reset by an
 * apply, new pool members and a converged pass. A pass that runs while more work arrives (`again`) is followed by
 * another at once, converged or not.
 */
import type { PassResult, PoolMembers } from '../contract';
import type { ValidatedSpec } from '../domain';

/** The spec the controller holds, as the passes get it: validated once, or why the stored document is not valid. */
export type CheckedSpec = { ok: true; spec: ValidatedSpec } | { ok: false; error: string };

export interface RunningPass {
  number: number;
  revision: number;
  /** The spec document (what a pool-delta pass resolves), and its validated form (what a full pass is handed). */
  spec: unknown;
  checked: CheckedSpec | null;
  teardown: boolean;
  startedAt: number;
  /** The pool members the pass reconciles (a service with `serverPool`). */
  pool: PoolMembers | null;
  /** A pool-delta pass (workflows/reconcile-delta.ts): newer pool members do not cancel it, they follow it. */
  delta?: boolean;
}

export type WorkPhase =
  /** Nothing to do until an apply, a resync, new pool members or a delete. */
  | { tag: 'idle' }
  /** A pass is wanted now (it waits for the pool's members when the spec names a pool). */
  | { tag: 'due'; failures: number }
  /** A pass runs; `again`: work arrived meanwhile, so another follows. */
  | { tag: 'running'; pass: RunningPass; again: boolean; failures: number }
  /** The last pass of the current revision failed; the next starts at `at` (workflow time). */
  | { tag: 'retrying'; at: number; failures: number }
  /**
   * The service is being deleted: `pass` is the pass in flight (a teardown, or the reconcile pass being cancelled),
   * `retryAt` the next teardown's time after a failed one.
   */
  | { tag: 'deleting'; pass: RunningPass | null; retryAt: number | null; failures: number }
  /** The teardown converged: the controller ends with this result. */
  | { tag: 'deleted'; result: PassResult };

/** Failed passes are retried after 5 s, doubling up to 10 min: quick for a blip, gentle on a broken Engine. */
export const RETRY_FIRST_MS = 5_000;
export const RETRY_MAX_MS = 10 * 60_000;

export function retryDelayAfter(failures: number): number {
  return Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (Math.max(1, failures) - 1));
}

/** Consecutive failures the phase carries (0 where it carries none). */
export function failuresOf(w: WorkPhase): number {
  return 'failures' in w ? w.failures : 0;
}

/** The pass in flight, if any. */
export function passOf(w: WorkPhase): RunningPass | null {
  return w.tag === 'running' || w.tag === 'deleting' ? w.pass : null;
}

/** When the next pass is due after a failure (null: none scheduled). */
export function retryAtOf(w: WorkPhase): number | null {
  return w.tag === 'retrying' ? w.at : w.tag === 'deleting' ? w.retryAt : null;
}

/**
 * The snapshot fields controllers wrote before the tagged phase; the previous release still wrote them beside it, and
 * its snapshots are read (workflows/legacy/controller.ts). This build writes the phase alone.
 */
export interface FlatWorkFields {
  failures: number;
  dirty: boolean;
  deleting: boolean;
  retryAt: number | null;
}

/**
 * The phase of a snapshot without one (written by an earlier build). Snapshots are taken between passes, so none is
 * running. A snapshot with work pending and a retry time took the work at once there (its retry time was ignored
 * while work was pending): it is due here too.
 */
export function phaseFromFlat(f: Partial<FlatWorkFields>): WorkPhase {
  const failures = typeof f.failures === 'number' && Number.isFinite(f.failures) ? f.failures : 0;
  const retryAt = typeof f.retryAt === 'number' && Number.isFinite(f.retryAt) ? f.retryAt : null;
  if (f.deleting) return { tag: 'deleting', pass: null, retryAt, failures };
  if (f.dirty) return { tag: 'due', failures };
  if (retryAt !== null) return { tag: 'retrying', at: retryAt, failures };
  return { tag: 'idle' };
}

/** What a phase becomes in a snapshot: a pass in flight does not survive continue-as-new, its work is due again. */
export function phaseForSnapshot(w: WorkPhase): WorkPhase {
  if (w.tag === 'running') return { tag: 'due', failures: w.failures };
  if (w.tag === 'deleting' && w.pass !== null) return { ...w, pass: null };
  return w;
}
