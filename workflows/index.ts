/** Every workflow type the worker registers (docs/spec.md#temporal-surface). */
export { reconcileLoadBalancer, loadBalancerStatusQuery } from './reconcile-lb';
export { reconcileService } from './reconcile-service';
export { planService } from './plan-service';
export { serviceController, applyUpdate, waitConvergedUpdate, deleteUpdate, resyncSignal, controllerStatusQuery } from './controller';
export { fullResync } from './full-resync';
export { serverPool } from './pool';
export {
  poolSetUpdate,
  poolAddUpdate,
  poolRemoveUpdate,
  poolDeleteUpdate,
  poolWaitUpdate,
  poolStatusQuery,
  poolResyncSignal,
  poolMembersSignal,
} from './pool-messages';
export { importServices } from './import';
// Each type's Worker Versioning behavior (PINNED passes, AUTO_UPGRADE entities).
import './versioning';
