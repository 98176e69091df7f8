/**
 * The bad-input corpus: test/fixtures/bad-specs/<name>.(yaml|json), each with a sidecar <name>.expect saying what the
 * error must name, plus a few cases too big to commit that are generated here.
 *
 * An .expect file holds one line, either
 *   `field: <path>` — a spec that parses but does not validate; the error must name that field path
 *                     (`ports.http.external`, `servers[1].name`), as `path: message`;
 *   `text: <text>`  — the error must contain that text (a document that does not parse: `line 7`, `not UTF-8`; or an
 *                     issue with the spec as a whole: `must be a mapping`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

export const CORPUS_DIR = path.resolve(__dirname, '..', '..', '..', 'test', 'fixtures', 'bad-specs');

export type Expectation = { kind: 'field'; path: string } | { kind: 'text'; text: string };

export interface BadSpec {
  name: string;
  file: string;
  bytes: Buffer;
  expect: Expectation;
}

export function parseExpectation(line: string, source: string): Expectation {
  const m = /^(field|text): (.+)$/.exec(line.trim());
  if (!m) throw new Error(`${source}: expected "field: <path>" or "text: <text>", got ${JSON.stringify(line)}`);
  return m[1] === 'field' ? { kind: 'field', path: m[2] as string } : { kind: 'text', text: m[2] as string };
}

/** Every committed bad spec, sorted by name; throws when a spec lacks its .expect or an .expect its spec. */
export function committedBadSpecs(): BadSpec[] {
  const names = readdirSync(CORPUS_DIR).sort();
  const specs = names.filter((n) => /\.(ya?ml|json)$/.test(n));
  const expects = new Set(names.filter((n) => n.endsWith('.expect')));
  const out = specs.map((n) => {
    const base = n.replace(/\.(ya?ml|json)$/, '');
    const expectFile = `${base}.expect`;
    if (!expects.delete(expectFile)) throw new Error(`${n} has no ${expectFile}`);
    return {
      name: base,
      file: path.join(CORPUS_DIR, n),
      bytes: readFileSync(path.join(CORPUS_DIR, n)),
      expect: parseExpectation(readFileSync(path.join(CORPUS_DIR, expectFile), 'utf8'), expectFile),
    };
  });
  if (expects.size > 0) throw new Error(`.expect files without a spec: ${[...expects].join(', ')}`);
  return out;
}

const base = {
  serviceUid: 'bad-input',
  nameSuffix: 'web.bad.test',
  loadBalancers: ['lb-bad-input-1'],
  externalAddresses: ['203.0.113.10'],
  ports: { http: { external: 80, internal: 30080 } },
  servers: [{ name: 'node-1', address: '10.0.0.11' }],
};

/** Cases generated rather than committed: huge lists and files. Written into `dir`. */
export async function generatedBadSpecs(dir: string): Promise<BadSpec[]> {
  const cases: { name: string; ext: string; content: string; expect: Expectation }[] = [
    {
      // 100 000 one-letter load balancers: 400 KB, under the file size limit; refused whole, unread.
      name: 'load-balancers-100000',
      ext: 'json',
      content: JSON.stringify({ ...base, loadBalancers: Array.from({ length: 100_000 }, () => 'x') }),
      expect: { kind: 'field', path: 'loadBalancers' },
    },
    {
      // 5 ports x (2 + 1 address + 1100 servers) = 5515 objects per load balancer, over the 5100 limit.
      name: 'objects-per-load-balancer-over-limit',
      ext: 'json',
      content: JSON.stringify({
        ...base,
        ports: Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`p${i}`, { external: 80 + i, internal: 30080 + i }])),
        servers: Array.from({ length: 1100 }, (_, i) => ({ name: `node-${i}`, address: `10.1.${Math.floor(i / 250)}.${(i % 250) + 1}` })),
      }),
      expect: { kind: 'field', path: 'ports' },
    },
    {
      name: 'name-suffix-1mb-string',
      ext: 'yaml',
      content: `serviceUid: bad-input\nnameSuffix: ${'n'.repeat(900_000)}\nloadBalancers: [lb-bad-input-1]\nexternalAddresses: []\nports: {}\nservers: []\n`,
      expect: { kind: 'field', path: 'nameSuffix' },
    },
    {
      name: 'file-over-1mib',
      ext: 'yaml',
      content: `serviceUid: bad-input\n# ${'padding '.repeat(300_000)}\n`,
      expect: { kind: 'text', text: 'at most 1 MiB' },
    },
  ];
  return Promise.all(
    cases.map(async (c) => {
      const file = path.join(dir, `${c.name}.${c.ext}`);
      await writeFile(file, c.content);
      return { name: c.name, file, bytes: Buffer.from(c.content), expect: c.expect };
    }),
  );
}

/** Whether an error text names what the expectation says (`path: ` for fields, with an optional prefix). */
export function names(text: string, e: Expectation, fieldPrefix = ''): boolean {
  if (e.kind === 'text') return text.includes(e.text);
  return text.split('\n').some((line) => line.trimStart().startsWith(`${fieldPrefix}${e.path}: `));
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function eachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}
