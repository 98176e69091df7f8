/**
 * The command line without a Temporal server: usage, help, and every way a spec file can be wrong. Invalid input
 * exits 2 before any connection is made: these runs point at an address where nothing listens, so an attempt to
 * connect would exit 4 instead.
 *
 * Most cases run the CLI's `main(argv, io)` in this process (helpers/cli.ts runInProcess). As processes: one of help
 * and one of usage errors (what a shell sees of them: exit code and streams), every spec read from stdin, the alias
 * bomb (a regression would expand it without end: a process is killed after 60 s, this one would hang), and the
 * unreachable Temporal (exit 4).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { cliEnv, runCli, runInProcess } from '../helpers/cli';
import { exampleSpec } from '../helpers/fixtures';

let dir: string;
let env: NodeJS.ProcessEnv;
/**
 * An address no Temporal (nor anything else) listens on: port 1 of the loopback, outside the ranges that
 * common/ports.ts draws from and that the kernel gives out. A free port taken at the file's start was, by the time its test
 * ran, listened on by another file's process (a CI run at 12 files at a time: "accepts TCP connections").
 */
const closedAddress = '127.0.0.1:1';
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-cli-input-'));
  env = cliEnv({ address: closedAddress });
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const file = async (name: string, content: string | Uint8Array) => {
  const p = path.join(dir, name);
  await writeFile(p, content);
  return p;
};
/** `lbaas` as a process. */
const lbaas = (args: string[], input?: string | Uint8Array) => runCli(args, { env, ...(input !== undefined ? { input } : {}) });
/** `lbaas` in this process: a spec read from a file, never from stdin. */
const inProcess = (args: string[]) => runInProcess(args, env);

/** Exit 2, nothing on stdout, and stderr saying `expected` (the field, the line) in at most `maxLines` lines. */
function assertInvalid(r: { code: number | null; stdout: string; stderr: string }, expected: RegExp | string, maxLines = 2) {
  assert.equal(r.code, 2, `exit code; stderr: ${r.stderr}`);
  assert.equal(r.stdout, '');
  if (typeof expected === 'string') assert.ok(r.stderr.includes(expected), `stderr ${JSON.stringify(r.stderr)} lacks ${JSON.stringify(expected)}`);
  else assert.match(r.stderr, expected);
  assert.ok(r.stderr.trimEnd().split('\n').length <= maxLines, `at most ${maxLines} lines: ${r.stderr}`);
}

test('--help on the program and on every command exits 0 and describes the command', async () => {
  const cases: [string[], RegExp][] = [
    [['--help'], /Keeps Anexia LBaaS load balancers configured/],
    [['apply', '--help'], /-f, --file <file>[\s\S]*--wait[\s\S]*--timeout <duration>[\s\S]*-o, --output <format>/],
    [['status', '--help'], /phase, revision, status/],
    [['resync', '--help'], /--all/],
    [['schedule', '--help'], /set[\s\S]*describe[\s\S]*pause[\s\S]*unpause[\s\S]*trigger[\s\S]*delete/],
    [['schedule', 'set', '--help'], /--every <duration>[\s\S]*--destroy-orphans/],
  ];
  await Promise.all(
    cases.map(async ([args, expected], i) => {
      const r = await (i === 0 ? lbaas : inProcess)(args);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stdout, expected, args.join(' '));
    }),
  );
});

test('an unknown command, an unknown option, a missing argument or a bad -o value exits 2 with the reason', async () => {
  const cases: [string[], RegExp][] = [
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['apply', '-f', 'x.yaml', '--wiat'], /unknown option '--wiat'/],
    [['apply'], /required option '-f, --file <file>' not specified/],
    [['list', '-o', 'yaml'], /argument 'yaml' is invalid.*text, json/],
    [['resync'], /give a service uid, or --all/],
    [['status', '-bad'], /unknown option '-bad'/],
    [['status', 'a/b'], /service uid "a\/b": must be 1-128 characters/],
    [['apply', '-f', 'x.yaml', '--timeout', '10'], /--timeout: must be a duration like 90s/],
    [['schedule', 'set', '--every', 'often'], /--every: must be a duration/],
  ];
  await Promise.all(
    cases.map(async ([args, expected], i) => {
      const r = await (i === 0 ? lbaas : inProcess)(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stdout, '', args.join(' '));
      assert.match(r.stderr, expected, args.join(' '));
    }),
  );
});

