/**
 * The import graph of the sources: no file may take part in an import circle, and an arrow between two rooms (the
 * top-level directories) must be one that ROOM_IMPORTS below allows.
 *
 * Circles are looked for among the imports that load code (imports, re-exports, require() and import() calls), as
 * eslint-plugin-import's no-cycle does: a type-only import (`import type`, `export type ... from`, or named imports
 * that are all `type`) is erased by the compiler and cannot make a module see another one half-initialized. The room
 * check counts every import, types included: a type still ties a room to another.
 *
 * The graph is read from the TypeScript sources, so the check needs no build output and sees files nothing imports.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';

/** This file runs from dist/test/unit. */
const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');

/**
 * Which rooms each room may import. cli/ is the composition root: it may import every room that runs in production,
 * and only the tests import it back. common/ imports no other room; dev/ (the local stack: Temporal CLI, dev
 * server, worker child processes) only what a worker needs. The tests may import the benchmarks (to test their
 * reports), so the benchmarks do not import the tests. A room that is not listed fails the test:
 * add it here with its intended arrows.
 */
export const ROOM_IMPORTS: Readonly<Record<string, readonly string[]>> = {
  common: [],
  domain: [],
  simulator: [],
  // The Temporal contract (workflow types and ids, search attributes, messages, failure types, payloads): below
  // every room that talks through Temporal, above only the model it carries.
  contract: ['domain'],
  // Type-only (lint-enforced): the workflows name the activities they schedule.
  workflows: ['activities', 'contract', 'domain'],
  activities: ['common', 'contract', 'domain'],
  worker: ['activities', 'common', 'contract'],
  // Clients start workflows by the contract's names and types; they never import workflow code.
  client: ['common', 'contract', 'domain'],
  dev: ['activities', 'common', 'worker'],
  // The production-shaped local cluster: installed and started like the dev server (dev/temporal-path, dev/devserver),
  // its ports drawn as every local process's (common/ports).
  cluster: ['common', 'dev'],
  // The Kubernetes controller (lbaas kube): a Temporal client through client/, the mapping on domain/, and its API
  // server installed like the Temporal binaries (dev/go-install, dev/install-lock).
  kube: ['client', 'common', 'contract', 'dev', 'domain'],
  cli: ['activities', 'client', 'cluster', 'common', 'contract', 'dev', 'domain', 'kube', 'simulator', 'worker'],
  test: ['activities', 'bench', 'cli', 'client', 'cluster', 'common', 'contract', 'dev', 'domain', 'kube', 'simulator', 'worker', 'workflows'],
  // The benchmarks start reconcileService and fullResync themselves, as the tests do, and run lbaas kube on a local API server.
  bench: ['activities', 'client', 'cluster', 'common', 'contract', 'dev', 'domain', 'kube', 'simulator', 'worker', 'workflows'],
};

/** Directories whose files are data, not modules of the graph. */
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'fixtures']);

export type ImportGraph = ReadonlyMap<string, readonly string[]>;

interface Import {
  specifier: string;
  typeOnly: boolean;
}

/** The module specifiers a file names, each marked type-only or not. */
export function importsOf(fileName: string, text: string): Import[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: Import[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const bindings = clause?.namedBindings;
      const allNamedTypes = !!bindings && ts.isNamedImports(bindings) && bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly);
      const typeOnly = !!clause && (clause.isTypeOnly || (!clause.name && allNamedTypes));
      found.push({ specifier: node.moduleSpecifier.text, typeOnly });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.exportClause;
      const allNamedTypes = !!clause && ts.isNamedExports(clause) && clause.elements.length > 0 && clause.elements.every((e) => e.isTypeOnly);
      found.push({ specifier: node.moduleSpecifier.text, typeOnly: node.isTypeOnly || allNamedTypes });
    } else if (ts.isCallExpression(node) && node.arguments.length === 1 && ts.isStringLiteral(node.arguments[0] as ts.Node)) {
      const callee = node.expression;
      if ((ts.isIdentifier(callee) && callee.text === 'require') || callee.kind === ts.SyntaxKind.ImportKeyword) {
        found.push({ specifier: (node.arguments[0] as ts.StringLiteral).text, typeOnly: false });
      }
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push({ specifier: node.argument.literal.text, typeOnly: true });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (!SKIPPED_DIRS.has(e.name)) sourceFiles(p, out);
    } else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** `./x` from a file: x.ts or x/index.ts, relative to the repository root; null for a package or a missing file. */
function resolve(from: string, specifier: string, known: ReadonlySet<string>): string | null {
  if (!specifier.startsWith('.')) return null;
  const base = path.relative(REPO_ROOT, path.resolve(path.dirname(path.join(REPO_ROOT, from)), specifier)).replace(/\.js$/, '');
  for (const candidate of [`${base}.ts`, path.join(base, 'index.ts')]) if (known.has(candidate)) return candidate;
  return null;
}

/**
 * Every source file of the repository (relative path) with the source files it imports: `all` counts every import,
 * `runtime` only those that load code.
 */
export function repositoryGraph(): { all: ImportGraph; runtime: ImportGraph } {
  const files = sourceFiles(REPO_ROOT).map((f) => path.relative(REPO_ROOT, f));
  const known = new Set(files);
  const all = new Map<string, string[]>();
  const runtime = new Map<string, string[]>();
  for (const file of files) {
    const imports = importsOf(file, readFileSync(path.join(REPO_ROOT, file), 'utf8'));
    const targets = (list: Import[]) => [...new Set(list.map((i) => resolve(file, i.specifier, known)).filter((t): t is string => t !== null))].sort();
    all.set(file, targets(imports));
    runtime.set(file, targets(imports.filter((i) => !i.typeOnly)));
  }
  return { all, runtime };
}

