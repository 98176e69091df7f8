/**
 * What `lbaas worker` runs with when no environment is set, so that the benchmark's figures are a default worker's:
 * the Engine budget of worker/engine-settings.ts, the heap limit and the malloc arenas of worker/heap.ts (the arenas
 * are set by dev/child-worker.ts as by `lbaas worker`), nothing else. A mode that
 * changes a setting does so only to show its effect beside the default (the core workload's `no-budget` mode).
 */
import type { PacingOptions } from '../activities/engine';
import { engineBudgetFromEnv } from '../worker/engine-settings';
import { DEFAULT_WORKFLOW_HEAP_MIB, nativeMemoryEnv } from '../worker/heap';

/** The settings a benchmark worker process was started with. */
export interface WorkerSettings {
  /** The Engine request budget; null: none (every request sent at once, as the benchmark's workers once did). */
  pacing: PacingOptions | null;
  /** `--max-old-space-size` of its node. */
  heapMiB: number;
  maxCachedWorkflows?: number;
  /** Variables added to its environment (MALLOC_ARENA_MAX at its default is what every worker gets: not a change). */
  env?: Record<string, string>;
}

export const WORKER_DEFAULTS: WorkerSettings = { pacing: engineBudgetFromEnv({}).pacing, heapMiB: DEFAULT_WORKFLOW_HEAP_MIB };

/** Whether `s` is exactly what `lbaas worker` does without environment. */
export function isDefault(s: WorkerSettings): boolean {
  return JSON.stringify(normalized(s)) === JSON.stringify(normalized(WORKER_DEFAULTS));
}

function normalized(s: WorkerSettings): unknown {
  const sorted = (o: object | null | undefined) => (o ? Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b))) : null);
  return { pacing: sorted(s.pacing), heapMiB: s.heapMiB, maxCachedWorkflows: s.maxCachedWorkflows ?? null, env: changedEnv(s.env) };
}

/** The variables that change what `lbaas worker` would start with, or null: the default MALLOC_ARENA_MAX is none. */
function changedEnv(env: Record<string, string> | undefined): unknown {
  const defaults = nativeMemoryEnv({});
  const changed = Object.entries(env ?? {}).filter(([k, v]) => defaults[k] !== v);
  return changed.length > 0 ? Object.fromEntries(changed.sort(([a], [b]) => a.localeCompare(b))) : null;
}