test('an invalid spec exits 2 listing every issue as `path: message`, without connecting to Temporal', async () => {
  const spec = exampleSpec(['lb-1', 'lb-1'], {
    serviceUid: 'cli-input',
    externalAddresses: ['203.0.113.10', '300.1.1.1'],
    ports: { http: { external: 80, internal: 70000 } },
    sevrers: [],
    nameSuffix: 'web',
  });
  const r = await inProcess(['apply', '-f', await file('invalid.json', JSON.stringify(spec))]);
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.stdout, '');
  const lines = r.stderr.trimEnd().split('\n');
  assert.match(lines[0] ?? '', /^lbaas: .*invalid\.json: invalid spec \(4 issues\):$/);
  assert.deepEqual(lines.slice(1).sort(), [
    'externalAddresses[1]: must be an IPv4 or IPv6 address without zone, like 203.0.113.10 or 2001:db8::10',
    'loadBalancers[1]: duplicate of loadBalancers[0]',
    'ports.http.internal: must be an integer from 1 to 65535',
    'sevrers: unknown key (allowed: serviceUid, nameSuffix, loadBalancers, externalAddresses, ports, servers, serverPool, readiness, failedResources)',
  ]);
  assert.doesNotMatch(r.stderr, /cannot reach Temporal/);
});

test('plan validates the same way before it connects', async () => {
  const r = await lbaas(['plan', '-f', '-'], 'serviceUid: cli-input\nnameSuffix: x\n');
  assertInvalid(r, /<stdin>: invalid spec \(4 issues\):\nloadBalancers: required\nexternalAddresses: required\nports: required\nservers: required/, 5);
});

test('YAML: a duplicate key is refused with its line and column', async () => {
  const r = await inProcess(['apply', '-f', await file('dup.yaml', 'serviceUid: a\nnameSuffix: x\nserviceUid: b\n')]);
  assertInvalid(r, /dup\.yaml: invalid YAML at line 3, column 1: Map keys must be unique/);
});

test('YAML: a syntax error is reported with its line and column in one line', async () => {
  const r = await inProcess(['apply', '-f', await file('broken.yaml', 'serviceUid: a\nports: {http: [1, 2\nservers: []\n')]);
  assertInvalid(r, /broken\.yaml: invalid YAML at line \d+, column \d+: /, 3);
});

test('YAML: a second document and an unknown tag are refused, not guessed at', async () => {
  const two = await lbaas(['apply', '-f', '-'], 'serviceUid: a\n---\nserviceUid: b\n');
  assertInvalid(two, '<stdin>: invalid YAML at line 2, column 1: a spec is one YAML document, this is the start of a second one');
  const tag = await lbaas(['apply', '-f', '-'], 'serviceUid: !!binary aGVsbG8=\nnameSuffix: !custom x\n');
  assertInvalid(tag, /<stdin>: invalid YAML at line 2, column 13: Unresolved tag: !custom/);
});

test('YAML: an alias bomb is refused before it expands', async () => {
  const lines = ['a: &a [x, x, x, x, x, x, x, x, x]'];
  for (let i = 1; i < 10; i++) {
    const prev = String.fromCharCode(96 + i);
    lines.push(`${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9).fill(`*${prev}`).join(', ')}]`);
  }
  const r = await lbaas(['apply', '-f', await file('bomb.yaml', `${lines.join('\n')}\n`)]);
  // Expanded, the ten levels of nine aliases would be 9^10 (3.5 billion) nodes: a run that ends at all (runCli
  // gives up after 60 s) with this error was refused by the alias limit, not after expanding. (No bound in
  // milliseconds: a loaded machine starting several processes at once takes over 10 s to start one.)
  assertInvalid(r, /bomb\.yaml: aliases expand to too much .*resource exhaustion/);
});

