/**
 * contract/ is the Temporal contract every room imports: the workflow types it names are exactly the ones the
 * worker registers, each implementation accepts what a client is allowed to send (checked by the compiler below),
 * and the ids it builds read back to their service.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  workflowIds,
  workflowTypes,
  type AllocateServiceVipsWorkflow,
  type DiscoverClusterWorkflow,
  type FullResyncWorkflow,
  type ImportServicesWorkflow,
  type PlanServiceWorkflow,
  type ReleaseServiceVipsWorkflow,
  type ServerPoolWorkflow,
  type ServiceControllerWorkflow,
} from '../../contract';
import * as workflows from '../../workflows';

// A workflow whose input or result drifts from what clients start it with fails to compile here.
const implementations: {
  serviceController: ServiceControllerWorkflow;
  planService: PlanServiceWorkflow;
  serverPool: ServerPoolWorkflow;
  importServices: ImportServicesWorkflow;
  discoverCluster: DiscoverClusterWorkflow;
  allocateServiceVips: AllocateServiceVipsWorkflow;
  releaseServiceVips: ReleaseServiceVipsWorkflow;
  fullResync: FullResyncWorkflow;
} = workflows;

test('the contract names exactly the workflow types the worker registers, each under its own name', () => {
  const registered = Object.entries(workflows)
    .filter(([, v]) => typeof v === 'function')
    .map(([k]) => k)
    .sort();
  assert.deepEqual(Object.keys(workflowTypes).sort(), registered);
  for (const [key, name] of Object.entries(workflowTypes)) assert.equal(name, key);
  assert.deepEqual(Object.keys(implementations).filter((k) => !(k in workflowTypes)), []);
});

test('workflowIds.serviceOf reads the service back from the ids of its controller, passes, load balancer runs and dry runs', () => {
  const uid = '3f2a9c1e-0b7d-4e5f-8a6b-1c2d3e4f5a6b';
  assert.equal(workflowIds.serviceOf(workflowIds.controller(uid)), uid);
  assert.equal(workflowIds.serviceOf(workflowIds.pass(uid, 12)), uid);
  assert.equal(workflowIds.serviceOf(workflowIds.loadBalancer(uid, 'a1b2c3')), uid);
  assert.equal(workflowIds.serviceOf(workflowIds.plan(uid, 'r4nd0m')), uid);
});

test('workflowIds.serviceOf answers null for ids that belong to no controller', () => {
  for (const id of [
    workflowIds.pool('web'),
    workflowIds.orphanTeardown('3f2a9c1e'),
    workflowIds.importRun('r4nd0m'),
    workflowIds.manualResync(new Date(0)),
    `${workflowIds.scheduledResync}-2026-01-01T00:00:00Z`,
    'lbaas/',
    'lbaas/uid/other/1',
  ]) {
    assert.equal(workflowIds.serviceOf(id), null, id);
  }
});
