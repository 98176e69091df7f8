/**
 * Loading a service spec for the CLI: from a file or stdin (`-`), YAML or JSON, strictly. Everything that can be
 * wrong with the input is found here, before any Temporal connection is made, and reported as invalid input
 * (exit 2) naming the file and the line, or the field paths of every validation issue at once.
 */
import { readFile, stat } from 'node:fs/promises';
import { LineCounter, parseDocument, type YAMLError } from 'yaml';
import { CliError, invalid } from '../common/errors';
import { formatIssues, validatePoolFile, validateSpec, type PoolFile, type ValidatedSpec } from '../domain';

/** A spec is a few KiB; anything past 1 MiB is a mistake (or an attack), and could not travel as one payload anyway. */
export const MAX_SPEC_BYTES = 1024 * 1024;
/**
 * Alias expansions allowed while building the spec. A real spec needs a handful (one ports block reused); a billion
 * laughs document needs millions. The yaml package counts an alias as the size of what it expands to.
 */
const MAX_ALIAS_COUNT = 50;
/** Parse errors reported per file: the first few are what a person fixes first; the rest would only be noise. */
const MAX_PARSE_ERRORS = 3;

export interface LoadedSpec {
  /** The file name as given, or `<stdin>`. */
  source: string;
  /** The document as written (what is sent to the controller). */
  raw: unknown;
  /** Its validated, canonical form: validated here, once; what follows takes it as it is. */
  spec: ValidatedSpec;
}

/** Reads, parses and validates `-f FILE`; throws CliError (exit 2) with every reason it is not a valid spec. */
export async function loadSpec(file: string, stdin: NodeJS.ReadableStream = process.stdin): Promise<LoadedSpec> {
  const source = file === '-' ? '<stdin>' : file;
  const bytes = file === '-' ? await readStream(stdin, source) : await readSpecFile(file);
  const raw = parseSpec(bytes, source);
  const result = validateSpec(raw);
  if (!result.ok) {
    const n = result.issues.length;
    throw invalid(`${source}: invalid spec (${n} ${n === 1 ? 'issue' : 'issues'}):\n${formatIssues(result.issues)}`);
  }
  return { source, raw, spec: result.spec };
}

/** Reads, parses and validates a pool file (`lbaas pool set -f FILE`) the same way; throws CliError (exit 2). */
export async function loadPoolFile(file: string, stdin: NodeJS.ReadableStream = process.stdin): Promise<{ source: string; pool: PoolFile }> {
  const source = file === '-' ? '<stdin>' : file;
  const bytes = file === '-' ? await readStream(stdin, source) : await readSpecFile(file);
  const result = validatePoolFile(parseSpec(bytes, source));
  if (!result.ok) {
    const n = result.issues.length;
    throw invalid(`${source}: invalid pool file (${n} ${n === 1 ? 'issue' : 'issues'}):\n${formatIssues(result.issues)}`);
  }
  return { source, pool: result.pool };
}

/** `loadSpec` for a path (never stdin): the name `lbaas dev` uses for its example. */
export const loadSpecFile = (file: string): Promise<LoadedSpec> => loadSpec(file);

async function readSpecFile(file: string): Promise<Uint8Array> {
  try {
    const st = await stat(file);
    if (!st.isFile()) throw invalid(`${file}: not a regular file`);
    if (st.size > MAX_SPEC_BYTES) throw tooLarge(file, st.size);
    const bytes = await readFile(file);
    if (bytes.length > MAX_SPEC_BYTES) throw tooLarge(file, bytes.length);
    return bytes;
  } catch (err) {
    if (err instanceof CliError) throw err;
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'ENOENT' ? 'no such file' : e.code === 'EACCES' ? 'permission denied' : e.message;
    throw invalid(`${file}: cannot read the spec: ${why}`);
  }
}

/** Reads stdin up to the size limit; stops reading (and fails) as soon as the limit is passed. */
async function readStream(stream: NodeJS.ReadableStream, source: string): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buf.length;
    if (size > MAX_SPEC_BYTES) throw tooLarge(source, null);
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

function tooLarge(source: string, size: number | null): CliError {
  const has = size === null ? 'more than that' : `${size} bytes`;
  return invalid(`${source}: a spec may be at most 1 MiB, ${MAX_SPEC_BYTES} bytes (has ${has})`);
}

