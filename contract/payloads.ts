/**
 * What crosses the Temporal boundary: workflow inputs a client may send, workflow results, and the arguments and
 * answers of signals, updates and queries (docs/spec.md, "Temporal surface"). Types only.
 */
import type { ServerSpec } from '../domain';
import type { ImportedService } from '../domain/import';
import type { PlanSummary } from '../domain/describe';
import type { AddressStatus, LoadBalancerResult, ObjectStatus, Plan } from '../domain/types';
import type { LoadBalancerIndex } from '../domain/pool-index';
import type { Phase } from './ids';

// Service passes.

/** One load balancer's outcome within a service pass (`cleanup`: it left the spec and was emptied). */
export interface LoadBalancerSummary extends Omit<LoadBalancerResult, 'loadBalancer'> {
  cleanup: boolean;
}

/** The result of reconcileService: one pass of one service over all of its load balancers. */
export interface ReconcileServiceResult {
  serviceUid: string;
  revision: number | null;
  converged: boolean;
  /** Address/port pairs present on every load balancer of the spec. */
  status: AddressStatus;
  loadBalancers: Record<string, LoadBalancerSummary>;
  /** Every object's status, or, past MAX_LISTED_OBJECTS, those not ready (workflows/status-book.ts, listedObjects). */
  objects: ObjectStatus[];
  /** Objects left out of `objects`: each load balancer workflow's `status` query has them. */
  objectsOmitted?: number;
  error?: string;
  /**
   * The identifiers of the Backends and Servers of every load balancer of the spec (domain/pool-index.ts), for the
   * controller's pool-delta passes: on a converged pass, when it fits MAX_INDEX_BYTES (domain/pool-index.ts). The controller
   * keeps it apart; it is not part of a PassResult.
   */
  index?: Record<string, LoadBalancerIndex>;
}

/** A controller's finished pass: what `waitConverged` and `delete` answer. */
export interface PassResult extends Omit<ReconcileServiceResult, 'revision'> {
  revision: number;
  /** Pass number within the controller's life (continues across continue-as-new). */
  pass: number;
  finishedAt: number;
  /** For a service with `serverPool`: the pool and the pool revision this pass reconciled. */
  pool?: { name: string; revision: number };
}

/** The controller's `status` query. */
export interface ControllerStatus {
  serviceUid: string;
  phase: Phase;
  revision: number;
  status: ReconcileServiceResult['status'];
  loadBalancers: ReconcileServiceResult['loadBalancers'];
  objects: ReconcileServiceResult['objects'];
  /** Objects the last pass's result left out (ready ones past MAX_LISTED_OBJECTS): `LbaasClient.status` fetches them. */
  objectsOmitted?: number;
  lastPass: { pass: number; revision: number; converged: boolean; finishedAt: number; error?: string; poolRevision?: number } | null;
  running: { pass: number; revision: number; startedAt: number; teardown: boolean } | null;
  nextRetryAt: number | null;
  consecutiveFailures: number;
  /** The spec's server pool, with the newest pool revision this controller has received (null: not yet). */
  pool?: { name: string; revision: number | null; servers: number | null };
  /** Until when a worker reported the Engine answering 429 to this service's requests (null: not lately). */
  engineRateLimitedUntil: number | null;
}

/** A running reconcileLoadBalancer's `status` query. */
export interface LoadBalancerProgress {
  loadBalancer: string;
  pass: number;
  phase: 'observing' | 'destroying' | 'creating' | 'converged' | 'failed';
  objects: ObjectStatus[];
}

// Dry run.

/**
 * Bounds of a dry run's result (activities/plan-service.ts): step lines in all, over every load balancer (about 100
 * bytes each), and plan objects in all, past which every load balancer's `plan` is left out.
 */
export const PLAN_LIMITS = { lines: 2_000, objects: 1_000 } as const;

export interface LoadBalancerPlan {
  cleanup: boolean;
  /** Every step counted, whatever was left out below. */
  summary: PlanSummary;
  /** The steps in words, in the order a pass runs them; bounded over the whole service (activities/plan-service.ts). */
  lines: string[];
  /** Steps left out of `lines`. */
  linesOmitted?: number;
  /** The plan's objects, only while the service's plans are small (activities/plan-service.ts). */
  plan?: Plan;
}

export interface PlanServiceResult {
  serviceUid: string;
  loadBalancers: Record<string, LoadBalancerPlan>;
}

// Server pools (docs/architecture.md, "Server pools").

