/**
 * The closing observation of a round and the recent-reads switch (activities/state.ts, retrieveState's
 * `recentReads`): by default an object this worker read Deployed since the round began is not read again; with the
 * switch off (the bench's `no-recent-reads` worker) it is, one GET more per such object.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IdentifierCache, retrieveState } from '../../activities/state';
import { BACKEND, BACKEND_ID, LB_ID, TAG, harness, page } from '../helpers/engine-mock';

const SERVICE_UID = TAG.slice('anxccm-svc-uid='.length);

/** An Engine double (the Core resource list is not enveloped) that lists the Backend under the service's tag and answers its GET; counts each kind of request. */
function engine() {
  const h = harness();
  h.reply((seen) => ({ status: 200, body: seen.path.includes(BACKEND_ID) ? BACKEND : page(1, 1, [{ identifier: BACKEND_ID, name: BACKEND.name }]).data }), 10);
  const gets = () => h.seen.filter((s) => s.method === 'GET' && s.path.includes(BACKEND_ID)).length;
  const lists = () => h.seen.filter((s) => s.method === 'GET' && !s.path.includes(BACKEND_ID)).length;
  return { h, gets, lists };
}

for (const recentReads of [true, false]) {
  test(`recentReads ${recentReads ? 'on (default)' : 'off'}: the closing observation ${recentReads ? 'takes the Backend from the read of this round' : 'reads the Backend again'}`, async () => {
    const { h, gets, lists } = engine();
    const known = new IdentifierCache();
    known.set(BACKEND_ID, 'backend');
    const roundStart = h.client.readMark();
    // The round watched the Backend until it answered Deployed.
    await h.client.get('backend', BACKEND_ID);
    assert.equal(gets(), 1);
    const snapshot = await retrieveState(h.client, known, { serviceUid: SERVICE_UID, loadBalancer: LB_ID, readsSince: roundStart }, recentReads ? {} : { recentReads: false });
    assert.deepEqual(
      snapshot.objects.map((o) => o.identifier),
      [BACKEND_ID],
    );
    assert.equal(lists(), 1, 'the tag index is listed either way');
    assert.equal(gets(), recentReads ? 1 : 2, recentReads ? 'no second GET of the Backend' : 'one more GET of the Backend');
    // Without `readsSince` (not a closing observation) the switch changes nothing: the Backend is read.
    await retrieveState(h.client, known, { serviceUid: SERVICE_UID, loadBalancer: LB_ID }, recentReads ? {} : { recentReads: false });
    assert.equal(gets(), recentReads ? 2 : 3);
    await h.agent.close();
  });
}

test('a closing observation given a mark of another worker, or a time (what builds before marks sent), reads the Backend again', async () => {
  const { h, gets } = engine();
  const elsewhere = engine();
  const known = new IdentifierCache();
  known.set(BACKEND_ID, 'backend');
  const epochMs = Date.now() - 60_000;
  await h.client.get('backend', BACKEND_ID);
  await retrieveState(h.client, known, { serviceUid: SERVICE_UID, loadBalancer: LB_ID, readsSince: elsewhere.h.client.readMark() });
  assert.equal(gets(), 2, "another worker's mark is not honoured");
  await retrieveState(h.client, known, { serviceUid: SERVICE_UID, loadBalancer: LB_ID, readsSince: epochMs });
  assert.equal(gets(), 3, 'a number is not a mark');
  await h.agent.close();
  await elsewhere.h.agent.close();
});

test('retrieveState returns the mark it took before its first read: the next observation honours it', async () => {
  const { h, gets } = engine();
  const known = new IdentifierCache();
  known.set(BACKEND_ID, 'backend');
  const first = await retrieveState(h.client, known, { serviceUid: SERVICE_UID, loadBalancer: LB_ID });
  assert.equal(first.readMark.reader, h.client.readMark().reader);
  assert.equal(gets(), 1);
  await retrieveState(h.client, known, { serviceUid: SERVICE_UID, loadBalancer: LB_ID, readsSince: first.readMark });
  assert.equal(gets(), 1, 'the Backend read by the first observation closes the round');
  await h.agent.close();
});