/** Bytes to the document as a plain value: UTF-8 only, JSON when it looks like JSON, else YAML 1.2, strictly. */
export function parseSpec(bytes: Uint8Array, source: string): unknown {
  let text: string;
  try {
    // `fatal` refuses invalid sequences instead of replacing them; a leading BOM is dropped.
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    const at = firstInvalidUtf8(bytes);
    throw invalid(`${source}: not UTF-8 text (invalid byte at line ${lineOfOffset(bytes, at)}, byte offset ${at})`);
  }
  if (text.trim() === '') throw invalid(`${source}: the spec is empty`);
  return /^\s*[{[]/.test(text) ? parseJson(text, source) : parseYaml(text, source);
}

/**
 * JSON is parsed by JSON.parse (whose syntax messages name JSON's own terms); its duplicate keys, which JSON.parse
 * silently merges, are found by the YAML parser, which reads JSON too.
 */
function parseJson(text: string, source: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const message = (err as Error).message;
    const pos = /at position (\d+)/.exec(message);
    const clean = message
      .replace(/\s*\(line \d+ column \d+\)/, '')
      .replace(/\s*in JSON at position \d+/, '')
      .replace(/^(Unexpected token '?.'?), .* is not valid JSON$/s, '$1');
    const offset = pos ? Number(pos[1]) : jsonErrorOffset(text);
    const at = offset === null ? '' : ` at ${lineCol(text, offset)}`;
    throw invalid(`${source}: invalid JSON${at}: ${clean}`);
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const dup = doc.errors.find((e) => e.code === 'DUPLICATE_KEY');
  if (dup) throw invalid(`${source}: invalid JSON at ${where(lines, dup)}: ${dup.message}`);
  return value;
}

/**
 * Where JSON.parse stopped, for the messages that do not say ("Unexpected token 'x', ... is not valid JSON"): the
 * shortest prefix that fails other than by ending too early ends just after the offending character.
 */
function jsonErrorOffset(text: string): number | null {
  const failsInside = (k: number) => {
    try {
      JSON.parse(text.slice(0, k));
      return false;
    } catch (err) {
      const m = (err as Error).message;
      if (/Unexpected end of JSON input/.test(m)) return false;
      const p = /at position (\d+)/.exec(m);
      return p === null || Number(p[1]) < k;
    }
  };
  if (!failsInside(text.length)) return null;
  let lo = 1;
  let hi = text.length;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (failsInside(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo - 1;
}

function parseYaml(text: string, source: string): unknown {
  const lines = new LineCounter();
  // YAML 1.2 core schema: `yes`/`no` and `0755` stay what they look like; unknown tags are problems, not strings.
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true, strict: true, version: '1.2', schema: 'core' });
  const problems: YAMLError[] = [...doc.errors, ...doc.warnings];
  if (problems.length > 0) {
    const shown = problems.slice(0, MAX_PARSE_ERRORS).map((e) => `${source}: invalid YAML at ${where(lines, e)}: ${yamlMessage(e)}`);
    if (problems.length > MAX_PARSE_ERRORS) shown.push(`(${problems.length - MAX_PARSE_ERRORS} more)`);
    throw invalid(shown.join('\n'));
  }
  try {
    return doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (err) {
    if (/alias/i.test((err as Error).message)) {
      throw invalid(`${source}: aliases expand to too much (over ${MAX_ALIAS_COUNT} nodes): refused as a possible resource exhaustion attack`);
    }
    throw invalid(`${source}: ${(err as Error).message}`);
  }
}

function where(lines: LineCounter, e: YAMLError): string {
  const p = lines.linePos(e.pos[0]);
  return `line ${p.line}, column ${p.col}`;
}

function lineCol(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const col = offset - before.lastIndexOf('\n');
  return `line ${line}, column ${col}`;
}

/** The parser's message, minus advice meant for programmers using the library. */
function yamlMessage(e: YAMLError): string {
  if (e.code === 'MULTIPLE_DOCS') return 'a spec is one YAML document, this is the start of a second one';
  return firstLine(e.message);
}

function firstLine(text: string): string {
  return text.split('\n')[0] ?? text;
}

function lineOfOffset(bytes: Uint8Array, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset; i++) if (bytes[i] === 0x0a) line++;
  return line;
}

/** Offset of the first byte that does not belong to a well-formed UTF-8 sequence (RFC 3629). */
function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i] as number;
    let n: number;
    let min: number;
    if (b < 0x80) {
      i++;
      continue;
    } else if (b >= 0xc2 && b <= 0xdf) [n, min] = [1, 0x80];
    else if (b >= 0xe0 && b <= 0xef) [n, min] = [2, 0x800];
    else if (b >= 0xf0 && b <= 0xf4) [n, min] = [3, 0x10000];
    else return i;
    let cp = b & (0x3f >> n);
    for (let k = 1; k <= n; k++) {
      const c = bytes[i + k];
      if (c === undefined || (c & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (c & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += n + 1;
  }
  return bytes.length;
}
