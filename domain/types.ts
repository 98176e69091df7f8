/**
 * The data that flows between the planner (pure, runs inside workflows), the activities (Engine I/O) and the
 * workflows. Everything here is plain JSON: it crosses Temporal's payload boundary and lands in history, so it
 * must never carry a secret.
 */

import type { Kind } from './kinds/define';
import type { FieldsOf, LinkField } from './kinds/registry';

export type { Kind };


/** Engine object states (docs/engine-api.md#states), by title. `Unknown` is a state id we do not know. */
export type StateName = 'Updating' | 'Updated' | 'DeploymentError' | 'Deployed' | 'NewlyCreated' | 'Unknown';

/** How the planner sees a state: ready to be used, still settling, or failed. */
export type StateClass = 'ok' | 'progressing' | 'failed';

/** Readiness policy of a spec, durations normalized to milliseconds. */
export interface ReadinessPolicy {
  initialIntervalMs: number;
  backoffCoefficient: number;
  maximumIntervalMs: number;
  maximumAttempts: number;
}

export type FailedResourcesPolicy = 'recover' | 'recreate';

export interface PortSpec {
  external: number;
  internal: number;
}

export interface ServerSpec {
  name: string;
  address: string;
}

/**
 * A validated service spec (docs/spec.md#validation), in canonical form: addresses canonicalized as Go's net.IP
 * prints them, readiness filled in with defaults and converted to milliseconds. This is what workflows receive.
 */
export interface ServiceSpec {
  serviceUid: string;
  nameSuffix: string;
  loadBalancers: string[];
  externalAddresses: string[];
  ports: Record<string, PortSpec>;
  /** With `serverPool`, empty until the controller resolves the pool (domain/pool.ts resolvePool). */
  servers: ServerSpec[];
  /** The server pool whose members are the servers; absent for inline servers. Passes only see resolved specs. */
  serverPool?: string;
  readiness: ReadinessPolicy;
  failedResources: FailedResourcesPolicy;
}

/** The brand only validateSpec (domain/spec.ts) and resolvePool (domain/pool.ts) put on a spec; it exists in types only. */
declare const validatedBrand: unique symbol;

/**
 * A ServiceSpec that validateSpec produced (or resolvePool derived from one): the type says it was checked, so code
 * that takes a ValidatedSpec never parses it again (docs/architecture.md#where-the-spec-is-validated). Nothing else can
 * make one without a cast; after a trip through Temporal (a workflow or activity input) it is still the value a
 * validator produced, which is why the receiving side may declare it so.
 */
export type ValidatedSpec = ServiceSpec & { readonly [validatedBrand]: true };

/**
 * One object as observed on the Engine (a typed GET, plus whether the Core resource carries the service tag).
 * `fields` holds the compared fields; links are the referenced object's identifier.
 */
export type ObservedObject = {
  [K in Kind]: {
    kind: K;
    identifier: string;
    name: string;
    state: StateName;
    /** Carries the tag `anxccm-svc-uid=<serviceUid>` of the service being reconciled. */
    tagged: boolean;
    fields: FieldsOf[K];
  };
}[Kind];

/**
 * What retrieveState returns for one service on one load balancer: every object tagged for the service whose
 * parent chain leads to this load balancer. Untagged objects and other load balancers are never in it.
 */
export interface Snapshot {
  loadBalancer: string;
  objects: ObservedObject[];
}

/**
 * A desired object. `key` is stable across passes and unique per load balancer (Bind names repeat across
 * addresses of one family, so names alone are not keys). `parent` is the key of the object it links to
 * (Frontend -> Backend, Server -> Backend, Bind -> Frontend); the link field in `fields` is filled in with the
 * parent's identifier once that parent exists, which is why it is absent here.
 */
export type DesiredObject = {
  [K in Kind]: {
    kind: K;
    key: string;
    name: string;
    /** The port name this object belongs to ("" for the unnamed single port). */
    port: string;
    parent: string | null;
    fields: Omit<FieldsOf[K], LinkField<K>>;
  };
}[Kind];

/** The desired and observed objects of one kind. */
export type DesiredOf<K extends Kind> = Extract<DesiredObject, { kind: K }>;
export type ObservedOf<K extends Kind> = Extract<ObservedObject, { kind: K }>;

/** What a pass does with a desired object. */
export type Action =
  /** Exists, matches, ready: nothing to do. */
  | { type: 'keep'; identifier: string }
  /** Exists, matches, still NewlyCreated/Updating: wait for it, never duplicate it. */
  | { type: 'wait'; identifier: string }
  /** Exists, matches, DeploymentError under policy `recover`: PUT it with state "0", then wait. */
  | { type: 'recover'; identifier: string }
  /** Missing (or failed under policy `recreate`, or invalidated by a changed parent): create and tag it. */
  | { type: 'create' };

export interface PlannedObject {
  desired: DesiredObject;
  action: Action;
}

/** An existing object to destroy, with the reason a person reading the plan would want. */
export interface Destroy {
  kind: Kind;
  identifier: string;
  name: string;
  reason: 'duplicate' | 'not desired' | 'failed (recreate)' | 'parent replaced';
}

/**
 * The plan of one pass on one load balancer. `objects` is in dependency order (every parent before its
 * children); `destroy` in the order to run it (Binds and Servers, then Frontends, then Backends).
 */
export interface Plan {
  loadBalancer: string;
  objects: PlannedObject[];
  destroy: Destroy[];
}

/** Per-object status, kept as data by the workflows and exposed by their queries. */
export interface ObjectStatus {
  loadBalancer: string;
  kind: Kind;
  key: string;
  name: string;
  identifier: string | null;
  state: StateName | 'Pending' | 'Destroyed';
  error?: string;
  /** Workflow time (ms since epoch) of the last change. */
  updatedAt: number;
}

/** External address -> sorted external ports (docs/spec.md#status). */
export type AddressStatus = Record<string, number[]>;

export interface LoadBalancerResult {
  loadBalancer: string;
  converged: boolean;
  status: AddressStatus;
  created: number;
  destroyed: number;
  recovered: number;
  passes: number;
  error?: string;
}
