#!/usr/bin/env node
'use strict';
// The test runner that scripts/test.js starts: Node's `run()` over the *.test.js files given, in the order given,
// LBAAS_TEST_FILES_AT_ONCE at a time, each in a process of its own (scripts/test.js gives the serverless files as a
// few entry files that each run several), reported by the spec reporter and
// scripts/test-times.js on stdout. Not `node --test <files>`: Node 20 sorts the files it is given by path, so the
// longest files (scripts/test.js puts them first) would start last and stretch the run; `run()` keeps the order, on
// Node 20 and 24 alike. Exits 1 when a test or a file failed.
const { run } = require('node:test');
const reporters = require('node:test/reporters');
const { PassThrough } = require('node:stream');
const testTimes = require('./test-times.js');

const files = process.argv.slice(2);
const concurrency = Number(process.env.LBAAS_TEST_FILES_AT_ONCE) || 1;
/**
 * A file still running after this long fails, and its process is ended (its after hooks too, if they hang): a stuck
 * file is reported by name instead of holding the whole run until CI's own limit (a call that Temporal's Java
 * time-skipping test server never answers, as its queries during a continue-as-new once were: test/helpers/
 * time-skipping.ts). The longest files take under two minutes on a loaded machine.
 */
const FILE_TIMEOUT_MS = 15 * 60_000;
const toSpec = new PassThrough({ objectMode: true });
const toTimes = new PassThrough({ objectMode: true });
let failed = 0;
const stream = run({ files, concurrency, timeout: FILE_TIMEOUT_MS });
stream.on('data', (event) => {
  if (event.type === 'test:fail' && !event.data.todo && !event.data.skip) failed++;
  toSpec.write(event);
  toTimes.write(event);
});
stream.on('end', () => {
  toSpec.end();
  toTimes.end();
});
const spec = toSpec.compose(new reporters.spec());
spec.pipe(process.stdout, { end: false });
// The times come after the spec reporter's summary.
spec.on('end', () => toTimes.compose(testTimes).pipe(process.stdout, { end: false }));
process.on('exit', () => {
  if (failed > 0) process.exitCode = 1;
});
