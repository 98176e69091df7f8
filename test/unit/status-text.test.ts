/** `lbaas status` text: the Engine rate-limit line shows while a worker's notice holds, and not after. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { statusText } from '../../cli/views';
import type { ControllerStatus } from '../../contract';

const status = (engineRateLimitedUntil: number | null): ControllerStatus => ({
  serviceUid: 'svc-1',
  phase: 'Converging',
  revision: 1,
  status: {},
  loadBalancers: {},
  objects: [],
  lastPass: null,
  running: { pass: 1, revision: 1, startedAt: Date.now(), teardown: false },
  nextRetryAt: null,
  consecutiveFailures: 0,
  engineRateLimitedUntil,
});

test('status text says "rate limited by the Engine" while the notice holds', () => {
  const lines = statusText(status(Date.now() + 20_000)).split('\n');
  assert.equal(lines.filter((l) => /^engine\s+rate limited by the Engine \(requests held back until .+\)$/.test(l)).length, 1, lines.join('\n'));
});

test('status text has no engine line without a notice, or once it ran out', () => {
  for (const until of [null, Date.now() - 1]) assert.ok(!statusText(status(until)).includes('rate limited'));
});
