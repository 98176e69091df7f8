import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SharedHeartbeat } from '../../activities/heartbeat';

test('SharedHeartbeat: each slot sees what was recorded for it (the look-alikes a group lists before any create), and no other slot', () => {
  const hb = new SharedHeartbeat<{ preexisting: string[]; created?: string }>();
  const a = hb.slot('server:http:node-1');
  const b = hb.slot('server:http:node-2');
  assert.equal(a.previous, undefined);
  a.record({ preexisting: ['x'] });
  assert.deepEqual(a.previous, { preexisting: ['x'] });
  assert.equal(b.previous, undefined);
  b.record({ preexisting: [] });
  a.record({ preexisting: ['x'], created: 'id-1' });
  assert.deepEqual([a.previous, b.previous], [{ preexisting: ['x'], created: 'id-1' }, { preexisting: [] }]);
});
