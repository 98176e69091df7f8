/**
 * Names the workflows, the worker and every client agree on: workflow ids, search attribute keys, visibility
 * queries and failure types (docs/spec.md, "Temporal surface").
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const workflowIds = {
  /**
   * One reconciliation of one service on one load balancer; the id makes it exclusive
   * (docs/spec.md#reconciliation-semantics).
   */
  loadBalancer: (serviceUid: string, loadBalancer: string) => `lbaas/${serviceUid}/lb/${loadBalancer}`,
  controller: (serviceUid: string) => `lbaas/${serviceUid}`,
  /** One pass of a controller: its reconcileService child. */
  pass: (serviceUid: string, pass: number) => `lbaas/${serviceUid}/pass/${pass}`,
  /** A dry run (planService); `run` makes each one its own workflow. */
  plan: (serviceUid: string, run: string) => `lbaas/${serviceUid}/plan/${run}`,
  /** fullResync tearing down an orphaned service's objects (only when its schedule asks to destroy orphans). */
  orphanTeardown: (serviceUid: string) => `lbaas/${serviceUid}/orphan-teardown`,
  /** fullResync runs the Schedule starts; the Schedule appends `-<UTC time>` to each. */
  scheduledResync: 'lbaas-full-resync',
  /** A fullResync started by hand (`lbaas resync --all`). */
  manualResync: (now: Date) => `lbaas-full-resync-manual-${now.toISOString()}`,
  /** One importServices run (an import holds no state worth finding again). */
  importRun: (run: string) => `lbaas-import/${run}`,
  /** One discoverCluster run of lbaas kube; `run` makes each its own workflow. */
  discoverRun: (clusterName: string, run: string) => `lbaas-discover/${clusterName}/${run}`,
  /**
   * The VIP allocation and release of one Service (lbaas kube): one id per Service and operation, so that two
   * replicas or a retry starting it at once join one run instead of reserving twice.
   */
  vipAllocate: (serviceUid: string) => `lbaas-vip/${serviceUid}/allocate`,
  vipRelease: (serviceUid: string) => `lbaas-vip/${serviceUid}/release`,
  /** The pool workflow of a server pool (a prefix no service uid can produce: uids have no "/"). */
  pool: (name: string) => `lbaas-pool/${name}`,
  /**
   * One delivery round of a pool (workflows/pool-round.ts): `round` is the pool chain's first run id prefix and the
   * round's number, so that a pool deleted and created again never collides with a round of its predecessor.
   */
  poolRound: (name: string, round: string) => `lbaas-pool/${name}/round/${round}`,
  /**
   * The service a controller, pass or load balancer workflow belongs to, read back from its id (null for any other
   * id). Service uids contain no "/", so the first segment after `lbaas/` is the uid.
   */
  serviceOf(workflowId: string): string | null {
    const match = /^lbaas\/([^/]+)(?:\/(?:lb|pass|plan)\/.+)?$/.exec(workflowId);
    return match?.[1] ?? null;
  },
  /** The load balancer of a load balancer workflow (`lbaas/<uid>/lb/<load balancer>`), read back from its id; else null. */
  loadBalancerOf(workflowId: string): string | null {
    const match = /^lbaas\/[^/]+\/lb\/(.+)$/.exec(workflowId);
    return match?.[1] ?? null;
  },
};

/**
 * Page size of every visibility listing of ours. A page of 1,000 running controllers (the server's default maximum)
 * was refused with RESOURCE_EXHAUSTED "System Persistence Max QPS Reached" by the SQLite dev server (`lbaas dev`, the
 * tests and benchmarks), which reads its search attributes again for each row; the full resync's listing then failed
 * on every retry. 100 rows a page answered.
 */
export const VISIBILITY_PAGE_SIZE = 100;

/** Visibility query for the running server pools of one deployment. */
export function runningPoolsQuery(taskQueue: string): string {
  return `WorkflowType = 'serverPool' AND ExecutionStatus = 'Running' AND TaskQueue = '${taskQueue.replace(/'/g, "\\'")}'`;
}

/**
 * Visibility query for the running controllers of one deployment whose spec names server pool `pool` (they upsert
 * `LbaasServerPool`, workflows/controller.ts): who a pool's delivery round signals and whose state its convergence is
 * counted from.
 */
export function poolServicesQuery(taskQueue: string, pool: string): string {
  return `${runningControllersQuery(taskQueue)} AND LbaasServerPool = '${pool.replace(/'/g, "\\'")}'`;
}

/** Visibility query for the running controllers of one deployment (its task queue; a namespace may hold others). */
export function runningControllersQuery(taskQueue: string): string {
  return `WorkflowType = 'serviceController' AND ExecutionStatus = 'Running' AND TaskQueue = '${taskQueue.replace(/'/g, "\\'")}'`;
}

/** The custom search attributes; a namespace must register them before a worker starts (docs/operations.md). */
export const searchAttributes = {
  serviceUid: defineSearchAttributeKey('LbaasServiceUid', SearchAttributeType.KEYWORD),
  loadBalancers: defineSearchAttributeKey('LbaasLoadBalancers', SearchAttributeType.KEYWORD_LIST),
  phase: defineSearchAttributeKey('LbaasPhase', SearchAttributeType.KEYWORD),
  /** On a pool workflow its name; on a controller the pool its spec names (so `LbaasServerPool = "x"` finds both). */
  serverPool: defineSearchAttributeKey('LbaasServerPool', SearchAttributeType.KEYWORD),
  /**
   * On a controller using a pool: the pool revision its last finished pass reconciled (with `LbaasPhase` saying how it
   * ended). A pool's convergence is counted from these (client/pool-client.ts); the pool itself keeps no subscribers.
   */
  poolRevision: defineSearchAttributeKey('LbaasPoolRevision', SearchAttributeType.INT),
};

/** A controller's `LbaasPhase`. */
export type Phase = 'Converging' | 'Converged' | 'Failed' | 'Deleting';

/** The ApplicationFailure types raised on purpose, by workflows and by activities; each is non-retryable unless noted. */
export const FAILURE_TYPES = {
  /** A workflow input, update argument or spec that does not validate. */
  invalidInput: 'InvalidInput',
  /** A reconciliation spent its passes without converging. */
  notConverged: 'NotConverged',
  /** A reconciliation failed; its message names what failed, its details carry the partial result. */
  reconcileFailed: 'ReconcileFailed',
  /** Activity: the object is still NewlyCreated/Updating; retryable, a benign and expected retry. */
  notReady: 'NotReady',
  /** Activity: a 4xx that retrying cannot fix; the reconciliation fails with the Engine's message. */
  engineRejected: 'EngineRejected',
  /** Activity: a result too large for Temporal's payload limit; the reconciliation fails naming it. */
  payloadTooLarge: 'PayloadTooLarge',
} as const;

/**
 * How a controller's result names a pass that was terminated from outside (by the worker's stranded-run sweep,
 * worker/stranded.ts, or an operator): the controller cannot see the termination's reason, `lbaas status` reads it
 * from the pass's history. Such a pass is retried at the first retry step and not counted as a failure.
 */
export const PASS_TERMINATED = 'pass terminated from outside its controller';
