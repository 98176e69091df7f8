/**
 * dev/devserver.ts: lbaas's search attributes are usable the moment startDevServer resolves, in every namespace it
 * prepared, by each of the server's services: the frontend (visibility queries, workflow starts, describe) and history
 * (it names the attributes in the events it hands out). On SQL visibility each service maps the names from its own copy
 * of the namespace record; the dev server no longer forces a re-read of the record for every use
 * (`system.forceSearchAttributesCacheRefreshOnRead`, which cost a persistence read per visibility row and failed large
 * listings with RESOURCE_EXHAUSTED), so start-up waits until the names are taken up.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { parse } from 'yaml';
import { searchAttributes } from '../../contract';
import { renderDevDynamicConfig, SEARCH_ATTRIBUTES, startDevServer, type DevServer } from '../../dev/devserver';

const EXTRA = 'lbaas-sa-probe';
let server: DevServer;
let connection: Connection;

before(async () => {
  server = await startDevServer({ extraNamespaces: [EXTRA] });
  connection = await Connection.connect({ address: server.address });
});

after(async () => {
  await connection?.close();
  await server?.stop();
});

test('the dev server does not force a namespace read per search-attribute use', () => {
  assert.doesNotMatch(renderDevDynamicConfig(), /forceSearchAttributesCacheRefreshOnRead/);
});

test('namespace records are read again every 250 ms while the server starts, every 2 s (the server default) once started', () => {
  const refresh = (yaml: string) => (parse(yaml) as Record<string, [{ value: unknown }]>)['system.namespaceCacheRefreshInterval'];
  assert.deepEqual(refresh(renderDevDynamicConfig()), [{ value: '250ms' }]);
  assert.deepEqual(refresh(renderDevDynamicConfig({ started: true })), [{ value: '2000ms' }]);
});

for (const namespace of ['default', EXTRA]) {
  test(`right after start, namespace ${namespace}: a query on every attribute is accepted, and a workflow started with all five shows them in describe and in its history`, async () => {
    // No pause between start and first use: this is what a test or `lbaas dev` user does.
    const client = new Client({ connection, namespace });
    const query = Object.entries(SEARCH_ATTRIBUTES)
      .map(([name, type]) => `${name} = ${type === 'Int' ? '-1' : "'none'"}`)
      .join(' AND ');
    assert.equal(await client.workflow.count(query).then((c) => c.count), 0);

    const handle = await client.workflow.start('searchAttributeProbe', {
      taskQueue: 'no-worker-polls-this',
      workflowId: `sa-probe-${namespace}`,
      typedSearchAttributes: [
        { key: searchAttributes.serviceUid, value: 'svc-1' },
        { key: searchAttributes.loadBalancers, value: ['lb-a', 'lb-b'] },
        { key: searchAttributes.phase, value: 'Converging' },
        { key: searchAttributes.serverPool, value: 'pool-1' },
        { key: searchAttributes.poolRevision, value: 7 },
      ],
    });
    try {
      const described = (await handle.describe()).typedSearchAttributes;
      assert.deepEqual(
        [described.get(searchAttributes.serviceUid), described.get(searchAttributes.loadBalancers), described.get(searchAttributes.phase), described.get(searchAttributes.serverPool), described.get(searchAttributes.poolRevision)],
        ['svc-1', ['lb-a', 'lb-b'], 'Converging', 'pool-1', 7],
      );
      const history = await handle.fetchHistory();
      const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
      assert.ok(started, 'the first event is WorkflowExecutionStarted');
      // History drops a field it cannot name (a stale copy of the namespace record) instead of failing.
      assert.deepEqual(Object.keys(started.searchAttributes?.indexedFields ?? {}).sort(), Object.keys(SEARCH_ATTRIBUTES).sort());
    } finally {
      await handle.terminate('probe done');
    }
  });
}
