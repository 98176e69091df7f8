/**
 * The activities, built by a factory around one Engine client (docs/architecture.md#activities): the worker
 * constructs the client once; workflows type their proxies with `ReturnType<typeof createActivities>`. Every activity
 * is idempotent and translates Engine errors into Temporal failures at one boundary (failures.ts).
 */
import type { ObservedObject, ValidatedSpec } from '../domain/types';
import type { EngineClient } from './engine';
import { translated, withinPayloadLimit } from './failures';
import { withHeartbeat } from './heartbeat';
import { destroyObjects, type DestroyedObject, type DestroyObjectsInput, type DestroyOptions } from './destroy';
import { ATTEMPT_WINDOW_MS, type AwaitReadyOptions } from './objects';
import { DeployTimes, type DeployTimesOptions } from './deploy-times';
import { realizeObjects, type RealizedObject, type RealizeObjectsInput } from './realize';
import { planObservedService, type PlanObservedInput, type PlanObservedResult } from './plan-observed';
import { describeServicePlan } from './plan-service';
import { settleObjects, type SettledObject, type SettleObjectsInput } from './settle';
import { scanTaggedServices, type TaggedService } from './scan';
import { discoverCluster } from './discover';
import { allocateServiceVips, releaseServiceVips } from './service-vip';
import type {
  AllocateServiceVipsInput,
  AllocateServiceVipsResult,
  ClusterDiscovery,
  DiscoverClusterInput,
  PlanServiceResult,
  ReleaseServiceVipsInput,
  ReleaseServiceVipsResult,
} from '../contract';
import { IdentifierCache, listTagged, observeService, retrieveState, type ObservedSnapshot, type ServiceOnLoadBalancer } from './state';

/** What the activities report to the worker's metrics. */
export interface ActivityEvents {
  created?(kind: string): void;
  destroyed?(kind: string): void;
  recovered?(kind: string): void;
  createFailed?(kind: string): void;
  destroyFailed?(kind: string): void;
  /** A readiness GET (realizeObjects' and settleObjects' polls). */
  polled?(kind: string, identifier: string): void;
}

export interface ActivitiesOptions {
  readiness?: AwaitReadyOptions;
  /** How realizeObjects learns deploy times and aims its polls (activities/deploy-times.ts). */
  deployTimes?: DeployTimesOptions;
  /** Whether a round's closing observation reuses this worker's recent reads (activities/state.ts; default true). */
  recentReads?: boolean;
  destroy?: DestroyOptions;
  events?: ActivityEvents;
}

export function createActivities(engine: EngineClient, options: ActivitiesOptions = {}) {
  const known = new IdentifierCache();
  const events = options.events ?? {};
  const times = new DeployTimes(options.deployTimes);
  const windowMs = options.readiness?.windowMs ?? ATTEMPT_WINDOW_MS;
  return {
    /** Every object tagged for the service on one load balancer. */
    async retrieveState(input: ServiceOnLoadBalancer): Promise<ObservedSnapshot> {
      return translated(async () => {
        const snapshot = await retrieveState(engine, known, input, { recentReads: options.recentReads ?? true });
        return withinPayloadLimit(`the observation of ${input.serviceUid} on ${input.loadBalancer} (${snapshot.objects.length} objects)`, snapshot);
      });
    },
    /** The load balancers that hold objects tagged for the service, with what each holds. */
    async observeService(input: { serviceUid: string; known?: string[] }): Promise<Record<string, ObservedObject[]>> {
      return translated(async () => Object.fromEntries(await observeService(engine, known, input.serviceUid, undefined, input.known ?? [])));
    },
    /** Observes the service and plans each load balancer in the worker; returns what has work, never the objects. */
    async planObservedService(input: PlanObservedInput): Promise<PlanObservedResult> {
      return translated(() => planObservedService(engine, known, input));
    },
    /** The dry run of `lbaas plan`: observed and planned here, returned bounded (activities/plan-service.ts). */
    async describeServicePlan(input: { spec: ValidatedSpec }): Promise<PlanServiceResult> {
      return translated(() => withHeartbeat(() => describeServicePlan(engine, known, input)));
    },
    /** Identifiers of every object tagged for the service (one list request; cheap check for stray objects). */
    async listTagged(input: { serviceUid: string; known?: string[] }): Promise<string[]> {
      return translated(() => withHeartbeat(() => listTagged(engine, known, input.serviceUid, input.known ?? [])));
    },
    /**
     * Service uids with objects tagged for them, across every load balancer (fullResync's orphan report); those in
     * `skip` need not be reported (activities/scan.ts).
     */
    async scanTaggedServices(input?: { skip?: string[] }): Promise<Record<string, TaggedService>> {
      return translated(() => withHeartbeat(() => scanTaggedServices(engine, input?.skip ?? [])));
    },
    /** Creates, tags and awaits a group of sibling objects (activities/realize.ts). */
    async realizeObjects(input: RealizeObjectsInput): Promise<RealizedObject[]> {
      return translated(async () => {
        try {
          const realized = await realizeObjects(engine, known, times, input, { windowMs, ...(events.polled ? { onPoll: events.polled } : {}) });
          for (const r of realized) {
            known.set(r.identifier, input.kind);
            events.created?.(input.kind);
          }
          return realized;
        } catch (err) {
          events.createFailed?.(input.kind);
          throw err;
        }
      });
    },
    /** Destroys the objects of one destroy stage at once (activities/destroy.ts). */
    async destroyObjects(input: DestroyObjectsInput): Promise<DestroyedObject[]> {
      return translated(async () => {
        const destroyed = await destroyObjects(engine, known, input, options.destroy, (kind) => events.destroyFailed?.(kind));
        for (const d of destroyed) if (d.outcome === 'deleted') events.destroyed?.(d.kind);
        return destroyed;
      });
    },
    /** The cluster's load balancers and external addresses as k8s-anexia-ccm discovers them; reads only (activities/discover.ts). */
    async discoverCluster(input: DiscoverClusterInput): Promise<ClusterDiscovery> {
      return translated(() => withHeartbeat(() => discoverCluster(engine, input)));
    },
    /** A Service's own VIPs: adopted by tag or description, else created and tagged (activities/service-vip.ts). */
    async allocateServiceVips(input: AllocateServiceVipsInput): Promise<AllocateServiceVipsResult> {
      return translated(() => withHeartbeat(() => allocateServiceVips(engine, input)));
    },
    /** Deletes the addresses tagged as the Service's VIPs, and nothing else (activities/service-vip.ts). */
    async releaseServiceVips(input: ReleaseServiceVipsInput): Promise<ReleaseServiceVipsResult> {
      return translated(() => withHeartbeat(() => releaseServiceVips(engine, input)));
    },
    /** Recovers (when asked) and awaits a group of existing objects at once (activities/settle.ts). */
    async settleObjects(input: SettleObjectsInput): Promise<SettledObject[]> {
      return translated(() => settleObjects(engine, input, options.readiness, { onRecovered: (o) => events.recovered?.(o.kind), ...(events.polled ? { onPoll: events.polled } : {}) }));
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
