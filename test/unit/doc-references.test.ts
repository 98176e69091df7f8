/**
 * The repository explains itself: every Markdown file that a comment or a doc names must exist in the repository,
 * with the heading its `#anchor` names, and nothing may point at the team's private brief that a clone does not
 * contain. Scanned: the comments of every tracked TypeScript/JavaScript file (parsed with the TypeScript compiler,
 * so string literals such as file names the code writes are not mistaken for references), `#` comments of YAML
 * and shell files, and the whole text of Markdown files.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..', '..', '..');

/**
 * The brief's files, named without spelling them out here so this file does not trip its own check. A reference
 * is fine only as a path that resolves inside the repository (the docs/ page about the Engine API does); these
 * names only choose the message when it does not.
 */
const BRIEF_FILES = ['product', 'design', 'temporal-notes'].map((n) => `${n}.md`);
const BRIEF_DIRS = [['..', 'shared'].join('/'), ['', 'work', 'shared'].join('/')];

/** A Markdown path, optionally with an anchor and directories before it (`docs/spec.md#validation`). */
const MD_REFERENCE = /(?:[\w.-]+\/)*[\w.-]+\.md(?:#[\w-]+)?/g;

export interface Problem {
  file: string;
  reference: string;
  why: string;
}

/** The text a reader sees as prose: comments of code files, `#` comments of YAML and shell, Markdown whole. */
export function proseOf(file: string, text: string): string[] {
  const ext = path.extname(file);
  if (['.ts', '.js', '.mjs', '.cjs'].includes(ext)) return codeComments(file, text);
  if (ext === '.md') return [text];
  if (['.yaml', '.yml', '.sh', ''].includes(ext)) {
    return text.split('\n').flatMap((line) => {
      const i = line.indexOf('#');
      return i >= 0 ? [line.slice(i)] : [];
    });
  }
  return [];
}

function codeComments(file: string, text: string): string[] {
  const kind = file.endsWith('.ts') ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, kind);
  const seen = new Set<number>();
  const out: string[] = [];
  // Every comment lies in a gap before or after some node or node list; reading the comments at both edges of each
  // (leading ones start on a later line, trailing ones on the same line) finds them all without building token nodes.
  const at = (pos: number) => {
    for (const r of [...(ts.getLeadingCommentRanges(text, pos) ?? []), ...(ts.getTrailingCommentRanges(text, pos) ?? [])]) {
      if (seen.has(r.pos)) continue;
      seen.add(r.pos);
      out.push(text.slice(r.pos, r.end));
    }
  };
  const visit = (node: ts.Node): void => {
    at(node.pos);
    at(node.end);
    ts.forEachChild(node, visit, (nodes) => {
      at(nodes.pos);
      at(nodes.end);
      nodes.forEach(visit);
    });
  };
  visit(source);
  return out;
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const counts = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = (m[1] ?? '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = counts.get(base) ?? 0;
    counts.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

export interface Repo {
  exists(relative: string): boolean;
  read(relative: string): string;
}

/** Every problem in the prose of one file (path relative to the repository root). */
export function checkProse(file: string, prose: readonly string[], repo: Repo): Problem[] {
  const problems: Problem[] = [];
  for (const text of prose) {
    for (const dir of BRIEF_DIRS) {
      if (text.includes(dir)) problems.push({ file, reference: dir, why: 'the team brief is not part of the repository' });
    }
    for (const m of text.matchAll(MD_REFERENCE)) {
      const reference = m[0];
      const start = m.index ?? 0;
      const word = text.slice(text.lastIndexOf(' ', start) + 1, start);
      if (word.includes('://') || /[\w-]$/.test(text.slice(0, start))) continue; // part of a URL or a longer word
      const [target = '', anchor] = reference.split('#');
      const candidates = [path.posix.normalize(path.posix.join(path.posix.dirname(file), target)), path.posix.normalize(target)];
      const found = candidates.find((c) => !c.startsWith('..') && repo.exists(c));
      if (!found) {
        // Unresolved, the brief's file names mean the brief (the Engine API one too, unless it was meant as docs/...).
        const name = path.posix.basename(target);
        const brief = BRIEF_FILES.includes(name) || (name === 'engine-api.md' && !candidates.includes('docs/engine-api.md'));
        problems.push({ file, reference, why: brief ? 'names a file of the team brief; point at docs/ instead' : 'no such file in the repository' });
        continue;
      }
      if (anchor !== undefined && !anchorsOf(repo.read(found)).has(anchor)) {
        problems.push({ file, reference, why: `${found} has no heading with the anchor #${anchor}` });
      }
    }
  }
  return problems;
}

/** The tracked files: what a clone contains (build output, node_modules and local state are not). */
function trackedFiles(): string[] {
  let out: string;
  try {
    out = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' });
  } catch (err) {
    throw new Error(`doc references are checked over the tracked files, which needs git and a checkout at ${ROOT}: ${(err as Error).message}`);
  }
  return out.split('\0').filter((f) => f !== '' && existsSync(path.join(ROOT, f)));
}

const disk: Repo = {
  exists: (relative) => existsSync(path.join(ROOT, relative)),
  read: (relative) => readFileSync(path.join(ROOT, relative), 'utf8'),
};

/** An in-memory repository for the tests that prove the check can fail. */
function memoryRepo(files: Record<string, string>): Repo {
  return { exists: (f) => f in files, read: (f) => files[f] ?? '' };
}

const SPEC_DOC = '# Spec\n\n## Validation\n\n## Temporal surface\n\n### Search attributes\n';

describe('doc references: the checker', () => {
  const repo = memoryRepo({ 'docs/spec.md': SPEC_DOC, 'README.md': '# lbaas\n\n## Quick start\n' });
  const check = (file: string, text: string) => checkProse(file, proseOf(file, text), repo).map((p) => `${p.reference}: ${p.why}`);

  test('a comment naming a file of the team brief, bare or by path, is a problem', () => {
    const [product, design, notes] = BRIEF_FILES;
    assert.deepEqual(check('workflows/a.ts', `/** Validation (${product} section 1). */\nexport const a = 1;\n`), [
      `${product}: names a file of the team brief; point at docs/ instead`,
    ]);
    assert.deepEqual(check('activities/b.ts', `// see ${['..', 'shared', design].join('/')} point 4 and ${notes}\nexport {};\n`), [
      `${BRIEF_DIRS[0]}: the team brief is not part of the repository`,
      `${['..', 'shared', design].join('/')}: names a file of the team brief; point at docs/ instead`,
      `${notes}: names a file of the team brief; point at docs/ instead`,
    ]);
    assert.deepEqual(check('simulator/c.ts', `/* ${BRIEF_DIRS[1]}/x */\n`), [`${BRIEF_DIRS[1]}: the team brief is not part of the repository`]);
  });

  test('a bare engine-api.md in code is a problem; docs/engine-api.md needs the file to exist', () => {
    assert.deepEqual(check('activities/engine/x.ts', '/** The client (engine-api.md 2.4). */\n'), ['engine-api.md: names a file of the team brief; point at docs/ instead']);
    assert.deepEqual(check('activities/engine/x.ts', '/** docs/engine-api.md#lists-and-paging */\n'), ['docs/engine-api.md#lists-and-paging: no such file in the repository']);
    const withDoc = memoryRepo({ 'docs/engine-api.md': '# Engine\n\n## Lists and paging\n' });
    assert.deepEqual(checkProse('activities/engine/x.ts', ['/** docs/engine-api.md#lists-and-paging */'], withDoc), []);
  });

  test('a docs/ file or an anchor that does not exist is a problem; existing ones are not', () => {
    assert.deepEqual(check('client/x.ts', '// docs/spec.md#validation, docs/spec.md#search-attributes, README.md#quick-start\n'), []);
    assert.deepEqual(check('client/x.ts', '// docs/nowhere.md and docs/spec.md#no-such-heading\n'), [
      'docs/nowhere.md: no such file in the repository',
      'docs/spec.md#no-such-heading: docs/spec.md has no heading with the anchor #no-such-heading',
    ]);
  });

  test('Markdown links resolve relative to the document; URLs and string literals are not references', () => {
    assert.deepEqual(check('docs/cli.md', 'See [spec](spec.md#temporal-surface) and [x](../README.md).\n'), []);
    assert.deepEqual(check('docs/cli.md', 'See [gone](gone.md).\n'), ['gone.md: no such file in the repository']);
    assert.deepEqual(check('bench/r.ts', "const out = 'benchmarks.md'; // https://example.com/x/README.md\n"), []);
  });

  test('comments anywhere in code are read: before a closing brace, inside an empty argument list, at the end of the file', () => {
    const [product] = BRIEF_FILES;
    const code = `function f() {\n  g(/* ${product} */);\n  // ${product}\n}\nconst x = { a: 1, // ${product}\n};\n/* ${product} */\n`;
    assert.equal(check('workflows/odd.ts', code).length, 4);
  });

  test('YAML and shell comments are read; JSON is not', () => {
    assert.deepEqual(check('examples/s.yaml', `# the ${BRIEF_FILES[0]} example\nkey: 1\n`).length, 1);
    assert.deepEqual(check('package.json', `{"x": "${BRIEF_FILES[0]}"}`), []);
  });

  test('anchors follow GitHub: punctuation dropped, spaces to hyphens, repeats numbered, fenced code ignored', () => {
    assert.deepEqual(
      [...anchorsOf('# A\n## Spec files (`-f FILE`, `-f -` for stdin)\n```\n# not a heading\n```\n## Passes\n## Passes\n')],
      ['a', 'spec-files--f-file--f---for-stdin', 'passes', 'passes-1'],
    );
  });
});

describe('doc references: the repository', () => {
  test('every comment and doc names only files (and headings) that exist in the repository, none of the team brief', () => {
    const files = trackedFiles();
    assert.ok(files.includes('docs/architecture.md') && files.includes('test/unit/doc-references.test.ts'), 'git ls-files lists the repository');
    const problems = files.flatMap((f) => {
      const text = readFileSync(path.join(ROOT, f), 'utf8');
      // Only text naming a Markdown file or the brief's folder can hold a problem; parsing the rest would be wasted.
      return text.includes('.md') || BRIEF_DIRS.some((d) => text.includes(d)) ? checkProse(f, proseOf(f, text), disk) : [];
    });
    assert.deepEqual(problems.map((p) => `${p.file}: ${p.reference}: ${p.why}`), []);
  });
});

/**
 * A reader of the repository cannot open the tracker the team works from: a comment or doc that names an issue or a
 * pull request by its number points nowhere. What such a note meant belongs in the text itself.
 */
export function trackerReferences(prose: readonly string[]): string[] {
  const found: string[] = [];
  for (const text of prose) for (const m of text.matchAll(/\b(?:issues?|tickets?|PR|pull request)\s*#?\d+\b|(?<=^|[\s(])#\d+\b/gi)) found.push(m[0]);
  return found;
}

describe('doc references: no tracker numbers', () => {
  test('"issue 10", "Issue #3", "PR 7" and a bare "#14" are found; colours, anchors and "1024 servers" are not', () => {
    assert.deepEqual(trackerReferences(['// see issue 10 and Issue #3, PR 7', 'as #14 asked', "fill='#555' #section 1024 servers &#39;"]), [
      'issue 10',
      'Issue #3',
      'PR 7',
      '#14',
    ]);
  });

  test('no comment or doc of the repository names a tracker number', () => {
    const problems = trackedFiles().flatMap((f) => trackerReferences(proseOf(f, readFileSync(path.join(ROOT, f), 'utf8'))).map((r) => `${f}: ${r}`));
    assert.deepEqual(problems, []);
  });
});
