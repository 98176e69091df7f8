/**
 * Server pools from a Temporal client: create or replace (update-with-start, so `set` creates the pool), add,
 * remove, status, wait, list, delete. A pool is the workflow `lbaas-pool/<name>` (workflows/pool.ts), which holds
 * members and revision only; the services using it, and how far each got, are read from visibility: the
 * controllers' `LbaasServerPool`, `LbaasPoolRevision` and `LbaasPhase` (docs/architecture.md, "Server pools").
 * Refusals by the pool (invalid members) surface as WorkflowUpdateFailedError with the pool's message, a delete while
 * services use it as PoolInUseError, a pool that does not exist as PoolNotFoundError.
 */
import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, type Client, type WorkflowHandle } from '@temporalio/client';
import { isOutlivedByRun, untilAnswered, updateUntilAnswered } from './update';
import { WorkflowNotFoundError, type UpdateDefinition } from '@temporalio/common';
import type { PoolFile, ServerSpec } from '../domain';
import {
  poolAddUpdate,
  poolDeleteUpdate,
  poolRemoveUpdate,
  poolSetUpdate,
  poolServicesQuery,
  poolStatusQuery,
  poolWaitUpdate,
  runningPoolsQuery,
  VISIBILITY_PAGE_SIZE,
  searchAttributes,
  workflowIds,
  workflowTypes,
  type Phase,
  type PoolChange,
  type PoolChangeResult,
  type PoolMembersStatus,
  type PoolServiceCounts,
  type PoolServiceStatus,
  type PoolStatus,
  type PoolWaitResult,
  type ServerPoolWorkflow,
  SCHEMA_VERSION,
} from '../contract';

export class PoolNotFoundError extends Error {
  constructor(readonly pool: string) {
    super(`no server pool ${pool} (create it with: lbaas pool set -f FILE)`);
    this.name = 'PoolNotFoundError';
  }
}

/** A delete refused because visibility shows services using the pool. */
export class PoolInUseError extends Error {
  constructor(
    readonly pool: string,
    readonly services: string[],
  ) {
    super(`server pool ${pool} is used by ${services.length} ${services.length === 1 ? 'service' : 'services'}: ${services.slice(0, 20).join(', ')}${services.length > 20 ? ` and ${services.length - 20} more` : ''}; move them off the pool (or delete them) first`);
    this.name = 'PoolInUseError';
  }
}

/** Between two counts of a pool wait. */
export const POOL_WAIT_POLL_MS = 1_000;

export class PoolClient {
  constructor(
    readonly client: Client,
    readonly taskQueue: string,
  ) {}

  handle(name: string): WorkflowHandle<ServerPoolWorkflow> {
    return this.client.workflow.getHandle<ServerPoolWorkflow>(workflowIds.pool(name));
  }

