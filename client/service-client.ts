/**
 * A small typed client library over Temporal for lbaas: apply a spec to a service's controller (update-with-start,
 * so the first apply creates the controller), wait for a revision, read status, list, delete, resync, plan. It
 * never talks to the Engine. The CLI is one user; any program with a Temporal client can be another.
 */
import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, type Client, type WorkflowHandle } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import {
  applyAndWaitUpdate,
  applyUpdate,
  controllerStatusQuery,
  deleteUpdate,
  isRateLimitedDetails,
  loadBalancerStatusQuery,
  resyncPassUpdate,
  resyncSignal,
  runningControllersQuery,
  VISIBILITY_PAGE_SIZE,
  searchAttributes,
  waitConvergedUpdate,
  workflowIds,
  workflowTypes,
  type ControllerStatus,
  type LoadBalancerProgress,
  type PassResult,
  type PlanServiceResult,
  type PlanServiceWorkflow,
  type PoolStatus,
  type ServiceControllerWorkflow,
  SCHEMA_VERSION,
} from '../contract';
import type { ValidatedSpec } from '../domain/types';
import { resolveSpecDocument } from '../domain';
import { PoolClient } from './pool-client';
import { passRateLimitedUntil } from './rate-limit';
import { isUnknownUpdate, untilAnswered, updateUntilAnswered, withinTurn } from './update';

export interface ServiceSummary {
  serviceUid: string;
  phase: string;
  loadBalancers: string[];
  workflowId: string;
  startTime: Date;
}

/** An apply the controller accepted (LbaasClient.applyAccepted), and how to learn how its pass ended. */
export interface AcceptedApply {
  workflowId: string;
  /** The revision and the result of its pass, polled until it has finished. */
  converged: () => Promise<{ revision: number; result: PassResult }>;
  /** The same, or null when the pass has not finished within `withinMs`: one bounded poll (kube/pass-waits.ts). */
  convergedWithin: (withinMs: number) => Promise<{ revision: number; result: PassResult } | null>;
}

export class LbaasClient {
  readonly pools: PoolClient;

  constructor(
    readonly client: Client,
    readonly taskQueue: string,
  ) {
    this.pools = new PoolClient(client, taskQueue);
  }

  controller(serviceUid: string): WorkflowHandle<ServiceControllerWorkflow> {
    return this.client.workflow.getHandle<ServiceControllerWorkflow>(workflowIds.controller(serviceUid));
  }

