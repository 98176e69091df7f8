/**
 * Every signal, update and query, grouped by the workflow that handles it (docs/spec.md, "Temporal surface").
 * Workflows set the handlers; clients, the worker and other workflows send them from these same definitions.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type {
  ControllerStatus,
  LoadBalancerProgress,
  PassResult,
  PoolChange,
  PoolMembersMessage,
  PoolMembersStatus,
  PoolReport,
  PoolWaitResult,
} from './payloads';
import type { SchemaVersion } from './schema';

/** Signals of this build carry the schema version (contract/schema.ts); the previous release's came without it. */
type V2<T> = T & { v: SchemaVersion };

// serviceController (`lbaas/<uid>`).
export const applyUpdate = defineUpdate<{ revision: number }, [spec: unknown]>('apply');
export const waitConvergedUpdate = defineUpdate<PassResult, [revision: number]>('waitConverged');
/**
 * `apply` and `waitConverged` of the revision it set, as one update: for a client that has nothing to show before the
 * pass ends (`lbaas kube`), one update (two history events and an RPC) fewer per apply. Sent with update-with-start, accepted at
 * once (the caller is not held), answered when the first pass of that revision or a newer one has finished.
 */
export const applyAndWaitUpdate = defineUpdate<{ revision: number; result: PassResult }, [spec: unknown]>('applyAndWait');
export const deleteUpdate = defineUpdate<PassResult, []>('delete');
export const resyncSignal = defineSignal<[]>('resync');
/**
 * A resync that answers when the controller has settled after it: the result of the pass that carried the request
 * (or of a newer one, when an apply came meanwhile). `lbaas resync UID --wait` waits on it.
 */
export const resyncPassUpdate = defineUpdate<PassResult, []>('resyncPass');
/**
 * No longer sent: workers of earlier builds sent it when the Engine answered a service's requests 429. Only the
 * previous release's controller loop (workflows/legacy/controller.ts) handles it, so that runs which received it
 * replay; the current loop does not. A throttled activity now says it on its heartbeat (activities/heartbeat.ts).
 */
export const engineRateLimitedSignal = defineSignal<[{ until: number }]>('engineRateLimited');
/**
 * Nothing but a workflow task: a worker whose build has just become the Current Version sends it to every entity
 * (controller and pool) still on another build, which then continues as new onto the new build once it is idle
 * (worker/wake.ts, docs/architecture.md "Versions and patches"). Cheap: the handler does nothing, the task is the point.
 */
export const wakeSignal = defineSignal<[{ v: SchemaVersion }]>('wake');
/** The same `wake` for a server pool. */
export const poolWakeSignal = defineSignal<[{ v: SchemaVersion }]>('wake');
export const controllerStatusQuery = defineQuery<ControllerStatus>('status');
/**
 * From a superseded (cancelled) reconcileLoadBalancer to its service's controller: the identifiers of the objects it
 * created before it ended. Its pass returns no result, so without this the next pass would know of them only from the
 * Engine's tag index, which lags behind tagging: an object created on a load balancer the new spec dropped would be
 * missed and left behind (docs/architecture.md, "Superseding").
 */
export const supersededCreatesSignal = defineSignal<[V2<{ identifiers: string[] }>]>('supersededCreates');
/** From the service's server pool: its current members (docs/architecture.md, "Server pools"). */
export const poolMembersSignal = defineSignal<[V2<PoolMembersMessage>]>('poolMembers');

// reconcileLoadBalancer (`lbaas/<uid>/lb/<lb>`).
export const loadBalancerStatusQuery = defineQuery<LoadBalancerProgress>('status');

// serverPool (`lbaas-pool/<name>`): members and revision only (docs/architecture.md, "Server pools").
//   pool change ──starts──▶ poolRound ──poolMembers (new revision)──▶ every controller visibility lists with the pool
//   controller starting to use the pool ──reads its members itself (activity readServerPool: the `status` query)
export const poolSetUpdate = defineUpdate<PoolChange, [servers: unknown]>('set');
export const poolAddUpdate = defineUpdate<PoolChange, [servers: unknown]>('add');
export const poolRemoveUpdate = defineUpdate<PoolChange, [names: unknown]>('remove');
export const poolDeleteUpdate = defineUpdate<{ name: string; revision: number }, []>('delete');
/**
 * Handled only by the previous release's pool loop (workflows/legacy/pool.ts): a pool wait is counted from the
 * services' own state now (client/pool-client.ts).
 */
export const poolWaitUpdate = defineUpdate<PoolWaitResult, [revision: number]>('waitConverged');
export const poolStatusQuery = defineQuery<PoolMembersStatus>('status');
/**
 * From a controller of the previous release: today's pool answers it once with its current members (that controller
 * waits for them) and keeps nothing. Today's controllers read the members themselves.
 */
export const poolSubscribeSignal = defineSignal<[V2<{ serviceUid: string }>]>('subscribe');
/** From a controller of the previous release; today's pool keeps no subscribers and ignores it. */
export const poolUnsubscribeSignal = defineSignal<[V2<{ serviceUid: string }>]>('unsubscribe');
/** From a controller of the previous release; today's pool reads convergence from the services and ignores it. */
export const poolReportSignal = defineSignal<[V2<PoolReport>]>('report');
/** Send the current members to every service using the pool again (a new delivery round). */
export const poolResyncSignal = defineSignal<[]>('resync');
/**
 * From a delivery round (`lbaas-pool/<name>/round/<round>`, its workflow id in `round`) to its pool, after its last
 * page: the pool starts the next round, for its newest revision, only then (one round in flight per pool).
 */
export const poolRoundEndedSignal = defineSignal<[V2<{ round: string; revision: number }>]>('roundEnded');

/** Which workflow type handles which messages: what docs/spec.md lists per workflow (test/unit/doc-surface.test.ts). */
export const MESSAGES_BY_WORKFLOW = {
  serviceController: [applyUpdate, waitConvergedUpdate, applyAndWaitUpdate, deleteUpdate, resyncSignal, resyncPassUpdate, engineRateLimitedSignal, poolMembersSignal, supersededCreatesSignal, wakeSignal, controllerStatusQuery],
  reconcileLoadBalancer: [loadBalancerStatusQuery],
  serverPool: [
    poolSetUpdate,
    poolAddUpdate,
    poolRemoveUpdate,
    poolDeleteUpdate,
    poolWaitUpdate,
    poolStatusQuery,
    poolSubscribeSignal,
    poolUnsubscribeSignal,
    poolReportSignal,
    poolResyncSignal,
    poolRoundEndedSignal,
    poolWakeSignal,
  ],
} as const;