export interface PoolMembers {
  pool: string;
  revision: number;
  servers: ServerSpec[];
}

/**
 * What changed between revision `base` and the message's revision: members added or readdressed (`upsert`) and
 * members removed. A pool sends it to a subscriber it sent `base` to, instead of every member again: 5,000 members
 * are about 225 KB per signal, and a pool's history holds one signal per subscriber per change.
 */
export interface PoolDelta {
  base: number;
  upsert: ServerSpec[];
  remove: string[];
}

/** What a pool sends a subscriber: every member (`servers`), or the changes since a revision it sent it (`delta`). */
export interface PoolMembersMessage {
  pool: string;
  revision: number;
  servers?: ServerSpec[];
  delta?: PoolDelta;
}

/** A controller's outcome for a pool revision: the pool's status shows it, and `waitConverged` waits on it. */
export interface PoolReport {
  serviceUid: string;
  /** The pool revision the pass reconciled. */
  revision: number;
  converged: boolean;
  error?: string;
}

export interface PoolServiceStatus {
  serviceUid: string;
  /** The newest pool revision this service is known to have converged (null: none, or its last pass failed). */
  convergedRevision: number | null;
  /**
   * Its last finished pass, as its controller publishes it (`LbaasPoolRevision` and `LbaasPhase`): the pool revision
   * it reconciled and how it ended (its error is in `lbaas status <uid>`). Null while it has finished none.
   */
  last: { revision: number; converged: boolean; error?: string } | null;
}

/** A pool's delivery round (workflows/pool-round.ts): which revision it sends and its workflow id. */
export interface PoolRoundRef {
  workflowId: string;
  revision: number;
  /** The round's number in the pool's life (a resync sends the same revision again in a new round). */
  number: number;
}

/** What a pool's own workflow knows and answers its `status` query with: no subscribers (docs/architecture.md). */
export interface PoolMembersStatus {
  name: string;
  revision: number;
  servers: ServerSpec[];
  deleting: boolean;
  /** The newest delivery round the pool started (it may have finished: `running` says). */
  round: (PoolRoundRef & { running: boolean }) | null;
}

/** The services using a pool, counted from their controllers' search attributes, for one pool revision. */
export interface PoolServiceCounts {
  revision: number;
  services: number;
  converged: number;
  failed: number;
  /** Neither: still to finish a pass for the revision (or a newer one). */
  pending: number;
}

/** `lbaas pool status`: the pool's members and revision, and its services read from visibility (client/pool-client.ts). */
export interface PoolStatus extends PoolMembersStatus {
  services: PoolServiceStatus[];
  counts: PoolServiceCounts;
}

/** What a member update did; `revision` grew only when `changed`. */
export interface PoolChangeResult {
  name: string;
  revision: number;
  changed: boolean;
  added: string[];
  removed: string[];
  /** Members whose address changed (their Server objects are replaced). */
  readdressed: string[];
  /** Services using the pool when the change was made (visibility; the delivery round signals each). */
  services: number;
}

/** What the pool's workflow answers a member update with; the client adds the service count. */
export type PoolChange = Omit<PoolChangeResult, 'services'>;

export interface PoolWaitResult {
  name: string;
  revision: number;
  converged: boolean;
  services: PoolServiceStatus[];
}

/** A delivery round's outcome (workflows/pool-round.ts). */
export interface PoolRoundResult {
  pool: string;
  revision: number;
  /** Controllers listed and signalled, and those that had ended between listing and signal. */
  listed: number;
  signalled: number;
  gone: number;
}

// Import.

export interface ImportServicesInput {
  loadBalancers: string[];
  /** Only these services; every service found when absent or empty. */
  serviceUids?: string[];
}

export interface ImportLoadBalancer {
  loadBalancer: string;
  found: boolean;
  /** Backends, Frontends, Binds and Servers on it, tagged or not. */
  objects: number;
  /** Of those, objects carrying no `anxccm-svc-uid=` tag (never imported; named when one has a service's name). */
  untagged: number;
}

export interface ImportServicesResult {
  loadBalancers: ImportLoadBalancer[];
  services: ImportedService[];
  /** Requested uids with no tagged object on the given load balancers. */
  notFound: string[];
}

// Cluster discovery (lbaas kube).

export interface DiscoverClusterInput {
  /** The Kubernetes cluster's name, as in `--cluster-name`. */
  clusterName: string;
  /** Upstream's `autoDiscoveryTagPrefix`: load balancers are tagged `<tagPrefix>-<clusterName>`. */
  tagPrefix: string;
}

