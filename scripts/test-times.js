'use strict';
// A reporter for Node's test runner (scripts/test.js adds it beside the spec reporter): at the end of a run, each
// directory below dist/test with the time of its slowest file and the sum of its files' times, a file's time being
// the sum of its top-level tests' durations as the runner measured them (process start and hooks outside tests are
// not in it). Files run several at a time, so the sums overlap and do not add up to the run's time. Every file's
// time, longest first, also goes to dist/test-times.json: what the LONGEST list of scripts/test.js is checked against.
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve('dist', 'test');

module.exports = async function* testTimes(source) {
  /** file -> ms, the sum of its top-level tests */
  const files = new Map();
  const tests = new Map();
  /** group entry -> its tests reported since its last top-level suite ended */
  const pending = new Map();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { nesting, details, name } = event.data;
    let { file } = event.data;
    if (!file) continue;
    if (file.endsWith('.group.js')) {
      // A process running several files (scripts/test.js, groupEntries): each top-level suite is a file, named by
      // its path below dist/test, and its files run one after another, so the tests reported before a top-level
      // suite ends are that suite's.
      const count = (pending.get(file) ?? 0) + (details?.type !== 'suite' ? 1 : 0);
      if (nesting > 0) {
        pending.set(file, count);
        continue;
      }
      pending.set(file, 0);
      file = path.join(ROOT, name);
      tests.set(file, (tests.get(file) ?? 0) + count);
      files.set(file, (files.get(file) ?? 0) + (details?.duration_ms ?? 0));
      continue;
    }
    if (nesting === 0) files.set(file, (files.get(file) ?? 0) + (details?.duration_ms ?? 0));
    if (details?.type !== 'suite') tests.set(file, (tests.get(file) ?? 0) + 1);
  }
  const dirs = new Map();
  for (const [file, ms] of files) {
    const rel = path.relative(ROOT, path.resolve(file));
    const dir = rel.includes(path.sep) && !rel.startsWith('..') ? rel.split(path.sep)[0] : '.';
    const d = dirs.get(dir) ?? { sum: 0, tests: 0, files: [] };
    d.sum += ms;
    d.tests += tests.get(file) ?? 0;
    d.files.push({ rel, ms });
    dirs.set(dir, d);
  }
  if (dirs.size === 0) return;
  const all = [...files].map(([file, ms]) => [path.relative(ROOT, path.resolve(file)).split(path.sep).join('/'), Math.round(ms)]).sort((a, b) => b[1] - a[1]);
  try {
    fs.writeFileSync(path.join(ROOT, '..', 'test-times.json'), `${JSON.stringify(Object.fromEntries(all), null, 1)}\n`);
  } catch {
    // Only a record for the next look at LONGEST: a read-only dist/ loses nothing else.
  }
  const s = (ms) => `${(ms / 1000).toFixed(1)} s`;
  yield '\ntest times per directory: slowest file, sum of its files (files overlap), the slowest files\n';
  for (const [dir, d] of [...dirs].sort((a, b) => a[0].localeCompare(b[0]))) {
    const slowest = d.files.sort((a, b) => b.ms - a.ms);
    const top = slowest.slice(0, 5).map((x) => `${path.basename(x.rel)} ${s(x.ms)}`).join(', ');
    yield `  ${dir.padEnd(9)} ${s(slowest[0].ms).padStart(8)} ${s(d.sum).padStart(8)}  ${String(d.files.length).padStart(2)} files ${String(d.tests).padStart(4)} tests; ${top}\n`;
  }
};
