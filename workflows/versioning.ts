/**
 * Worker Versioning behaviors of every workflow type (docs/architecture.md#versions-and-patches). Every type is
 * PINNED: a run finishes on the build that started it, so a change to workflow code needs no patch. The long-lived
 * entities (serviceController, serverPool) move to a new build by continue-as-new once they wake idle and see that
 * the Deployment's target changed (workflows/controller.ts, workflows/pool.ts); only their continue-as-new input and
 * their messages cross builds. The worker's default (PINNED, worker/main.ts) is never relied on: every type is listed.
 */
import { setWorkflowOptions } from '@temporalio/workflow';
import type { VersioningBehavior } from '@temporalio/common';
import { serviceController } from './controller';
import { discoverCluster } from './discover-cluster';
import { allocateServiceVips, releaseServiceVips } from './service-vip';
import { fullResync } from './full-resync';
import { importServices } from './import';
import { planService } from './plan-service';
import { serverPool } from './pool';
import { poolRound } from './pool-round';
import { reconcileLoadBalancer } from './reconcile-lb';
import { reconcileService } from './reconcile-service';
import { reconcilePoolDelta } from './reconcile-delta';

/** Every workflow type of workflows/index.ts and its behavior (test/unit/workflow-versioning.test.ts checks both). */
export const VERSIONING_BEHAVIORS = {
  reconcileLoadBalancer: 'PINNED',
  reconcileService: 'PINNED',
  reconcilePoolDelta: 'PINNED',
  planService: 'PINNED',
  fullResync: 'PINNED',
  importServices: 'PINNED',
  discoverCluster: 'PINNED',
  allocateServiceVips: 'PINNED',
  releaseServiceVips: 'PINNED',
  serviceController: 'PINNED',
  serverPool: 'PINNED',
  poolRound: 'PINNED',
} as const satisfies Record<string, VersioningBehavior>;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- workflow functions of any signature
const workflows: Record<keyof typeof VERSIONING_BEHAVIORS, (...args: any[]) => Promise<unknown>> = {
  reconcileLoadBalancer,
  reconcileService,
  reconcilePoolDelta,
  planService,
  fullResync,
  importServices,
  discoverCluster,
  allocateServiceVips,
  releaseServiceVips,
  serviceController,
  serverPool,
  poolRound,
};
for (const name of Object.keys(VERSIONING_BEHAVIORS) as (keyof typeof VERSIONING_BEHAVIORS)[]) {
  setWorkflowOptions({ versioningBehavior: VERSIONING_BEHAVIORS[name] }, workflows[name]);
}
