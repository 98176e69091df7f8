/**
 * History shard ownership at start-up. A history host that takes a shard raises the shard's range id in the shards
 * table; when a second host joins the ring it takes half of the shards from the first, raising them again. Requests
 * that reach a shard while it moves fail with "shard closed" or "Failed to lock shard", and the matching service
 * logged exactly that while registering the workers' Worker Deployment Version on a cluster whose workers started
 * during the move. So the cluster is ready for workers only once every shard was taken since the servers started and
 * none has moved for a while.
 */
import { DATABASES } from './config';
import type { Postgres } from './postgres';

/** How long no range id may change before the shards count as settled. */
export const SHARDS_SETTLE_MS = 5_000;

/** Range id per shard id, as the shards table holds them now (empty before any host took a shard). */
export async function shardRanges(postgres: Postgres): Promise<Map<number, number>> {
  const rows = await postgres.query(DATABASES.main, 'SELECT shard_id, range_id FROM shards');
  return new Map(
    rows
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split('|').map(Number) as [number, number]),
  );
}

/** Shards (1-based ids, as Temporal numbers them) not yet taken since `before` was read. */
export function shardsNotTaken(count: number, before: Map<number, number>, now: Map<number, number>): number[] {
  const missing: number[] = [];
  for (let id = 1; id <= count; id++) {
    const range = now.get(id);
    if (range === undefined || range <= (before.get(id) ?? -1)) missing.push(id);
  }
  return missing;
}

/**
 * Polls until every one of `count` shards was taken since `before` and no range id changed for SHARDS_SETTLE_MS;
 * fails after `timeoutMs` naming the shards still waited for. `watch` runs at every step (it fails the wait when a
 * server process exits).
 */
export async function waitForShards(
  postgres: Postgres,
  count: number,
  before: Map<number, number>,
  opts: { watch: () => void; progress: (line: string) => void; timeoutMs: number },
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  let said = Date.now();
  let last = '';
  let stableSince = Date.now();
  for (;;) {
    opts.watch();
    const now = await shardRanges(postgres).catch(() => new Map<number, number>());
    const key = [...now].sort(([a], [b]) => a - b).join(';');
    if (key !== last) {
      last = key;
      stableSince = Date.now();
    }
    const missing = shardsNotTaken(count, before, now);
    if (missing.length === 0 && Date.now() - stableSince >= SHARDS_SETTLE_MS) return;
    if (Date.now() > deadline) {
      const what = missing.length > 0 ? `history shards ${missing.join(', ')} were not taken by a host` : `history shards kept moving (range ids ${key})`;
      throw new Error(`${what} within ${opts.timeoutMs / 1000} s of the cluster's start`);
    }
    if (Date.now() - said > 15_000) {
      said = Date.now();
      opts.progress(missing.length > 0 ? `waiting for history shards ${missing.join(', ')} to be taken …` : 'waiting for the history shards to settle …');
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}