  /** The pool's workflow is running. */
  async exists(name: string): Promise<boolean> {
    try {
      return (await this.handle(name).describe()).status.name === 'RUNNING';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  }

  /** Throws PoolNotFoundError unless the pool is running. */
  async require(name: string): Promise<void> {
    if (!(await this.exists(name))) throw new PoolNotFoundError(name);
  }

  /** Replaces the members, creating the pool when it has none. */
  async set(pool: PoolFile): Promise<PoolChangeResult> {
    const op = () =>
      new WithStartWorkflowOperation<ServerPoolWorkflow>(workflowTypes.serverPool, {
        workflowId: workflowIds.pool(pool.name),
        taskQueue: this.taskQueue,
        args: [{ v: SCHEMA_VERSION, name: pool.name }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        staticSummary: `server pool ${pool.name}`,
        typedSearchAttributes: [{ key: searchAttributes.serverPool, value: pool.name }],
      });
    // The same update id on every send, a new start operation each (one can be used once): client/update.ts.
    const updateId = `${pool.name}-set-${randomUUID()}`;
    return this.#withServices(await untilAnswered(() => this.client.workflow.executeUpdateWithStart(poolSetUpdate, { args: [pool.servers], updateId, startWorkflowOperation: op() }), { rpcTimeouts: 'throw' }));
  }

  async add(name: string, servers: ServerSpec[]): Promise<PoolChangeResult> {
    await this.require(name);
    return this.#withServices(await this.#update(name, () => this.handle(name), poolAddUpdate, [servers]));
  }

  async remove(name: string, names: string[]): Promise<PoolChangeResult> {
    await this.require(name);
    return this.#withServices(await this.#update(name, () => this.handle(name), poolRemoveUpdate, [names]));
  }

  /** The change with the number of services using the pool (its delivery round signals each). */
  async #withServices(r: PoolChange): Promise<PoolChangeResult> {
    return { ...r, services: await this.#count(poolServicesQuery(this.taskQueue, r.name)) };
  }

  async #count(query: string): Promise<number> {
    return (await this.client.workflow.count(query)).count;
  }

  /**
   * An update, sent again under the same update id when the RPC's deadline passes before the pool answered (a busy
   * server or worker: a pool with hundreds of subscribers takes a while per task). The same id makes the retry
   * return the first one's outcome instead of changing the pool twice.
   */
  async #update<R, A extends [unknown, ...unknown[]]>(name: string, handle: () => WorkflowHandle, def: UpdateDefinition<R, A>, args: A): Promise<R> {
    return updateUntilAnswered(handle, def, args, `${name}-${randomUUID()}`);
  }


  /** What the pool's own workflow knows: members, revision, its newest delivery round. */
  async members(name: string): Promise<PoolMembersStatus> {
    await this.require(name);
    return this.handle(name).query(poolStatusQuery);
  }

  /**
   * The pool, and its services with what each last reconciled (visibility, so seconds behind at most). A pool still
   * running the previous release's loop (during a rollout) answers with its own subscribers, which are shown.
   */
  async status(name: string): Promise<PoolStatus> {
    const pool = await this.members(name);
    const services = previousLoopServices(pool) ?? (await this.services(name));
    return { name: pool.name, revision: pool.revision, servers: pool.servers, deleting: pool.deleting, round: pool.round ?? null, services, counts: countOf(services, pool.revision) };
  }

  /** The services using the pool, by uid: every running controller whose spec names it. */
  async services(name: string): Promise<PoolServiceStatus[]> {
    const out: PoolServiceStatus[] = [];
    for await (const wf of this.client.workflow.list({ query: poolServicesQuery(this.taskQueue, name), pageSize: VISIBILITY_PAGE_SIZE })) {
      const uid = wf.typedSearchAttributes.get(searchAttributes.serviceUid) ?? workflowIds.serviceOf(wf.workflowId) ?? wf.workflowId;
      const revision = wf.typedSearchAttributes.get(searchAttributes.poolRevision);
      const phase = wf.typedSearchAttributes.get(searchAttributes.phase) as Phase | undefined;
      const finished = revision !== undefined && (phase === 'Converged' || phase === 'Failed');
      out.push({
        serviceUid: uid,
        convergedRevision: finished && phase === 'Converged' ? revision : null,
        // A service converging (a pass running or due) has no outcome to show for the revision yet.
        last: finished ? { revision, converged: phase === 'Converged' } : null,
      });
    }
    return out.sort((x, y) => (x.serviceUid < y.serviceUid ? -1 : x.serviceUid > y.serviceUid ? 1 : 0));
  }

