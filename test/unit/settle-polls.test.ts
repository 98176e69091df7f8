/**
 * settleObjects tells its caller of every readiness GET, per object, as realizeObjects does: the benchmark's poll
 * counts and gaps (dev/worker-process.ts) include what settleObjects polls, which is all the polling its `retry`
 * modes do.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EngineClient } from '../../activities/engine';
import { settleObjects } from '../../activities/settle';

const DEPLOYED = { state: { id: '3', title: 'Deployed', text: 'Deployed', type: 1 } };
const DEPLOYING = { state: { id: '4', title: 'NewlyCreated', text: 'NewlyCreated', type: 2 } };

test('settleObjects reports each readiness GET with the kind and identifier it read: a Server ready on its 3rd GET is reported 3 times, one ready at once 1 time', async () => {
  const answers: Record<string, unknown[]> = { s1: [DEPLOYING, DEPLOYING, DEPLOYED], s2: [DEPLOYED] };
  const gets: string[] = [];
  const engine = {
    async get(_kind: string, identifier: string) {
      gets.push(identifier);
      return (answers[identifier] as unknown[]).shift();
    },
  } as unknown as EngineClient;
  const polled: string[] = [];
  const result = await settleObjects(
    engine,
    { objects: [{ kind: 'server', identifier: 's1', name: 'web-1' }, { kind: 'server', identifier: 's2', name: 'web-2' }] },
    { pollFirstMs: 1, pollMaxMs: 1, windowMs: 10_000 },
    { onPoll: (kind, identifier) => polled.push(`${kind}:${identifier}`) },
  );
  assert.deepEqual(result.map((r) => [r.identifier, r.outcome]), [['s1', 'Deployed'], ['s2', 'Deployed']]);
  assert.deepEqual(polled.sort(), ['server:s1', 'server:s1', 'server:s1', 'server:s2']);
  assert.equal(polled.length, gets.length);
});
