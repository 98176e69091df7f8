/**
 * The workflow types a client starts, by name and by signature: clients start them with these names and types
 * and never import workflow code (test/unit/contract.test.ts checks that workflows/index.ts implements them).
 * The inputs are what a client may send; continue-as-new adds fields of the workflow's own.
 */
import type {
  AllocateServiceVipsInput,
  AllocateServiceVipsResult,
  ClusterDiscovery,
  DiscoverClusterInput,
  FullResyncInput,
  FullResyncResult,
  ImportServicesInput,
  ImportServicesResult,
  PassResult,
  PlanServiceResult,
  ReleaseServiceVipsInput,
  ReleaseServiceVipsResult,
} from './payloads';
import type { SchemaVersion } from './schema';

/** Every workflow type the worker registers. */
export const workflowTypes = {
  serviceController: 'serviceController',
  reconcileService: 'reconcileService',
  reconcilePoolDelta: 'reconcilePoolDelta',
  reconcileLoadBalancer: 'reconcileLoadBalancer',
  planService: 'planService',
  serverPool: 'serverPool',
  poolRound: 'poolRound',
  importServices: 'importServices',
  fullResync: 'fullResync',
  discoverCluster: 'discoverCluster',
  allocateServiceVips: 'allocateServiceVips',
  releaseServiceVips: 'releaseServiceVips',
} as const;

/** `v`: the input's schema version (contract/schema.ts); an input without it runs the previous release's loop. */
export type ServiceControllerWorkflow = (input: { v: SchemaVersion; serviceUid: string }) => Promise<PassResult>;
export type PlanServiceWorkflow = (input: { spec: unknown }) => Promise<PlanServiceResult>;
export type ServerPoolWorkflow = (input: { v: SchemaVersion; name: string }) => Promise<{ name: string; revision: number }>;
export type ImportServicesWorkflow = (input: ImportServicesInput) => Promise<ImportServicesResult>;
export type FullResyncWorkflow = (input?: FullResyncInput) => Promise<FullResyncResult>;
export type DiscoverClusterWorkflow = (input: DiscoverClusterInput) => Promise<ClusterDiscovery>;
export type AllocateServiceVipsWorkflow = (input: AllocateServiceVipsInput) => Promise<AllocateServiceVipsResult>;
export type ReleaseServiceVipsWorkflow = (input: ReleaseServiceVipsInput) => Promise<ReleaseServiceVipsResult>;
