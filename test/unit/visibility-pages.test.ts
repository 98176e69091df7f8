/**
 * Every visibility listing of the product asks for VISIBILITY_PAGE_SIZE rows a page (contract/ids.ts). With the
 * server's default page (1,000 rows) the SQLite dev server refused the full resync's listing of 1,000 controllers with
 * RESOURCE_EXHAUSTED on every retry, and `lbaas list` failed the same way; this test fails on a listing that leaves
 * the page size to the server or sets another.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { VISIBILITY_PAGE_SIZE } from '../../contract';
import { PRODUCT_ROOMS, productSources, REPO_ROOT } from '../helpers/sources';

const ROOMS = [...PRODUCT_ROOMS, 'dev', 'simulator'];

test('every workflow.list( call of the product passes pageSize: VISIBILITY_PAGE_SIZE (100), not the server default of 1,000', () => {
  assert.equal(VISIBILITY_PAGE_SIZE, 100);
  const calls: { file: string; text: string }[] = [];
  for (const file of productSources(ROOMS)) {
    const src = readFileSync(path.join(REPO_ROOT, file), 'utf8');
    for (const m of src.matchAll(/\.workflow\.list\(\{[^}]*\}\)/g)) calls.push({ file, text: m[0] });
  }
  // The listings known today: the full resync's controllers and pools, lbaas list, the pools' list, the new build's
  // wake of entities, the stranded sweep, the drain's named runs.
  assert.ok(calls.length >= 6, `found only ${calls.length} listings: ${calls.map((c) => c.file).join(', ')}`);
  const other = calls.filter((c) => !/pageSize: (VISIBILITY_PAGE_SIZE|NAMED)\b/.test(c.text));
  assert.deepEqual(other, [], 'listings without pageSize: VISIBILITY_PAGE_SIZE');
});
