/**
 * The V8 heap limit of a worker process, set where the process starts. The SDK starts its workflow thread (where the
 * cached runs live) without resource limits of its own, and such a thread takes the heap limit of the process's
 * `--max-old-space-size`. Node reads that flag only when it starts, so `lbaas worker` and `lbaas dev` start node again
 * with it (cli/relaunch.ts), and the bench's and tests' worker processes get it on their command line
 * (dev/child-worker.ts). One limit then bounds both the main thread and the workflow thread.
 *
 * This module is loaded by bin/lbaas.js before anything else: it must stay free of heavy imports.
 */

/**
 * The heap limit a worker gets when LBAAS_WORKFLOW_HEAP_MIB is not set: 448 MiB. Why bound it: with Node's default
 * limit (about 4 GiB here) V8 lets the workflow thread's heap fill with garbage long before it collects; at 1000
 * services applied at once the live data was about 230-300 MiB while that heap reached 860 MiB and the worker 2 GiB
 * of RSS (docs/scaling.md). With the workflow cache it sizes (worker/main.ts, CACHED_WORKFLOWS_PER_HEAP_MIB) 448 MiB
 * kept a 1000-service fleet's worker at 975 MiB over its whole life, apply to delete; 512 MiB with 4 runs per MiB
 * took it to 1048 MiB (docs/scaling.md, "The worker's memory").
 */
export const DEFAULT_WORKFLOW_HEAP_MIB = 448;
/** Below about 128 MiB the SDK's own workflow code and a handful of runs leave no room to work in. */
export const MIN_WORKFLOW_HEAP_MIB = 128;

/**
 * The C library's malloc arenas a worker's node starts with when MALLOC_ARENA_MAX is not set: 2. glibc gives each
 * thread that allocates while the others hold their arena an arena of its own (up to 8 per CPU), and the SDK's Rust
 * core, node's and libuv's threads all allocate: a fleet run's worker held 11 arenas of 216 MiB plus the main one,
 * mostly freed but kept (docs/scaling.md, "The delete phase, profiled"). glibc reads the variable only when the process
 * starts, so it is set where `lbaas worker` starts node again (cli/relaunch.ts); other C libraries ignore it.
 */
export const DEFAULT_MALLOC_ARENA_MAX = 2;

/** The variables a worker's node must start with that `env` lacks: MALLOC_ARENA_MAX, unless the operator set it. */
export function nativeMemoryEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  return env.MALLOC_ARENA_MAX === undefined || env.MALLOC_ARENA_MAX === '' ? { MALLOC_ARENA_MAX: String(DEFAULT_MALLOC_ARENA_MAX) } : {};
}

const HEAP_FLAG = /^--max[-_]old[-_]space[-_]size=(\d+)$/;

/** The `--max-old-space-size` among node arguments (the last one wins, as in node), or null. */
export function heapFlagMiB(args: readonly string[]): number | null {
  let mib: number | null = null;
  for (const a of args) {
    const m = HEAP_FLAG.exec(a);
    if (m) mib = Number(m[1]);
  }
  return mib;
}

/** The heap limit this process started with: its own node arguments, else NODE_OPTIONS; null when neither set one. */
export function processHeapMiB(execArgv: readonly string[], env: NodeJS.ProcessEnv): number | null {
  return heapFlagMiB(execArgv) ?? heapFlagMiB((env.NODE_OPTIONS ?? '').split(/\s+/));
}

/** LBAAS_WORKFLOW_HEAP_MIB when it is a valid limit, the default when unset; null when invalid (the worker refuses it). */
export function wantedHeapMiB(env: NodeJS.ProcessEnv): number | null {
  const raw = env.LBAAS_WORKFLOW_HEAP_MIB;
  if (raw === undefined || raw === '') return DEFAULT_WORKFLOW_HEAP_MIB;
  const n = Number(raw);
  return Number.isInteger(n) && n >= MIN_WORKFLOW_HEAP_MIB ? n : null;
}
