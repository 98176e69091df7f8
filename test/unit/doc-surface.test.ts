/**
 * The Temporal surface that users read in docs/spec.md ("Temporal surface") and docs/operations.md is checked against
 * the code's own exports in contract/: every workflow type with its ids, every signal, update and query per
 * workflow with its kind, every search attribute with its type. A name added, renamed or dropped on one side only
 * fails here, naming it.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { MESSAGES_BY_WORKFLOW, searchAttributes, workflowIds, workflowTypes } from '../../contract';
import * as messages from '../../contract/messages';
import * as workflows from '../../workflows';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

/** The section of a Markdown text under `heading` (a line of its own), up to the next heading of its level or above. */
export function section(markdown: string, heading: string): string {
  const lines = markdown.split('\n');
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const level = (heading.match(/^#+/) ?? [''])[0].length;
  const end = lines.findIndex((l, i) => i > start && /^#+ /.test(l) && (l.match(/^#+/) ?? [''])[0].length <= level);
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
}

/** The body rows of the first table in `text`, as trimmed cells. */
export function tableRows(text: string): string[][] {
  const rows = text.split('\n').filter((l) => l.startsWith('|'));
  return rows.slice(2).map((r) => r.slice(1, -1).split('|').map((c) => c.trim()));
}

/** `apply(spec)` → `{revision}` reads as apply; a bare `status` as status. */
const messageName = (cell: string) => (/^`([A-Za-z]+)/.exec(cell) ?? [])[1] ?? cell;
/** "update, with validator" reads as update. */
const messageKind = (cell: string) => cell.split(',')[0]?.trim() ?? cell;

const SPEC = read('docs/spec.md');
const SURFACE = section(SPEC, '## Temporal surface');

describe('the helpers read Markdown tables and sections', () => {
  test('a section ends at the next heading of its level or above; a table yields its body rows', () => {
    const md = ['# A', '## B', 'x', '| h | k |', '|---|---|', '| `a(x)` → `y` | update, with validator |', '### C', 'y', '## D', 'z'].join('\n');
    assert.equal(section(md, '## B'), ['x', '| h | k |', '|---|---|', '| `a(x)` → `y` | update, with validator |', '### C', 'y'].join('\n'));
    assert.deepEqual(tableRows(section(md, '## B')), [['`a(x)` → `y`', 'update, with validator']]);
    assert.equal(messageName('`a(x)` → `y`'), 'a');
    assert.equal(messageKind('update, with validator'), 'update');
  });
});

describe('docs/spec.md "Temporal surface" matches contract/', () => {
  test('the workflow types are exactly the ones the worker registers and the contract names', () => {
    const documented = tableRows(section(SURFACE, '### Workflow types and ids')).map((r) => (r[0] ?? '').replace(/`/g, ''));
    const registered = Object.keys(workflows).filter((k) => typeof (workflows as Record<string, unknown>)[k] === 'function');
    assert.deepEqual([...documented].sort(), Object.keys(workflowTypes).sort());
    assert.deepEqual([...documented].sort(), registered.sort());
  });

  test('each workflow type lists the ids the contract builds for it', () => {
    const rows = new Map(tableRows(section(SURFACE, '### Workflow types and ids')).map((r) => [(r[0] ?? '').replace(/`/g, ''), r[1] ?? '']));
    const iso = new Date(0).toISOString();
    const expected: Record<string, string[]> = {
      serviceController: [workflowIds.controller('<uid>')],
      reconcileService: [workflowIds.pass('<uid>', 7).replace(/7$/, '<n>'), workflowIds.orphanTeardown('<uid>')],
      reconcilePoolDelta: [workflowIds.pass('<uid>', 7).replace(/7$/, '<n>')],
      reconcileLoadBalancer: [workflowIds.loadBalancer('<uid>', '<loadBalancer>')],
      serverPool: [workflowIds.pool('<name>')],
      poolRound: [workflowIds.poolRound('<name>', '<round>')],
      fullResync: [`${workflowIds.scheduledResync}-<UTC time>`, workflowIds.manualResync(new Date(0)).replace(iso, '<ISO time>')],
      planService: [workflowIds.plan('<uid>', '<random>')],
      importServices: [workflowIds.importRun('<random>')],
      discoverCluster: [workflowIds.discoverRun('<cluster>', '<random>')],
      allocateServiceVips: [workflowIds.vipAllocate('<uid>')],
      releaseServiceVips: [workflowIds.vipRelease('<uid>')],
    };
    assert.deepEqual(Object.keys(expected).sort(), Object.keys(workflowTypes).sort());
    for (const [type, ids] of Object.entries(expected)) {
      for (const id of ids) assert.ok((rows.get(type) ?? '').includes(`\`${id}\``), `${type}: docs/spec.md should name the id \`${id}\``);
    }
  });

  const tables: Record<keyof typeof MESSAGES_BY_WORKFLOW, string> = {
    serviceController: '### Controller messages',
    reconcileLoadBalancer: '### Load balancer messages',
    serverPool: '### Server pool messages',
  };
  for (const [workflow, heading] of Object.entries(tables) as [keyof typeof MESSAGES_BY_WORKFLOW, string][]) {
    test(`"${heading.slice(4)}" lists exactly the messages ${workflow} handles, each with its kind`, () => {
      const documented = tableRows(section(SURFACE, heading)).map((r) => `${messageKind(r[1] ?? '')} ${messageName(r[0] ?? '')}`);
      const defined = MESSAGES_BY_WORKFLOW[workflow].map((d) => `${d.type} ${d.name}`);
      assert.deepEqual([...documented].sort(), [...defined].sort());
    });
  }

  test('every signal, update and query the contract defines belongs to one workflow of MESSAGES_BY_WORKFLOW', () => {
    const definitions = Object.entries(messages).filter(([k]) => k !== 'MESSAGES_BY_WORKFLOW');
    const grouped: readonly object[] = Object.values(MESSAGES_BY_WORKFLOW).flat();
    assert.deepEqual(
      definitions.filter(([, d]) => !grouped.includes(d as object)).map(([k]) => k),
      [],
    );
    assert.equal(grouped.length, new Set(grouped).size);
  });

  test('the search attributes table lists every attribute the contract defines, with its type', () => {
    const typeName: Record<string, string> = { KEYWORD: 'Keyword', KEYWORD_LIST: 'KeywordList', INT: 'Int' };
    const documented = tableRows(section(SURFACE, '### Search attributes')).map((r) => `${(r[0] ?? '').replace(/`/g, '')} ${r[1] ?? ''}`);
    const defined = Object.values(searchAttributes).map((k) => `${k.name} ${typeName[k.type] ?? k.type}`);
    assert.deepEqual([...documented].sort(), [...defined].sort());
  });
});

describe('docs/operations.md registers the same search attributes', () => {
  const ops = read('docs/operations.md');
  const defined = Object.values(searchAttributes);
  const typeName: Record<string, string> = { KEYWORD: 'Keyword', KEYWORD_LIST: 'KeywordList', INT: 'Int' };

  test('one `temporal operator search-attribute create` line per attribute, with its type', () => {
    const lines = [...ops.matchAll(/search-attribute create --namespace <ns> --name (\w+) --type (\w+)/g)].map((m) => `${m[1]} ${m[2]}`);
    assert.deepEqual(lines.sort(), defined.map((k) => `${k.name} ${typeName[k.type] ?? k.type}`).sort());
  });

  test('the SQL visibility columns it counts are the ones lbaas takes', () => {
    const m = /lbaas takes (\d+) Keyword and (\d+) KeywordList column/.exec(ops);
    assert.ok(m, 'docs/operations.md should say how many visibility columns lbaas takes');
    assert.deepEqual([Number(m[1]), Number(m[2])], [defined.filter((k) => k.type === 'KEYWORD').length, defined.filter((k) => k.type === 'KEYWORD_LIST').length]);
  });

  test('the namespace row of the local cluster names every attribute with its type', () => {
    const row = ops.split('\n').find((l) => l.startsWith('| namespace |')) ?? '';
    for (const k of defined) assert.ok(row.includes(`\`${k.name}\` (${typeName[k.type] ?? k.type})`), `namespace row should name ${k.name}`);
  });
});
