/**
 * Server pools from a Temporal client: create or replace (update-with-start, so `set` creates the pool), add,
 * remove, status, wait, list, delete. A pool is the workflow `lbaas-pool/<name>` (workflows/pool.ts); this file
 * only talks to it. Refusals by the pool (invalid members, delete while services use it) surface as
 * WorkflowUpdateFailedError with the pool's message; a pool that does not exist as PoolNotFoundError.
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
  poolStatusQuery,
  poolWaitUpdate,
  runningPoolsQuery,
  VISIBILITY_PAGE_SIZE,
  searchAttributes,
  workflowIds,
  workflowTypes,
  type PoolChangeResult,
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
    return untilAnswered(() => this.client.workflow.executeUpdateWithStart(poolSetUpdate, { args: [pool.servers], updateId, startWorkflowOperation: op() }), { rpcTimeouts: 'throw' });
  }

  async add(name: string, servers: ServerSpec[]): Promise<PoolChangeResult> {
    await this.require(name);
    return this.#update(name, () => this.handle(name), poolAddUpdate, [servers]);
  }

  async remove(name: string, names: string[]): Promise<PoolChangeResult> {
    await this.require(name);
    return this.#update(name, () => this.handle(name), poolRemoveUpdate, [names]);
  }

  /**
   * An update, sent again under the same update id when the RPC's deadline passes before the pool answered (a busy
   * server or worker: a pool with hundreds of subscribers takes a while per task). The same id makes the retry
   * return the first one's outcome instead of changing the pool twice.
   */
  async #update<R, A extends [unknown, ...unknown[]]>(name: string, handle: () => WorkflowHandle, def: UpdateDefinition<R, A>, args: A): Promise<R> {
    return updateUntilAnswered(handle, def, args, `${name}-${randomUUID()}`);
  }


  async status(name: string): Promise<PoolStatus> {
    await this.require(name);
    return this.handle(name).query(poolStatusQuery);
  }

  /**
   * Waits until every service using the pool has finished a pass for `revision` (or a newer one). A pool continues as
   * new while waits are open (its history grows with every report); Temporal then fails the wait, and it is sent again,
   * under a new update id, to the pool's new run. A pool that ended (deleted) answers the resend with an error.
   */
  async waitConverged(name: string, revision: number): Promise<PoolWaitResult> {
    for (;;) {
      try {
        return await this.#update(name, () => this.handle(name), poolWaitUpdate, [revision]);
      } catch (err) {
        if (!isOutlivedByRun(err)) throw err;
      }
    }
  }

  /** Refused (WorkflowUpdateFailedError naming the services) while services use the pool. */
  async delete(name: string): Promise<{ name: string; revision: number }> {
    await this.require(name);
    const updateId = `${name}-delete-${randomUUID()}`;
    return untilAnswered(() => this.handle(name).executeUpdate(poolDeleteUpdate, { updateId }), { rpcTimeouts: 'throw' });
  }

  /** Running pools (visibility, so a pool created a second ago may be missing for a moment), each with its status. */
  async list(): Promise<PoolStatus[]> {
    const names: string[] = [];
    for await (const wf of this.client.workflow.list({ query: runningPoolsQuery(this.taskQueue), pageSize: VISIBILITY_PAGE_SIZE })) {
      names.push(wf.typedSearchAttributes.get(searchAttributes.serverPool) ?? wf.workflowId.replace(/^lbaas-pool\//, ''));
    }
    const out = await Promise.all(names.map((n) => this.handle(n).query(poolStatusQuery).catch(() => null)));
    return out.filter((s): s is PoolStatus => s !== null).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }
}
