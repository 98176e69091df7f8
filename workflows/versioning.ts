/**
 * Worker Versioning behaviors of every workflow type (docs/architecture.md#versions-and-patches). A pass finishes on
 * the build that started it (PINNED), so a change to its code needs no patch; the long-lived entities move to the
 * Current Version at their next workflow task (AUTO_UPGRADE), so a change to their own code is patched for one
 * continue-as-new rotation. The worker's default (PINNED, worker/main.ts) is never relied on: every type is listed.
 */
import { setWorkflowOptions } from '@temporalio/workflow';
import type { VersioningBehavior } from '@temporalio/common';
import { serviceController } from './controller';
import { discoverCluster } from './discover-cluster';
import { fullResync } from './full-resync';
import { importServices } from './import';
import { planService } from './plan-service';
import { serverPool } from './pool';
import { reconcileLoadBalancer } from './reconcile-lb';
import { reconcileService } from './reconcile-service';

/** Every workflow type of workflows/index.ts and its behavior (test/unit/workflow-versioning.test.ts checks both). */
export const VERSIONING_BEHAVIORS = {
  reconcileLoadBalancer: 'PINNED',
  reconcileService: 'PINNED',
  planService: 'PINNED',
  fullResync: 'PINNED',
  importServices: 'PINNED',
  discoverCluster: 'PINNED',
  serviceController: 'AUTO_UPGRADE',
  serverPool: 'AUTO_UPGRADE',
} as const satisfies Record<string, VersioningBehavior>;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- workflow functions of any signature
const workflows: Record<keyof typeof VERSIONING_BEHAVIORS, (...args: any[]) => Promise<unknown>> = {
  reconcileLoadBalancer,
  reconcileService,
  planService,
  fullResync,
  importServices,
  discoverCluster,
  serviceController,
  serverPool,
};
for (const name of Object.keys(VERSIONING_BEHAVIORS) as (keyof typeof VERSIONING_BEHAVIORS)[]) {
  setWorkflowOptions({ versioningBehavior: VERSIONING_BEHAVIORS[name] }, workflows[name]);
}
