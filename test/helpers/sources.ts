/** The product's TypeScript sources, for tests that hold a rule over the code itself. */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/** The repository root (tests run from dist/test/...). */
export const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');

/** The rooms the product ships from (no tests, no benchmarks). */
export const PRODUCT_ROOMS = ['activities', 'cli', 'client', 'common', 'contract', 'domain', 'kube', 'worker', 'workflows'];

/** `.ts` files (no `.d.ts`) under `rooms`, relative to the root with `/` separators, sorted; a missing room is skipped. */
export function productSources(rooms: readonly string[] = PRODUCT_ROOMS): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(path.join(REPO_ROOT, dir))) {
      const rel = path.join(dir, name);
      if (statSync(path.join(REPO_ROOT, rel)).isDirectory()) walk(rel);
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(rel.split(path.sep).join('/'));
    }
  };
  for (const room of rooms) if (statSync(path.join(REPO_ROOT, room), { throwIfNoEntry: false })?.isDirectory()) walk(room);
  return out.sort();
}
