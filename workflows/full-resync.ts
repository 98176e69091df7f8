/**
 * fullResync: started by the Schedule `lbaas-full-resync`. Asks every controller to resync, and reports objects
 * tagged `anxccm-svc-uid=...` whose service has no controller. Those are only destroyed when the schedule's action
 * explicitly asks (`destroyOrphans`): an orphan may be a service whose controller lives in another namespace or
 * cluster, and destroying a load balancer's configuration is not something to do by inference.
 */
import { executeChild, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { ControlActivities } from '../activities/control';
import { fieldsOf, onlyKnownFields, optionalBoolean } from './input';
import { ENGINE_CALL } from './options';
import { searchAttributes, workflowIds, type FullResyncInput, type FullResyncResult, type Orphan } from '../contract';
import { formatIssues, validateSpec } from '../domain';
import { reconcileService } from './reconcile-service';
import { recordResyncEnd } from './service-metrics';

export async function fullResync(input: FullResyncInput = {}): Promise<FullResyncResult> {
  // The schedule's action starts it with `{}` or `{destroyOrphans}`; a client may start it with no input at all.
  const fields = input === undefined || input === null ? {} : fieldsOf(input, 'fullResync', '"destroyOrphans" or nothing');
  onlyKnownFields(fields, 'fullResync', ['destroyOrphans']);
  const destroyOrphans = optionalBoolean(fields, 'destroyOrphans', 'fullResync') ?? false;
  const engine = proxyActivities<Activities>(ENGINE_CALL);
  const control = proxyActivities<ControlActivities>(ENGINE_CALL);

  // The controllers are signalled by the signalControllers activity: a signal sent from this workflow would cost two
  // history events per controller, which caps the fleet one run can reach (docs/scaling.md).
  const { signalled, missed } = await control.signalControllers.executeWithOptions({ summary: 'list service controllers and ask each to resync' }, []);

  // The orphan scan is told which services have a controller and finds their objects with one list by tag per
  // service instead of one read per Backend and Frontend (activities/scan.ts).
  const known = new Set([...signalled, ...missed]);
  const scan: Parameters<Activities['scanTaggedServices']> = [{ skip: [...known].sort() }];
  const tagged = await engine.scanTaggedServices.executeWithOptions({ summary: 'scan the Engine for tagged services' }, scan);
  const orphans: Orphan[] = Object.entries(tagged)
    .filter(([uid]) => !known.has(uid))
    .map(([serviceUid, t]) => ({ serviceUid, loadBalancers: t.loadBalancers, objects: t.objects, destroyed: false }));

  if (destroyOrphans) {
    await Promise.all(
      orphans.map(async (o) => {
        try {
          // Visibility lags: a service applied seconds ago may not be listed yet. Ask for its controller directly
          // before destroying anything.
          if (await control.controllerRunning.executeWithOptions({ summary: `confirm ${o.serviceUid} has no controller` }, [{ serviceUid: o.serviceUid }])) {
            o.error = 'has a controller after all (started while the resync listed controllers); left alone';
            return;
          }
          // The teardown's spec is made here from what the Engine listed, so it is validated here, where it enters;
          // the pass takes it from its parent as it is.
          const checked = validateSpec({ serviceUid: o.serviceUid, nameSuffix: '', loadBalancers: o.loadBalancers, externalAddresses: [], ports: {}, servers: [] });
          if (!checked.ok) {
            o.error = `cannot tear down: ${formatIssues(checked.issues).replace(/\n/g, '; ')}`;
            return;
          }
          await executeChild(reconcileService, {
            workflowId: workflowIds.orphanTeardown(o.serviceUid),
            args: [{ spec: checked.spec, teardown: true }],
            staticSummary: `destroy orphaned objects of ${o.serviceUid}`,
            typedSearchAttributes: [{ key: searchAttributes.serviceUid, value: o.serviceUid }],
          });
          o.destroyed = true;
        } catch (err) {
          o.error = (err as Error).message;
        }
      }),
    );
  }
  recordResyncEnd(orphans.filter((o) => !o.destroyed).length);
  return { signalled: signalled.sort(), missed: missed.sort(), orphans };
}
