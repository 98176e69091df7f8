/**
 * A concurrency limit: at most `max` of the functions handed to the returned runner are running at once, the others
 * wait in arrival order. A place freed is handed to the next waiter directly, so no later call can slip in between.
 * Pure and deterministic (workflows use it to bound the activities a reconciliation has pending, activities to bound
 * the Engine requests of a group).
 */
export function concurrencyLimit(max: number): <T>(fn: () => Promise<T>) => Promise<T> {
  if (!Number.isInteger(max) || max < 1) throw new Error(`concurrencyLimit: max must be a positive integer, got ${max}`);
  let running = 0;
  const waiting: (() => void)[] = [];
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (running < max) running++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}