export interface DiscoveredPrefix {
  identifier: string;
  /** The prefix in CIDR notation (its IPAM name). */
  cidr: string;
  family: 4 | 6;
  vip: string;
  /** `tagged`: an address of the prefix tagged `kubernetes-lb-vip-<cluster>`; `calculated`: the one below its broadcast address. */
  vipSource: 'tagged' | 'calculated';
}

export interface ClusterDiscovery {
  clusterName: string;
  loadBalancerTag: string;
  /** Identifiers of the tagged resources that are load balancers, in the Engine's listing order. */
  loadBalancers: string[];
  /** The VIP of the first IPv4 prefix, then of the first IPv6 prefix (as far as there are such prefixes). */
  externalAddresses: string[];
  prefixes: DiscoveredPrefix[];
  /** Tagged resources that could not be used, with why. */
  skipped: { identifier: string; tag: string; reason: string }[];
}

// A Service's own VIP (lbaas kube, docs/kubernetes.md#a-vip-of-its-own).

/** A prefix a VIP is allocated from, as discovery found it. */
export interface VipPrefix {
  identifier: string;
  cidr: string;
  family: 4 | 6;
}

export interface AllocateServiceVipsInput {
  /** The Service's uid: the addresses are tagged `lbaas-kube-vip=<uid>` and carry it in their customer description. */
  serviceUid: string;
  /** One prefix per IP family the Service gets an address of. */
  prefixes: VipPrefix[];
  /** Addresses never handed out (the cluster's shared VIPs, given with the flags or discovered). */
  reserved: string[];
}

export interface ServiceVip {
  /** The IPAM address's identifier. */
  identifier: string;
  address: string;
  family: 4 | 6;
  /** The prefix's identifier. */
  prefix: string;
  /** `adopted`: it was tagged for the Service already, or found by its description after a lost answer; `reserved`: created now. */
  how: 'adopted' | 'reserved';
}

export interface AllocateServiceVipsResult {
  /** One per prefix of the input, in its order. */
  vips: ServiceVip[];
}

export interface ReleaseServiceVipsInput {
  serviceUid: string;
}

export interface ReleaseServiceVipsResult {
  /** The addresses deleted (or already gone) that carried the Service's tag. */
  released: { identifier: string; address: string }[];
  /** Resources listed under the tag that were left alone, with why (not an IPAM address, the tag not on it). */
  skipped: { identifier: string; reason: string }[];
}

// Full resync.

export interface FullResyncInput {
  destroyOrphans?: boolean;
}

export interface Orphan {
  serviceUid: string;
  loadBalancers: string[];
  /** Backends and Frontends tagged for the service (Binds and Servers hang off them and are not counted). */
  objects: number;
  destroyed: boolean;
  error?: string;
}

export interface FullResyncResult {
  signalled: string[];
  /** Controllers that could not be signalled (they ended between listing and signalling). */
  missed: string[];
  orphans: Orphan[];
}

/**
 * The details an activity sends while the Engine throttles its requests: its progress wrapped with the time the pacer
 * holds its requests back until, so that the pending activity (Web UI, `lbaas status`) says it is rate limited. The
 * marker tells the wrapper from progress details, which are sent bare otherwise (as attempts of earlier builds did).
 */
export interface RateLimitedDetails<D = unknown> {
  lbaasRateLimited: 1;
  engineRateLimitedUntil: number;
  progress: D | undefined;
}

/** Heartbeat details wrapped by a throttled activity (activities/heartbeat.ts), as `lbaas status` reads them. */
export function isRateLimitedDetails(details: unknown): details is RateLimitedDetails {
  return typeof details === 'object' && details !== null && (details as { lbaasRateLimited?: unknown }).lbaasRateLimited === 1;
}

/**
 * A point in one worker's clock (activities/engine/recent-reads.ts): `reader` names the Engine client that took it
 * (random per worker process), `at` is that process's monotonic clock in ms. A round closes on the reads of the
 * worker that took the mark, sent at or after it; any other worker reads again. So no two clocks are ever compared.
 */
export interface ReadMark {
  reader: string;
  at: number;
}

/** Whether `v` is a ReadMark (a number, what builds before the marks sent, is not: it is ignored). */
export function isReadMark(v: unknown): v is ReadMark {
  if (typeof v !== 'object' || v === null) return false;
  const m = v as Record<string, unknown>;
  return typeof m.reader === 'string' && m.reader.length > 0 && m.reader.length <= 64 && typeof m.at === 'number' && Number.isFinite(m.at);
}
