import assert from 'node:assert/strict';
import { test } from 'node:test';
import { listed, SUMMARY_LIST_CHARS } from '../../workflows/options';

test('listed: names joined with commas while they fit, then "and N more"; one name always shows, however long', () => {
  assert.equal(listed([]), '');
  assert.equal(listed(['a']), 'a');
  assert.equal(listed(['a', 'b', 'c']), 'a, b, c');
  assert.equal(listed(['aaaa', 'bbbb', 'cccc'], 10), 'aaaa, bbbb and 1 more');
  assert.equal(listed(['x'.repeat(30), 'y'], 10), `${'x'.repeat(30)} and 1 more`);
  const names = Array.from({ length: 100 }, (_, i) => `node-${i}.http.web.default.prod`);
  const text = listed(names);
  const shown = text.split(' and ')[0] as string;
  assert.ok(shown.length <= SUMMARY_LIST_CHARS, `${shown.length} characters`);
  const count = shown.split(', ').length;
  assert.equal(text, `${names.slice(0, count).join(', ')} and ${100 - count} more`);
  assert.equal(count, 8);
});