test('YAML: a few aliases (one block reused) are fine and reach validation', async () => {
  const yaml = [
    'serviceUid: cli-input',
    'nameSuffix: x',
    'loadBalancers: [lb-1]',
    'externalAddresses: [203.0.113.10]',
    'ports:',
    '  http: &p { external: 80, internal: 30080 }',
    '  alt: *p',
    'servers: []',
    'bogus: 1',
  ].join('\n');
  const r = await inProcess(['apply', '-f', await file('alias.yaml', yaml)]);
  // The shared external port and the unknown key show that the aliased document was built and validated.
  assertInvalid(r, /invalid spec \(2 issues\):\nbogus: unknown key[^\n]*\nports\.alt\.external: /, 3);
});

test('invalid UTF-8 is refused with the line it is on', async () => {
  const bytes = Buffer.concat([Buffer.from('serviceUid: cli-input\nnameSuffix: "'), Buffer.from([0xc3, 0x28]), Buffer.from('"\n')]);
  const r = await inProcess(['apply', '-f', await file('latin.yaml', bytes)]);
  assertInvalid(r, 'latin.yaml: not UTF-8 text (invalid byte at line 2, byte offset 35)');
});

test('JSON: a syntax error names line and column; a duplicate key is refused', async () => {
  const broken = await inProcess(['apply', '-f', await file('broken.json', '{\n  "serviceUid": "a",\n  "ports": {,}\n}\n')]);
  assertInvalid(broken, /broken\.json: invalid JSON at line 3, column 13: /);
  const dup = await lbaas(['apply', '-f', '-'], '{"serviceUid": "a",\n "serviceUid": "b"}');
  assertInvalid(dup, /<stdin>: invalid JSON at line 2, column 2: Map keys must be unique/);
});

test('a file over 1 MiB, an empty file, a missing file and a directory are refused', async () => {
  const big = await inProcess(['apply', '-f', await file('big.yaml', `# ${'x'.repeat(1024 * 1024)}\n`)]);
  assertInvalid(big, /big\.yaml: a spec may be at most 1 MiB/);
  const bigStdin = await lbaas(['apply', '-f', '-'], `# ${'x'.repeat(1024 * 1024)}\n`);
  assertInvalid(bigStdin, /<stdin>: a spec may be at most 1 MiB/);
  assertInvalid(await inProcess(['apply', '-f', await file('empty.yaml', '\n\n')]), /empty\.yaml: the spec is empty/);
  assertInvalid(await inProcess(['apply', '-f', path.join(dir, 'missing.yaml')]), /missing\.yaml: cannot read the spec: no such file/);
  assertInvalid(await inProcess(['apply', '-f', dir]), /not a regular file/);
});

test('an unreachable Temporal exits 4 naming the address, the namespace and why', async () => {
  const valid = await file('valid.json', JSON.stringify(exampleSpec(['lb-1'], { serviceUid: 'cli-input' })));
  for (const args of [['status', 'cli-input'], ['list'], ['apply', '-f', valid], ['schedule', 'describe']]) {
    const r = await lbaas(args);
    assert.equal(r.code, 4, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '');
    // Exactly this line: the refused probe answers at once, without waiting out gRPC's connect deadline.
    assert.equal(r.stderr, `lbaas: cannot reach Temporal at ${closedAddress} (namespace default): connection refused by ${closedAddress}\n`);
  }
  const unknownHost = await runCli(['list'], { env: cliEnv({ address: 'lbaas-test-no-such-host.invalid:7233', namespace: 'ops' }) });
  assert.equal(unknownHost.code, 4, unknownHost.stderr);
  assert.match(unknownHost.stderr, /^lbaas: cannot reach Temporal at lbaas-test-no-such-host\.invalid:7233 \(namespace ops\): (host lbaas-test-no-such-host\.invalid not found|EAI_AGAIN)/);
});
