/**
 * A kept cluster (`lbaas dev --cluster` keeps its state in .lbaas/cluster) started again: once on its saved ports, and
 * once after a saved layout that no longer qualifies (here a PostgreSQL port in the kernel's ephemeral range, as older
 * lbaas versions drew them) made it draw new ports. Each start must bring every server process up and joined: the
 * frontend rewrites the cluster metadata with its new address before the others start, and the membership rows of the
 * last run (hosts that are gone) are cleared, so that the membership table names exactly the processes now running.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { Connection } from '@temporalio/client';
import { startCluster, type Cluster } from '../../cluster';
import { DATABASES } from '../../cluster/config';
import { PORT_RANGE, type PortLayout } from '../../cluster/ports';
import { shardRanges, shardsNotTaken } from '../../cluster/shards';

/** The membership ports of the rows in cluster_membership, sorted. */
async function membershipPorts(cluster: Cluster): Promise<number[]> {
  const rows = await cluster.postgres.query(DATABASES.main, 'SELECT rpc_port FROM cluster_membership');
  return rows.split('\n').filter(Boolean).map(Number).sort((a, b) => a - b);
}

async function expectWhole(cluster: Cluster, layout: PortLayout, when: string, shardsBefore: Map<number, number>): Promise<Map<number, number>> {
  assert.deepEqual(cluster.processes.filter((p) => !p.running).map((p) => p.name), [], `${when}: every server process runs`);
  // Workers may start now: each of the 4 history shards was taken by a host of this start (its range id grew).
  const shards = await shardRanges(cluster.postgres);
  assert.deepEqual(shardsNotTaken(4, shardsBefore, shards), [], `${when}: every history shard taken since the start (range ids before ${JSON.stringify([...shardsBefore])}, now ${JSON.stringify([...shards])})`);
  const expected = Object.values(layout.processes).map((p) => p.membership).sort((a, b) => a - b);
  assert.deepEqual(await membershipPorts(cluster), expected, `${when}: one membership row per running process, none of an earlier run`);
  const connection = await Connection.connect({ address: cluster.address });
  try {
    const { namespaceInfo } = await connection.workflowService.describeNamespace({ namespace: cluster.namespace });
    assert.equal(namespaceInfo?.name, cluster.namespace, `${when}: the frontend serves the namespace`);
  } finally {
    await connection.close();
  }
  return shards;
}

test('a kept cluster starts again whole, on its saved ports and after drawing new ones', { timeout: 900_000 }, async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-kept-cluster-'));
  // As root, PostgreSQL runs as the postgres user, which must pass through this directory (mkdtemp makes it 0700).
  await chmod(dir, 0o711);
  const stateDir = path.join(dir, 'cluster');
  const portsFile = path.join(stateDir, 'ports.json');
  const progress = (line: string) => t.diagnostic(line);
  const layout = async () => JSON.parse(await readFile(portsFile, 'utf8')) as PortLayout;
  try {
    const first = await startCluster({ stateDir, progress });
    const firstLayout = await layout();
    let shards = new Map<number, number>();
    try {
      shards = await expectWhole(first, firstLayout, 'new cluster', shards);
    } finally {
      await first.stop();
    }

    const again = await startCluster({ stateDir, progress });
    try {
      assert.equal(again.address, first.address, 'the saved ports are kept');
      shards = await expectWhole(again, firstLayout, 'kept cluster', shards);
    } finally {
      await again.stop();
    }

    // A layout from an older lbaas: its PostgreSQL port in the ephemeral range.
    await writeFile(portsFile, JSON.stringify({ ...firstLayout, postgres: PORT_RANGE.high + 7000 }));
    const redrawn = await startCluster({ stateDir, progress });
    try {
      const newLayout = await layout();
      assert.ok(newLayout.postgres >= PORT_RANGE.low && newLayout.postgres <= PORT_RANGE.high, `PostgreSQL port ${newLayout.postgres} drawn anew`);
      assert.equal(redrawn.address, `127.0.0.1:${newLayout.processes['frontend']?.grpc}`, 'the frontend on its new port');
      await expectWhole(redrawn, newLayout, 'kept cluster on new ports', shards);
    } finally {
      await redrawn.stop();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