  /**
   * For `revision`: the services using the pool, and how many have finished a pass for it (or a newer one) converged
   * or failed; the rest are pending. Three visibility counts, cheap at any size (a wait polls them).
   */
  async counts(name: string, revision: number): Promise<PoolServiceCounts> {
    const base = poolServicesQuery(this.taskQueue, name);
    const at = `${base} AND ${searchAttributes.poolRevision.name} >= ${revision} AND ${searchAttributes.phase.name} = `;
    const [services, converged, failed] = await Promise.all([this.#count(base), this.#count(`${at}'Converged'`), this.#count(`${at}'Failed'`)]);
    return { revision, services, converged, failed, pending: Math.max(0, services - converged - failed) };
  }

  /**
   * Waits until every service using the pool has finished a pass for `revision` (or a newer one), converged or
   * failed, as their controllers publish it. Counts are polled (`onProgress` gets each); when they show nothing
   * pending, one listing confirms it service by service (three counts are not one snapshot) and is the answer.
   */
  async waitConverged(name: string, revision: number, onProgress?: (c: PoolServiceCounts) => void, pollMs = POOL_WAIT_POLL_MS): Promise<PoolWaitResult> {
    let pool = await this.members(name);
    if (!Number.isInteger(revision) || revision < 0 || revision > pool.revision) throw new Error(`revision: must be a revision of the pool from 0 to ${pool.revision}`);
    // A pool still running the previous release's loop (a rollout) knows its subscribers and answers the wait itself;
    // when it moves to this build (continue-as-new), Temporal fails the open wait and it is counted from here on.
    while (previousLoopServices(pool) !== null) {
      try {
        return await this.#update(name, () => this.handle(name), poolWaitUpdate, [revision]);
      } catch (err) {
        if (!isOutlivedByRun(err)) throw err;
      }
      pool = await this.members(name);
    }
    for (;;) {
      const c = await this.counts(name, revision);
      onProgress?.(c);
      if (c.pending === 0) {
        const services = await this.services(name);
        const settled = countOf(services, revision);
        if (settled.pending === 0) return { name, revision, converged: settled.failed === 0, services };
      }
      await new Promise((r) => setTimeout(r, pollMs).unref());
    }
  }

  /** Refused (PoolInUseError naming the services) while visibility shows services using the pool. */
  async delete(name: string): Promise<{ name: string; revision: number }> {
    await this.require(name);
    const using = await this.services(name);
    if (using.length > 0) throw new PoolInUseError(name, using.map((s) => s.serviceUid));
    const updateId = `${name}-delete-${randomUUID()}`;
    return untilAnswered(() => this.handle(name).executeUpdate(poolDeleteUpdate, { updateId }), { rpcTimeouts: 'throw' });
  }

  /** Running pools (visibility, so a pool created a second ago may be missing for a moment), each with its status. */
  async list(): Promise<(PoolMembersStatus & { services: number })[]> {
    const names: string[] = [];
    for await (const wf of this.client.workflow.list({ query: runningPoolsQuery(this.taskQueue), pageSize: VISIBILITY_PAGE_SIZE })) {
      names.push(wf.typedSearchAttributes.get(searchAttributes.serverPool) ?? wf.workflowId.replace(/^lbaas-pool\//, ''));
    }
    const out = await Promise.all(
      names.map(async (n) => {
        const s = await this.handle(n)
          .query(poolStatusQuery)
          .catch(() => null);
        return s === null ? null : { ...s, services: await this.#count(poolServicesQuery(this.taskQueue, n)) };
      }),
    );
    return out.filter((s) => s !== null).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }
}

/** The subscribers a pool of the previous release's loop answers its `status` with; null for today's pool. */
function previousLoopServices(pool: PoolMembersStatus): PoolServiceStatus[] | null {
  const services = (pool as unknown as { services?: unknown }).services;
  return Array.isArray(services) ? (services as PoolServiceStatus[]) : null;
}

/** Counts for `revision` from listed services (one listing: a consistent view of each service). */
export function countOf(services: PoolServiceStatus[], revision: number): PoolServiceCounts {
  const converged = services.filter((s) => (s.convergedRevision ?? -1) >= revision).length;
  const failed = services.filter((s) => s.last !== null && !s.last.converged && s.last.revision >= revision).length;
  return { revision, services: services.length, converged, failed, pending: services.length - converged - failed };
}
