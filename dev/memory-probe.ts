/**
 * Where a benchmark worker's memory is (dev/worker-process.ts, `memoryLogMs`): process.memoryUsage() and V8's heap
 * spaces of the main thread (the activities), and the V8 heap of the SDK's workflow thread, which the main thread
 * cannot read on Node 20 (Worker#getHeapStatistics came with Node 22.16). To read it, the workflow thread is started
 * through a wrapper that first posts its own heap statistics on a BroadcastChannel every second, then loads the SDK's
 * thread file unchanged; the SDK's own messages keep their port. Only the benchmark's workers install it.
 */
import v8 from 'node:v8';
import workerThreads from 'node:worker_threads';

const CHANNEL = 'lbaas-workflow-heap';
const mb = (n: number) => Math.round((n / 2 ** 20) * 10) / 10;

/** The latest heap statistics of each workflow thread, by thread id. */
const threadHeaps = new Map<number, { used: number; total: number }>();

/** Makes every worker_threads.Worker started from now on (the SDK's workflow threads) report its heap. */
export function installWorkflowHeapProbe(): void {
  const channel = new BroadcastChannel(CHANNEL);
  channel.onmessage = (e) => {
    const m = (e as { data: { id: number; used: number; total: number } }).data;
    threadHeaps.set(m.id, { used: m.used, total: m.total });
  };
  (channel as unknown as { unref(): void }).unref();
  const Original = workerThreads.Worker;
  class ProbedWorker extends Original {
    constructor(filename: string | URL, options?: workerThreads.WorkerOptions) {
      if (options?.eval || typeof filename !== 'string') {
        super(filename, options);
        return;
      }
      const wrapper = `
        const v8 = require('node:v8');
        const { threadId } = require('node:worker_threads');
        const channel = new BroadcastChannel(${JSON.stringify(CHANNEL)});
        channel.unref();
        const post = () => { const h = v8.getHeapStatistics(); channel.postMessage({ id: threadId, used: h.used_heap_size, total: h.total_heap_size }); };
        setInterval(post, 1000).unref();
        require(${JSON.stringify(filename)});`;
      super(wrapper, { ...options, eval: true });
    }
  }
  (workerThreads as { Worker: typeof Original }).Worker = ProbedWorker;
}

/** The worker's memory in MiB: RSS, the main thread's heap (used, committed, per space), buffers, workflow threads' heaps. */
export function memoryNow(): Record<string, number> {
  const m = process.memoryUsage();
  const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, mb(s.space_used_size)]));
  let wfUsed = 0;
  let wfTotal = 0;
  for (const h of threadHeaps.values()) {
    wfUsed += h.used;
    wfTotal += h.total;
  }
  return {
    t: Date.now(),
    rss: mb(m.rss),
    heapUsed: mb(m.heapUsed),
    heapTotal: mb(m.heapTotal),
    external: mb(m.external),
    arrayBuffers: mb(m.arrayBuffers),
    workflowHeapUsed: mb(wfUsed),
    workflowHeapTotal: mb(wfTotal),
    ...spaces,
  };
}
