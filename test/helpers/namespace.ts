/**
 * Every test file gets a Temporal namespace of its own on the shared dev server, so that files can run at the same
 * time: workflow ids (`lbaas/<uid>`), the full-resync Schedule, `lbaas list` and the full resync's scan of all
 * controllers are per namespace. `npm test` (scripts/test.js) registers one for each file it runs when it starts
 * the server; the file's helpers find theirs from the path of the file being run (process.argv[1]).
 */
import path from 'node:path';

/** Where the compiled test files are (dist/test): namespaces are named after paths below it. */
const TEST_ROOT = path.resolve(__dirname, '..');

/**
 * The namespace of a compiled test file: `t-` and its path below dist/test without `.test.js`, `/` as `-`
 * (dist/test/cli/service.test.js -> t-cli-service). A file outside dist/test gets null.
 */
export function namespaceOfTestFile(file: string): string | null {
  const rel = path.relative(TEST_ROOT, path.resolve(file));
  if (rel.startsWith('..') || path.isAbsolute(rel) || !rel.endsWith('.test.js')) return null;
  return `t-${rel.slice(0, -'.test.js'.length).split(path.sep).join('-')}`;
}
