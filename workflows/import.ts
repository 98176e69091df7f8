/**
 * importServices: the read-only side of `lbaas import`. Reads every given load balancer (one activity each), rebuilds
 * the spec of every service found there (domain/import.ts, checked by the planner), and asks the Engine, once per
 * service, whether objects tagged for it live on load balancers that were not given: a spec missing one of them
 * would make lbaas tear that load balancer's objects down. Nothing here writes to the Engine.
 */
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { ImportActivities } from '../activities/import';
import { isServiceUid } from '../domain';
import { reconstructService, servicesIn } from '../domain/import';
import { fieldsOf, invalidInput, onlyKnownFields } from './input';
import { ENGINE_CALL, short } from './options';
import type { ImportServicesInput, ImportServicesResult } from '../contract';

/** More load balancers than an account holds; bounds the activities one run schedules. */
export const MAX_IMPORT_LOAD_BALANCERS = 64;

export async function importServices(input: ImportServicesInput): Promise<ImportServicesResult> {
  const { loadBalancers, serviceUids } = checkInput(input);
  const read = proxyActivities<ImportActivities>(ENGINE_CALL);
  const engine = proxyActivities<Activities>(ENGINE_CALL);

  const inventories = await Promise.all(
    loadBalancers.map((lb) => read.readLoadBalancer.executeWithOptions({ summary: `read load balancer ${short(lb)}` }, [{ loadBalancer: lb }])),
  );
  const found = servicesIn(inventories);
  const wanted = serviceUids.length > 0 ? serviceUids.filter((u) => found.includes(u)) : found;
  const services = wanted.map((uid) => reconstructService(uid, inventories));

  // Objects tagged for a service on load balancers not given: one tag listing per service.
  const here = new Set(inventories.flatMap((i) => i.objects.map((o) => o.identifier)));
  await Promise.all(
    services.map(async (s) => {
      const tagged = await engine.listTagged.executeWithOptions({ summary: `list objects tagged for ${s.serviceUid}` }, [{ serviceUid: s.serviceUid }]);
      const elsewhere = tagged.filter((id) => !here.has(id)).sort();
      if (elsewhere.length === 0) return;
      s.problems.push({
        message: `${elsewhere.length} object(s) tagged for this service are not on the given load balancers (${elsewhere.slice(0, 5).join(', ')}${elsewhere.length > 5 ? ', …' : ''}): a spec without their load balancer would make lbaas destroy them; give every load balancer the service uses`,
      });
    }),
  );

  return {
    loadBalancers: inventories.map((i) => ({
      loadBalancer: i.loadBalancer,
      found: i.found,
      objects: i.objects.length,
      untagged: i.objects.filter((o) => o.serviceUids.length === 0).length,
    })),
    services,
    notFound: serviceUids.filter((u) => !found.includes(u)),
  };
}

function checkInput(input: unknown): { loadBalancers: string[]; serviceUids: string[] } {
  const name = `importServices (${workflowInfo().workflowId})`;
  const fields = fieldsOf(input, name, '"loadBalancers"');
  onlyKnownFields(fields, name, ['loadBalancers', 'serviceUids']);
  const { loadBalancers, serviceUids } = fields;
  if (!Array.isArray(loadBalancers) || loadBalancers.length === 0 || loadBalancers.length > MAX_IMPORT_LOAD_BALANCERS) {
    throw invalidInput(`${name}: loadBalancers: must be a list of 1 to ${MAX_IMPORT_LOAD_BALANCERS} identifiers`);
  }
  loadBalancers.forEach((lb, i) => {
    if (typeof lb !== 'string' || lb === '' || lb.includes('/') || lb.length > 128) {
      throw invalidInput(`${name}: loadBalancers[${i}]: must be a non-empty identifier without "/"`);
    }
  });
  const uids = serviceUids ?? [];
  if (!Array.isArray(uids)) throw invalidInput(`${name}: serviceUids: must be a list of service uids`);
  uids.forEach((u, i) => {
    if (!isServiceUid(u)) throw invalidInput(`${name}: serviceUids[${i}]: must be a service uid`);
  });
  return { loadBalancers: [...new Set(loadBalancers as string[])], serviceUids: [...new Set(uids as string[])] };
}
