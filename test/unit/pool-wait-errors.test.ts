/**
 * cli/commands/pool.ts failedOn: the error of a `pool status --wait` whose revision failed. It names each failed
 * service with its error, at most FAILED_NAMED of them, and says where an error text the pool did not keep is.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FAILED_NAMED, failedOn } from '../../cli/commands/pool';
import type { PoolServiceStatus } from '../../contract';

const failed = (uid: string, error?: string): PoolServiceStatus => ({ serviceUid: uid, convergedRevision: 1, last: { revision: 2, converged: false, ...(error ? { error } : {}) } });

test('one failed service: named with its error', () => {
  assert.equal(failedOn('nodes', 2, [failed('svc-a', 'Engine 503')]), 'revision 2 of pool nodes failed on 1 service: svc-a (Engine 503)');
});

test('a failed service read from visibility (no error text): pointed to its own status', () => {
  assert.equal(failedOn('nodes', 2, [failed('svc-a', 'Engine 503'), failed('svc-b')]), 'revision 2 of pool nodes failed on 2 services: svc-a (Engine 503), svc-b (its error: lbaas status svc-b)');
});

test(`5,000 failed services (an Engine outage): the first ${FAILED_NAMED} named, the rest counted`, () => {
  const all = Array.from({ length: 5000 }, (_, i) => failed(`svc-${String(i).padStart(4, '0')}`, 'Engine 503'));
  const message = failedOn('nodes', 2, all);
  assert.equal(message.match(/\(Engine 503\)/g)?.length, FAILED_NAMED);
  assert.ok(message.startsWith('revision 2 of pool nodes failed on 5000 services: svc-0000 (Engine 503), svc-0001 (Engine 503)'), message);
  assert.ok(message.endsWith(`svc-0009 (Engine 503), and ${5000 - FAILED_NAMED} more (lbaas pool status nodes lists them)`), message);
});
