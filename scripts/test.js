#!/usr/bin/env node
'use strict';
// `npm test`: makes sure the Temporal CLI is installed (installing it on first use), starts one Temporal dev server
// that every test file shares (each file uses its own task queue), runs Node's test runner over dist/test, and stops
// the server. Arguments select test files or directories (default: all of dist/test).
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { ensureTemporalCli } = require('../dist/dev/temporal-path.js');
const { startDevServer } = require('../dist/dev/devserver.js');

async function main() {
  const progress = (line) => process.stderr.write(`[test] ${line}\n`);
  const temporalPath = await ensureTemporalCli({ progress });
  progress(`Temporal CLI: ${temporalPath}`);
  const server = await startDevServer({ temporalPath });
  progress(`Temporal dev server: ${server.address}`);
  // Interrupted (Ctrl-C, a CI timeout): stop the server too, or it outlives the run.
  let child = null;
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      child?.kill(signal);
      void server.stop().finally(() => process.exit(130));
    });
  }
  // Node 20 would run every .js below a directory named test (helpers and the chaos runner included): pass the
  // *.test.js files explicitly.
  const targets = process.argv.slice(2);
  // The cluster suite (dist/test/cluster) runs its own Temporal cluster and minutes of faults: `npm run test:cluster`.
  const files = targets.length > 0 ? targets.flatMap(testFiles) : testFiles(path.join('dist', 'test')).filter((f) => !f.startsWith(path.join('dist', 'test', 'cluster') + path.sep));
  if (files.length === 0) throw new Error(`no *.test.js files in ${targets.join(' ') || 'dist/test'}`);
  const code = await new Promise((resolve) => {
    child = spawn(process.execPath, ['--test', '--test-reporter=spec', ...files], {
      stdio: 'inherit',
      env: { ...process.env, TEMPORAL_CLI_PATH: temporalPath, LBAAS_TEST_TEMPORAL_ADDRESS: server.address },
    });
    child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
  });
  await server.stop();
  process.exitCode = code;
}

function testFiles(target) {
  if (!fs.statSync(target).isDirectory()) return [target];
  return fs
    .readdirSync(target, { recursive: true })
    .filter((f) => f.endsWith('.test.js'))
    .sort()
    .map((f) => path.join(target, f));
}

main().catch((err) => {
  process.stderr.write(`[test] ${err.stack || err.message}\n`);
  process.exitCode = 1;
});
