/**
 * Every workflow type the worker registers (contract/workflow-types.ts names them; docs/spec.md#temporal-surface).
 * Their messages are defined in contract/, not here.
 */
export { reconcileLoadBalancer } from './reconcile-lb';
export { reconcileService } from './reconcile-service';
export { reconcilePoolDelta } from './reconcile-delta';
export { planService } from './plan-service';
export { serviceController } from './controller';
export { fullResync } from './full-resync';
export { serverPool } from './pool';
export { poolRound } from './pool-round';
export { importServices } from './import';
export { discoverCluster } from './discover-cluster';
export { allocateServiceVips, releaseServiceVips } from './service-vip';
// Each type's Worker Versioning behavior (every one PINNED).
import './versioning';
