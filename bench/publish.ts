/**
 * Where a benchmark's results go. Each bench writes its raw results as JSON to bench/results/<name>.json and replaces
 * exactly one marked section of one doc with tables of its figures:
 *
 *     <!-- bench:<name>:begin -->
 *     ...tables, rewritten by every run...
 *     <!-- bench:<name>:end -->
 *
 * Everything outside the markers is written by hand (what the bench measures, against which baseline, what its
 * figures mean) and never touched. A doc without the markers, or with them twice, is refused, so that a run cannot
 * put its tables in a place nobody chose.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** The repository (this file runs from dist/bench/). */
export const REPO = path.join(__dirname, '..', '..');

export function markers(name: string): { begin: string; end: string } {
  return { begin: `<!-- bench:${name}:begin -->`, end: `<!-- bench:${name}:end -->` };
}

/** `text` with the section `name` holding `body`; `doc` names the file in the error when the markers are not there once. */
export function replaceSection(text: string, name: string, body: string, doc: string): string {
  const { begin, end } = markers(name);
  const a = text.indexOf(begin);
  const b = text.indexOf(end);
  if (a < 0 || b < a) throw new Error(`${doc}: no section ${begin} ... ${end}: put both markers, each on a line of its own, where the figures belong`);
  if (text.indexOf(begin, a + 1) >= 0 || text.indexOf(end, b + 1) >= 0) throw new Error(`${doc}: the markers of the section bench:${name} appear more than once`);
  return `${text.slice(0, a + begin.length)}\n${body.trim()}\n${text.slice(b)}`;
}

export interface Publication {
  /** The section's and the results file's name: `core` writes bench/results/core.json and `bench:core`. */
  name: string;
  /** The doc that holds the section, relative to the repository: `docs/benchmarks.md`. */
  doc: string;
  results: unknown;
  /** The section's tables (markdown). */
  section: string;
}

/**
 * Writes the results file, then the doc's section; returns the files written, relative to `repo`. The results come
 * first so that hours of measuring survive a doc without its markers (the error names them; `--from-json`, where a
 * bench has it, publishes the saved results again).
 */
export function publish(p: Publication, repo: string = REPO): string[] {
  const results = path.join('bench', 'results', `${p.name}.json`);
  mkdirSync(path.join(repo, 'bench', 'results'), { recursive: true });
  writeFileSync(path.join(repo, results), `${JSON.stringify(p.results, null, 1)}\n`);
  const docFile = path.join(repo, p.doc);
  writeFileSync(docFile, replaceSection(readFileSync(docFile, 'utf8'), p.name, p.section, p.doc));
  return [results, p.doc];
}

/** The results a bench saved last (`--from-json` renders them again without measuring). */
export function readResults<T>(name: string, repo: string = REPO): T {
  return JSON.parse(readFileSync(path.join(repo, 'bench', 'results', `${name}.json`), 'utf8')) as T;
}

type Cell = string | number;

/** A markdown table; `right` right-aligns every column but the first (columns of figures). */
export function mdTable(header: readonly string[], rows: readonly (readonly Cell[])[], right = false): string {
  const line = (r: readonly Cell[]) => `| ${r.map(String).join(' | ')} |`;
  const rule = `|${header.map((_, i) => (right && i > 0 ? '---:' : '---')).join('|')}|`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}

/** Two columns: what was measured and its value (a run's command, commit, machine). */
export function factTable(rows: readonly (readonly [string, Cell])[]): string {
  return mdTable(['run', ''], rows);
}

/** The load averages of a run as `a/b/c at start, d/e/f at end`. */
export function loadText(start: readonly number[], end: readonly number[]): string {
  const f = (xs: readonly number[]) => xs.map((x) => x.toFixed(1)).join('/');
  return `${f(start)} at start, ${f(end)} at end`;
}

/** A run's date to the minute, as the tables print it. */
export function utcMinute(d: Date): string {
  return `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** The commit a run measured, as its tables name it ('unknown' outside a git checkout). */
export function gitRevision(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}