  /**
   * Applies a spec to its service's controller, starting the controller if it has none. `spec` is its validated form
   * (validateSpec, for the uid and search attributes): the caller validated it where it entered. `raw` is the spec
   * document as written, which is what the update carries: the controller's validator checks it again because any
   * Temporal client can send one, and the controller keeps the document for its snapshot. `signal` cancels the call
   * (the update may still have reached the controller); a caller that closes its connection on a signal must pass it,
   * or a retry of the call meets the closed connection outside any promise and ends the process.
   */
  async apply(raw: unknown, spec: ValidatedSpec, o: { signal?: AbortSignal } = {}): Promise<{ revision: number; workflowId: string }> {
    const apply = async () => {
      // A spec naming a pool that does not exist starts nothing (PoolNotFoundError). A pool deleted between this
      // check and the apply is caught by the controller, which fails the revision naming the pool.
      if (spec.serverPool !== undefined) await this.pools.require(spec.serverPool);
      const updateId = `apply-${randomUUID()}`;
      const { revision } = await untilAnswered(() => this.client.workflow.executeUpdateWithStart(applyUpdate, { args: [raw], updateId, startWorkflowOperation: this.#startController(spec) }), { rpcTimeouts: 'throw' });
      return { revision, workflowId: workflowIds.controller(spec.serviceUid) };
    };
    return o.signal ? this.client.connection.withAbortSignal(o.signal, apply) : apply();
  }

  /**
   * `apply` and `waitConverged` as one update (applyAndWait), for a caller with nothing to show before the pass has
   * finished: resolves once the controller (started if there was none) has accepted the spec, with `converged()`,
   * which resolves with the revision and the result of its pass. One update per apply instead of two: two history
   * events and a call fewer. A controller still running an earlier build without that update (until it
   * moves to the current one) gets `apply` and `waitConverged` instead.
   *
   * `poolKnown`: the caller has just created or read the spec's pool (lbaas kube keeps the node pool itself), so the
   * describe that checks it exists is skipped: one Temporal request per apply. A pool deleted since still starts
   * nothing on the Engine: the controller fails the revision naming the pool, as for a pool deleted after the check.
   */
  async applyAccepted(raw: unknown, spec: ValidatedSpec, o: { poolKnown?: boolean } = {}): Promise<AcceptedApply> {
    if (spec.serverPool !== undefined && !o.poolKnown) await this.pools.require(spec.serverPool);
    const updateId = `apply-${randomUUID()}`;
    const handle = await untilAnswered(
      () => this.client.workflow.startUpdateWithStart(applyAndWaitUpdate, { args: [raw], updateId, waitForStage: 'ACCEPTED', startWorkflowOperation: this.#startController(spec) }),
      { rpcTimeouts: 'throw' },
    );
    // A controller of an earlier build refuses applyAndWait; then apply and waitConverged, started once.
    let fallback: Promise<{ revision: number; result: PassResult }> | null = null;
    const fallBack = (err: unknown) => {
      // A refused update comes back as its outcome, which only the result reads.
      if (!isUnknownUpdate(err, applyAndWaitUpdate.name)) throw err;
      fallback ??= this.apply(raw, spec).then(async ({ revision }) => ({ revision, result: await this.waitConverged(spec.serviceUid, revision) }));
      return fallback;
    };
    const converged = async (): Promise<{ revision: number; result: PassResult }> => {
      if (fallback) return fallback;
      try {
        // The poll for the outcome is sent again when its deadline passes: the pass may take longer than one.
        return await untilAnswered(() => handle.result());
      } catch (err) {
        return fallBack(err);
      }
    };
    const convergedWithin = async (withinMs: number): Promise<{ revision: number; result: PassResult } | null> => {
      let answer: Promise<{ revision: number; result: PassResult }> | null = fallback;
      if (!answer) {
        try {
          return await withinTurn(this.client.connection, withinMs, () => handle.result());
        } catch (err) {
          answer = fallBack(err);
        }
      }
      let timer: NodeJS.Timeout | undefined;
      const ended = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), withinMs)));
      try {
        return await Promise.race([answer, ended]);
      } finally {
        clearTimeout(timer);
      }
    };
    return { workflowId: workflowIds.controller(spec.serviceUid), converged, convergedWithin };
  }

  /** The start of a service's controller for an update-with-start: a new operation per send (one can be used once). */
  #startController(spec: ValidatedSpec): WithStartWorkflowOperation<ServiceControllerWorkflow> {
    return new WithStartWorkflowOperation<ServiceControllerWorkflow>(workflowTypes.serviceController, {
      workflowId: workflowIds.controller(spec.serviceUid),
      taskQueue: this.taskQueue,
      args: [{ v: SCHEMA_VERSION, serviceUid: spec.serviceUid }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      staticSummary: `controller of service ${spec.serviceUid}`,
      typedSearchAttributes: [
        { key: searchAttributes.serviceUid, value: spec.serviceUid },
        { key: searchAttributes.loadBalancers, value: [...spec.loadBalancers].sort() },
        { key: searchAttributes.phase, value: 'Converging' },
        ...(spec.serverPool === undefined ? [] : [{ key: searchAttributes.serverPool, value: spec.serverPool }]),
      ],
    });
  }

  /** Waits for the first finished pass of `revision` (or a newer one); `signal` cancels the wait. */
  async waitConverged(serviceUid: string, revision: number, o: { signal?: AbortSignal } = {}): Promise<PassResult> {
    const wait = () => updateUntilAnswered(() => this.controller(serviceUid), waitConvergedUpdate, [revision], `wait-${revision}-${randomUUID()}`, o);
    return o.signal ? this.client.connection.withAbortSignal(o.signal, wait) : wait();
  }

  /**
   * The controller's status. When its last pass listed only the objects not ready (a service past
   * MAX_LISTED_OBJECTS, workflows/status-book.ts) and `allObjects` is asked for, the per-object status comes from
   * each load balancer's own reconcileLoadBalancer workflow (its `status` query, answered after it closed too).
   */
  async status(serviceUid: string, o: { allObjects?: boolean } = {}): Promise<ControllerStatus> {
    const st = await this.controller(serviceUid).query(controllerStatusQuery);
    // The controller knows no rate limit (a worker of an earlier build may still have told it one): the running
    // pass's activities say it on their heartbeats (client/rate-limit.ts).
    if (st.running) {
      const until = await passRateLimitedUntil(this.client, serviceUid, st.running.pass);
      if (until !== null && until > (st.engineRateLimitedUntil ?? 0)) st.engineRateLimitedUntil = until;
    }
    // Reading the load balancers' workflows replays each (seconds at thousands of objects): only when asked.
    if (!st.objectsOmitted || !o.allObjects) return st;
    const lbs = Object.keys(st.loadBalancers).filter((lb) => !st.loadBalancers[lb]?.cleanup).sort();
    const perLb = await Promise.all(
      lbs.map(async (lb) => {
        try {
          return (await this.client.workflow.getHandle(workflowIds.loadBalancer(serviceUid, lb)).query(loadBalancerStatusQuery)).objects;
        } catch {
          // Gone (past the namespace's retention) or not answering: keep what the pass result listed for it.
          return st.objects.filter((o) => o.loadBalancer === lb);
        }
      }),
    );
    const full: ControllerStatus = { ...st, objects: perLb.flat() };
    delete full.objectsOmitted;
    return full;
  }

  /**
   * Live progress of a service's running load balancer reconciliations (for progress lines while waiting): each
   * workflow's `status` query, with the members of its running create groups that the Engine has already answered
   * for (their identifiers, read from the groups' heartbeat details) shown as created and deploying.
   */
  async progress(serviceUid: string, loadBalancers: string[]): Promise<LoadBalancerProgress[]> {
    const out: LoadBalancerProgress[] = [];
    await Promise.all(
      loadBalancers.map(async (lb) => {
        try {
          const handle = this.client.workflow.getHandle(workflowIds.loadBalancer(serviceUid, lb));
          const d = await handle.describe();
          if (d.status.name !== 'RUNNING') return;
          const p = await handle.query(loadBalancerStatusQuery);
          const created = createdInGroups(d.raw.pendingActivities ?? [], (payload) => this.client.options.loadedDataConverter.payloadConverter.fromPayload(payload));
          out.push(created.size === 0 ? p : { ...p, objects: p.objects.map((o) => (o.state === 'Pending' && o.identifier === null && created.has(o.key) ? { ...o, identifier: created.get(o.key) as string, state: 'NewlyCreated' } : o)) });
        } catch {
          // Not started yet or already gone: nothing to show for it.
        }
      }),
    );
    return out.sort((a, b) => a.loadBalancer.localeCompare(b.loadBalancer));
  }

  async list(): Promise<ServiceSummary[]> {
    const out: ServiceSummary[] = [];
    for await (const wf of this.client.workflow.list({ query: runningControllersQuery(this.taskQueue), pageSize: VISIBILITY_PAGE_SIZE })) {
      const sa = wf.typedSearchAttributes;
      out.push({
        serviceUid: sa.get(searchAttributes.serviceUid) ?? workflowIds.serviceOf(wf.workflowId) ?? wf.workflowId,
        phase: sa.get(searchAttributes.phase) ?? 'Unknown',
        loadBalancers: sa.get(searchAttributes.loadBalancers) ?? [],
        workflowId: wf.workflowId,
        startTime: wf.startTime,
      });
    }
    return out.sort((a, b) => a.serviceUid.localeCompare(b.serviceUid));
  }

  /** Tears everything down and ends the controller; resolves with the teardown pass's result. */
  async delete(serviceUid: string): Promise<PassResult> {
    const updateId = `delete-${randomUUID()}`;
    return untilAnswered(() => this.controller(serviceUid).executeUpdate(deleteUpdate, { updateId }), { rpcTimeouts: 'throw' });
  }

  /** Starts the delete without waiting for the teardown. */
  async startDelete(serviceUid: string): Promise<void> {
    const updateId = `delete-${randomUUID()}`;
    await untilAnswered(() => this.controller(serviceUid).startUpdate(deleteUpdate, { waitForStage: 'ACCEPTED', updateId }), { rpcTimeouts: 'throw' });
  }

  async resync(serviceUid: string): Promise<void> {
    await this.controller(serviceUid).signal(resyncSignal);
  }

  /** Resyncs and waits until the controller has settled after it; resolves with the result of the pass that did it. */
  async resyncAndWait(serviceUid: string): Promise<PassResult> {
    const updateId = `resync-${randomUUID()}`;
    return untilAnswered(() => this.controller(serviceUid).executeUpdate(resyncPassUpdate, { updateId }));
  }

  /**
   * Read-only dry run. A spec with `serverPool` is planned with the pool's current members (PoolNotFoundError when
   * there is no such pool); the result names the pool and its revision. `workflowId` lets a caller watch the run.
   */
  async plan(raw: unknown, spec: ValidatedSpec, workflowId = workflowIds.plan(spec.serviceUid, randomUUID())): Promise<PlanServiceResult & { pool?: Pick<PoolStatus, 'name' | 'revision' | 'servers'> }> {
    let doc = raw;
    let pool: Pick<PoolStatus, 'name' | 'revision' | 'servers'> | undefined;
    if (spec.serverPool !== undefined) {
      const s = await this.pools.status(spec.serverPool);
      const resolved = resolveSpecDocument(raw as Record<string, unknown>, s.servers);
      if (!resolved.ok) throw new Error(resolved.message);
      doc = resolved.raw;
      pool = { name: s.name, revision: s.revision, servers: s.servers };
    }
    const result = await this.client.workflow.execute<PlanServiceWorkflow>(workflowTypes.planService, {
      workflowId,
      taskQueue: this.taskQueue,
      args: [{ spec: doc }],
      staticSummary: `plan ${spec.serviceUid}`,
      typedSearchAttributes: [{ key: searchAttributes.serviceUid, value: spec.serviceUid }],
    });
    return pool ? { ...result, pool } : result;
  }
}

/**
 * Members of running create groups whose POST the Engine has answered, key -> identifier: a realizeObjects attempt
 * records each member's progress in its heartbeat details, one slot per member key (activities/realize.ts,
 * CreateProgress), and Temporal shows the last details on the pending activity.
 */
export function createdInGroups(
  pending: readonly { activityType?: { name?: string | null } | null; heartbeatDetails?: { payloads?: Payload[] | null } | null }[],
  decode: (payload: Payload) => unknown,
): Map<string, string> {
  const out = new Map<string, string>();
  for (const a of pending) {
    const payload = a.activityType?.name === 'realizeObjects' ? a.heartbeatDetails?.payloads?.[0] : undefined;
    if (!payload) continue;
    let details: unknown;
    try {
      details = decode(payload);
    } catch {
      continue;
    }
    // While the Engine throttles the worker, the details are wrapped with the throttle's end (activities/heartbeat.ts).
    if (isRateLimitedDetails(details)) details = details.progress;
    if (typeof details !== 'object' || details === null) continue;
    for (const [key, slot] of Object.entries(details)) {
      const created = (slot as { created?: unknown } | null)?.created;
      if (typeof created === 'string') out.set(key, created);
    }
  }
  return out;
}
