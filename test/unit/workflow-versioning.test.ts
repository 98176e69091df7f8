/**
 * Every workflow type the worker registers declares its Worker Versioning behavior: the passes PINNED, the long-lived
 * entities AUTO_UPGRADE (docs/architecture.md#versions-and-patches). A new workflow type without one fails here
 * instead of silently taking the worker's default.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as registered from '../../workflows';
import { VERSIONING_BEHAVIORS } from '../../workflows/versioning';

/** What setWorkflowOptions leaves on a workflow function. */
type Annotated = { workflowDefinitionOptions?: { versioningBehavior?: string } };

test('each registered workflow function carries exactly the versioning behavior of its type, and every one has one', () => {
  const workflowFunctions = Object.entries(registered).filter(([, v]) => typeof v === 'function');
  const seen = Object.fromEntries(workflowFunctions.map(([name, fn]) => [name, (fn as Annotated).workflowDefinitionOptions?.versioningBehavior ?? 'none']));
  assert.deepEqual(seen, {
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
  });
  assert.deepEqual(Object.keys(VERSIONING_BEHAVIORS).sort(), Object.keys(seen).sort());
});
