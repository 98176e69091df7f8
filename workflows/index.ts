/** Every workflow type the worker registers (product.md section 4). */
export { reconcileLoadBalancer, loadBalancerStatusQuery } from './reconcile-lb';
export { reconcileService } from './reconcile-service';
export { planService } from './plan-service';
export { serviceController, applyUpdate, waitConvergedUpdate, deleteUpdate, resyncSignal, controllerStatusQuery } from './controller';
export { fullResync } from './full-resync';
export { importServices } from './import';
