/**
 * What the `lbaas` CLI loads before it runs a command (cli/main.ts): the commands that only talk to Temporal
 * do not load the Engine's HTTP client (undici), the Temporal worker or the YAML parser. Each of those took a
 * noticeable share of the start-up of a command that an operator or a script runs many times.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

const MAIN = path.resolve(__dirname, '..', '..', 'cli', 'main.js');

test('loading the CLI (cli/main.js) loads neither undici, nor @temporalio/worker, nor yaml', () => {
  const loaded = execFileSync(
    process.execPath,
    ['-e', `require(${JSON.stringify(MAIN)}); console.log(JSON.stringify(Object.keys(require.cache)))`],
    { encoding: 'utf8' },
  );
  const packages = new Set(
    (JSON.parse(loaded) as string[]).map((f) => f.match(/node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/)?.[1]?.replace('\\', '/')).filter((p) => p !== undefined),
  );
  assert.deepEqual(
    ['undici', '@temporalio/worker', 'yaml'].filter((p) => packages.has(p)),
    [],
  );
  assert.ok(packages.has('commander'), 'the check sees the packages the CLI does load');
});
