/**
 * Live progress without signals (client/service-client.ts, createdInGroups): the identifiers of a running create
 * group's members are read from the pending realizeObjects activity's heartbeat details, one slot per member key.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import { createdInGroups } from '../../client/service-client';

const decode = (p: Parameters<typeof defaultPayloadConverter.fromPayload>[0]) => defaultPayloadConverter.fromPayload(p);
const details = (value: unknown) => ({ payloads: [defaultPayloadConverter.toPayload(value)] });

test('members a realizeObjects group has created are found by key; members not yet posted, other activities and unreadable details are not; throttled (wrapped) details are read through', () => {
  const found = createdInGroups(
    [
      { activityType: { name: 'realizeObjects' }, heartbeatDetails: details({ 'backend:http': { preexisting: [], created: 'b1' }, 'backend:https': { preexisting: [] } }) },
      { activityType: { name: 'realizeObjects' }, heartbeatDetails: details({ 'server:node-1:http': { preexisting: ['old'], created: 's1' } }) },
      { activityType: { name: 'settleObjects' }, heartbeatDetails: details({ 'frontend:http': { created: 'not a group' } }) },
      { activityType: { name: 'realizeObjects' }, heartbeatDetails: { payloads: [{ metadata: { encoding: new TextEncoder().encode('binary/unknown') }, data: new Uint8Array([1]) }] } },
      { activityType: { name: 'realizeObjects' }, heartbeatDetails: null },
      { activityType: { name: 'realizeObjects' }, heartbeatDetails: details(['not', 'slots']) },
      // Throttled by the Engine: the slots travel wrapped with the throttle's end (activities/heartbeat.ts).
      { activityType: { name: 'realizeObjects' }, heartbeatDetails: details({ lbaasRateLimited: 1, engineRateLimitedUntil: 1, progress: { 'bind:v4:http': { preexisting: [], created: 'd1' } } }) },
    ],
    decode,
  );
  assert.deepEqual(Object.fromEntries(found), { 'backend:http': 'b1', 'server:node-1:http': 's1', 'bind:v4:http': 'd1' });
});
