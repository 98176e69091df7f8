/**
 * Activities of server pools (docs/architecture.md, "Server pools"), built around the worker's Temporal client; they
 * never see the Engine token.
 *
 * - deliverPoolPage: one page of a delivery round (workflows/pool-round.ts): lists the next page of the controllers
 *   whose `LbaasServerPool` names the pool and signals each the round's revision. From here a signal costs the round
 *   no history event and is not one of a workflow's pending signals (Temporal allows 2,000 per workflow), so a round
 *   reaches 50,000 services in a few dozen activities.
 * - readServerPool: what a controller does when it starts using a pool (and at every new run): waits until
 *   visibility shows its own run with `LbaasServerPool` naming the pool, then reads the pool's members and revision
 *   with its `status` query. The order is what lets a pool keep no subscribers: any revision the read does not see
 *   is newer, so its round lists visibility after this run was visible there, and signals it.
 */
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { poolMembersSignal, poolServicesQuery, poolStatusQuery, SCHEMA_VERSION, workflowIds, type PoolDelta, type PoolMembers } from '../contract';
import type { ServerSpec } from '../domain';
import { SIGNAL_CONCURRENCY } from './control';
import { withHeartbeat } from './heartbeat';
import { mapLimit } from './state';

export interface DeliverPoolPageInput {
  pool: string;
  revision: number;
  /** Every member, or what changed since a revision (a controller at that revision or later applies it). */
  servers?: ServerSpec[];
  delta?: PoolDelta;
  /** The page to list (base64 of visibility's page token); null: the first. */
  pageToken: string | null;
  pageSize: number;
}

export interface DeliverPoolPageResult {
  listed: number;
  signalled: number;
  /** Listed, but ended before the signal reached them. */
  gone: number;
  /** The next page; null after the last. */
  nextPageToken: string | null;
}

export interface ReadServerPoolInput {
  pool: string;
  /** The controller's workflow id and run id: the run whose visibility record must show the pool first. */
  workflowId: string;
  runId: string;
}

/** Between looks at visibility while a controller's own record does not show its pool yet. */
const VISIBLE_POLL_MS = 250;

const quoted = (s: string) => `'${s.replace(/'/g, "\\'")}'`;

export function createPoolActivities(client: Client, options: { signalConcurrency?: number } = {}) {
  const concurrency = options.signalConcurrency ?? SIGNAL_CONCURRENCY;
  return {
    async deliverPoolPage(input: DeliverPoolPageInput): Promise<DeliverPoolPageResult> {
      return withHeartbeat<number, DeliverPoolPageResult>(async (hb) => {
        const query = poolServicesQuery(Context.current().info.taskQueue, input.pool);
        const page = await client.workflowService.listWorkflowExecutions({
          namespace: client.options.namespace,
          query,
          pageSize: input.pageSize,
          ...(input.pageToken ? { nextPageToken: Buffer.from(input.pageToken, 'base64') } : {}),
        });
        const ids = (page.executions ?? []).map((e) => e.execution?.workflowId).filter((id): id is string => typeof id === 'string');
        const message = { v: SCHEMA_VERSION as typeof SCHEMA_VERSION, pool: input.pool, revision: input.revision, ...(input.servers ? { servers: input.servers } : { delta: input.delta }) };
        let signalled = 0;
        let gone = 0;
        await mapLimit(ids, concurrency, async (id) => {
          try {
            await client.workflow.getHandle(id).signal(poolMembersSignal, message);
            signalled++;
          } catch (err) {
            // Ended between listing and signal (deleted, or moved off the pool and ended): nothing to reach.
            if (!(err instanceof WorkflowNotFoundError)) throw err;
            gone++;
          }
          hb.record(signalled + gone);
        });
        const next = page.nextPageToken && page.nextPageToken.length > 0 ? Buffer.from(page.nextPageToken).toString('base64') : null;
        return { listed: ids.length, signalled, gone, nextPageToken: next };
      });
    },

    /** The pool's members and revision, once visibility shows this run using it; null when there is no such pool. */
    async readServerPool(input: ReadServerPoolInput): Promise<PoolMembers | null> {
      return withHeartbeat(async () => {
        const query = `WorkflowId = ${quoted(input.workflowId)} AND RunId = ${quoted(input.runId)} AND LbaasServerPool = ${quoted(input.pool)}`;
        for (let looks = 0; (await client.workflow.count(query)).count === 0; looks++) {
          if (looks === 40) Context.current().log.info(`waiting for visibility to show ${input.workflowId} using server pool ${input.pool} before reading its members`);
          await Context.current().sleep(VISIBLE_POLL_MS);
        }
        try {
          const s = await client.workflow.getHandle(workflowIds.pool(input.pool)).query(poolStatusQuery);
          // A pool being deleted (or ended) is no pool to use: the service's revision fails naming it.
          if (s.deleting) return null;
          return { pool: input.pool, revision: s.revision, servers: s.servers };
        } catch (err) {
          if (err instanceof WorkflowNotFoundError) return null;
          throw err;
        }
      });
    },
  };
}

export type PoolActivities = ReturnType<typeof createPoolActivities>;