/**
 * The import circles: one per strongly connected component with more than one file (or a file importing itself),
 * each written as a path that starts and ends at the same file. Tarjan's algorithm, iterative so deep graphs fit.
 */
export function importCircles(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let next = 0;
  for (const start of [...graph.keys()].sort()) {
    if (index.has(start)) continue;
    const work: { node: string; edge: number }[] = [{ node: start, edge: 0 }];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1] as { node: string; edge: number };
      const edges = graph.get(frame.node) ?? [];
      if (frame.edge < edges.length) {
        const to = edges[frame.edge++] as string;
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, edge: 0 });
        } else if (onStack.has(to)) low.set(frame.node, Math.min(low.get(frame.node) as number, index.get(to) as number));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node) as number, low.get(frame.node) as number));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop() as string;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        const selfLoop = (graph.get(frame.node) ?? []).includes(frame.node);
        if (component.length > 1 || selfLoop) components.push(component);
      }
    }
  }
  return components.map((c) => circleThrough(graph, new Set(c))).sort((a, b) => (a[0] as string).localeCompare(b[0] as string));
}

/** One concrete circle inside a component, from its first file (sorted) back to it, by breadth-first search. */
function circleThrough(graph: ImportGraph, component: ReadonlySet<string>): string[] {
  const start = [...component].sort()[0] as string;
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift() as string;
    for (const to of graph.get(node) ?? []) {
      if (!component.has(to)) continue;
      if (to === start) {
        const circle = [node];
        while (circle[0] !== start) circle.unshift(previous.get(circle[0] as string) as string);
        return [...circle, start];
      }
      if (!previous.has(to)) {
        previous.set(to, node);
        queue.push(to);
      }
    }
  }
  return [start, start];
}

const roomOf = (file: string) => (file.includes('/') ? (file.split('/')[0] as string) : '.');

/** `from -> to (file -> file)` for every arrow between rooms that ROOM_IMPORTS does not allow. */
export function forbiddenArrows(graph: ImportGraph, rooms: Readonly<Record<string, readonly string[]>>): string[] {
  const found: string[] = [];
  for (const [file, targets] of graph) {
    const from = roomOf(file);
    const allowed = rooms[from];
    if (!allowed) {
      found.push(`${file}: room ${from}/ is not in ROOM_IMPORTS`);
      continue;
    }
    for (const target of targets) {
      const to = roomOf(target);
      if (to !== from && !allowed.includes(to)) found.push(`${from} -> ${to} (${file} -> ${target})`);
    }
  }
  return found.sort();
}

const show = (circles: string[][]) => circles.map((c) => c.join(' -> ')).join('\n');

test('the circle finder names a circle of a small graph as a path, and finds none in a graph without one', () => {
  const circular: ImportGraph = new Map([
    ['a.ts', ['b.ts']],
    ['b.ts', ['c.ts', 'd.ts']],
    ['c.ts', ['a.ts']],
    ['d.ts', []],
    ['e.ts', ['e.ts']],
  ]);
  assert.deepEqual(importCircles(circular), [
    ['a.ts', 'b.ts', 'c.ts', 'a.ts'],
    ['e.ts', 'e.ts'],
  ]);
  const acyclic: ImportGraph = new Map([
    ['a.ts', ['b.ts', 'c.ts']],
    ['b.ts', ['c.ts']],
    ['c.ts', []],
  ]);
  assert.deepEqual(importCircles(acyclic), []);
});

test('the room check names an arrow the table does not allow and a room it does not know', () => {
  const graph: ImportGraph = new Map([
    ['worker/main.ts', ['cli/io.ts', 'common/errors.ts']],
    ['cli/io.ts', []],
    ['common/errors.ts', []],
    ['attic/old.ts', []],
  ]);
  const rooms = { worker: ['common'], cli: [], common: [] };
  assert.deepEqual(forbiddenArrows(graph, rooms), ['attic/old.ts: room attic/ is not in ROOM_IMPORTS', 'worker -> cli (worker/main.ts -> cli/io.ts)']);
});

test('type-only imports are told apart from imports that load code', () => {
  const text = [
    "import type { A } from './a';",
    "import { type B } from './b';",
    "import { type C, d } from './c';",
    "import e from './e';",
    "export type { F } from './f';",
    "export { g } from './g';",
    "const h = require('./h');",
    "type I = import('./i').I;",
    "import './j';",
  ].join('\n');
  assert.deepEqual(
    importsOf('x.ts', text).map((i) => `${i.specifier}${i.typeOnly ? ' (type)' : ''}`),
    ['./a (type)', './b (type)', './c', './e', './f (type)', './g', './h', './i (type)', './j'],
  );
});

test('the repository has no import circle', () => {
  const graph = repositoryGraph().runtime;
  assert.ok((graph.get('cli/main.ts') ?? []).includes('cli/commands/worker.ts'), 'the graph reads require() calls');
  const circles = importCircles(graph);
  assert.equal(show(circles), '', `import circles:\n${show(circles)}`);
});

test('domain/ and contract/ have no circle even among type-only imports (each concept has one home below its users)', () => {
  const all = repositoryGraph().all;
  const shared = new Map([...all].filter(([f]) => f.startsWith('domain/') || f.startsWith('contract/')));
  const circles = importCircles(shared);
  assert.equal(show(circles), '', `import circles:\n${show(circles)}`);
});

test('every arrow between rooms is one ROOM_IMPORTS allows (nothing imports cli/ but the tests)', () => {
  assert.deepEqual(forbiddenArrows(repositoryGraph().all, ROOM_IMPORTS), []);
});
