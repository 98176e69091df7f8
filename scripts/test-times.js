'use strict';
// A reporter for Node's test runner (scripts/test.js adds it beside the spec reporter): at the end of a run, how long
// each directory below dist/test took, and its slowest files. Files run several at a time, so a file's time is the
// span from its first to its last event as this process received them, and a directory's time is the span from
// its first file's start to its last file's end; the spans overlap and do not add up to the run's time.
const path = require('node:path');

const ROOT = path.resolve('dist', 'test');

module.exports = async function* testTimes(source) {
  /** file -> { first, last, tests } */
  const files = new Map();
  for await (const event of source) {
    const file = event.data?.file;
    // Enqueued says nothing of when a file runs: the runner enqueues files long before their turn.
    if (!file || event.type === 'test:enqueue') continue;
    const now = Date.now();
    const f = files.get(file) ?? { first: now, last: now, tests: 0 };
    f.last = now;
    if ((event.type === 'test:pass' || event.type === 'test:fail') && event.data.details?.type !== 'suite') f.tests += 1;
    files.set(file, f);
  }
  const dirs = new Map();
  for (const [file, f] of files) {
    const rel = path.relative(ROOT, path.resolve(file));
    const dir = rel.includes(path.sep) && !rel.startsWith('..') ? rel.split(path.sep)[0] : '.';
    const d = dirs.get(dir) ?? { first: f.first, last: f.last, tests: 0, files: [] };
    d.first = Math.min(d.first, f.first);
    d.last = Math.max(d.last, f.last);
    d.tests += f.tests;
    d.files.push({ rel, ms: f.last - f.first });
    dirs.set(dir, d);
  }
  const s = (ms) => `${(ms / 1000).toFixed(1)} s`;
  yield '\ntest times (directory: span from its first file start to its last file end; slowest files)\n';
  for (const [dir, d] of [...dirs].sort((a, b) => a[0].localeCompare(b[0]))) {
    const slowest = d.files.sort((a, b) => b.ms - a.ms).slice(0, 3);
    yield `  ${dir.padEnd(9)} ${s(d.last - d.first).padStart(8)}  ${String(d.files.length).padStart(2)} files ${String(d.tests).padStart(4)} tests; ${slowest.map((x) => `${path.basename(x.rel)} ${s(x.ms)}`).join(', ')}\n`;
  }
};
