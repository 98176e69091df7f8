/**
 * reconcilePoolDelta: a pool-delta pass (docs/architecture.md, "Pool-delta passes"). The service's controller runs it
 * instead of the full pass when the only change since its last converged pass is the pool's member set: it creates,
 * tags and awaits the joining members' Servers under the Backends the controller knows, then deletes the leaving
 * members' Servers by identifier, and reads nothing else. Drift is the full pass's job, and the full pass follows
 * whenever this one finds what it knows stale: it never fails, it answers `stale` with the reason instead.
 *
 * Safety is the full pass's, through the same activities: a create is one idempotent step even though the first
 * attempt lists no look-alikes (activities/objects.ts: a retry finds what a lost attempt created and tags it), a
 * create is never abandoned half-way (not cancellable), a destroy only removes what carries the service's tag and
 * waits until it is gone.
 */
import { CancellationScope, getExternalWorkflowHandle, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CreateObjectInput } from '../activities/objects';
import { causeOf } from './failures';
import { invalidInput, optionalInteger, passSpecOf } from './input';
import { ENGINE_CALL, listed, readinessOptions, short } from './options';
import { SCHEMA_VERSION, supersededCreatesSignal, workflowIds } from '../contract';
import { completeFields, desiredObjects, MAX_DELTA_SERVERS, type DeltaDestroy, type DesiredOf, type StateName } from '../domain';
import { recordPassEnd } from './service-metrics';

export interface ReconcilePoolDeltaInput {
  /** The service's spec, resolved with the joining members alone as its servers: their Servers are created. */
  spec: unknown;
  revision?: number;
  /** The Backend of each port on each load balancer of the spec: load balancer -> port -> identifier. */
  backends: Record<string, Record<string, string>>;
  /** The leaving members' Servers. */
  destroys: DeltaDestroy[];
}

export interface DeltaCreated {
  loadBalancer: string;
  key: string;
  name: string;
  identifier: string;
  state: StateName;
}

export interface ReconcilePoolDeltaResult {
  /** Servers created (and tagged) by this pass, ready unless `stale`. */
  created: DeltaCreated[];
  /** Servers removed (deleted, or found gone). */
  destroyed: { loadBalancer: string; key: string; identifier: string }[];
  /** Why the pass stopped short: what the controller knew is stale, and the full pass runs next. */
  stale?: string;
}

function readBackends(raw: unknown, lbs: readonly string[], ports: readonly string[]): Record<string, Record<string, string>> {
  const wf = 'reconcilePoolDelta';
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalidInput(`${wf}: backends: must be an object of load balancer -> port -> Backend identifier`);
  const out: Record<string, Record<string, string>> = {};
  for (const lb of lbs) {
    const byPort = (raw as Record<string, unknown>)[lb];
    for (const port of ports) {
      const id = typeof byPort === 'object' && byPort !== null ? (byPort as Record<string, unknown>)[port] : undefined;
      if (typeof id !== 'string' || !/^[0-9A-Za-z-]{1,64}$/.test(id)) throw invalidInput(`${wf}: backends.${lb}.${port}: must be the identifier of the port's Backend on that load balancer`);
      (out[lb] ??= {})[port] = id;
    }
  }
  return out;
}

function readDestroys(raw: unknown, lbs: readonly string[]): DeltaDestroy[] {
  const wf = 'reconcilePoolDelta';
  if (!Array.isArray(raw) || raw.length > MAX_DELTA_SERVERS) throw invalidInput(`${wf}: destroys: must be a list of at most ${MAX_DELTA_SERVERS} Servers`);
  return raw.map((d: unknown, i) => {
    const r = (typeof d === 'object' && d !== null ? d : {}) as Record<string, unknown>;
    const ok = typeof r.loadBalancer === 'string' && lbs.includes(r.loadBalancer) && typeof r.key === 'string' && r.key.startsWith('server:') && typeof r.identifier === 'string' && /^[0-9A-Za-z-]{1,64}$/.test(r.identifier) && typeof r.name === 'string';
    if (!ok) throw invalidInput(`${wf}: destroys[${i}]: must be {loadBalancer (of the spec), key (server:...), identifier, name}`);
    return { loadBalancer: r.loadBalancer as string, key: r.key as string, identifier: r.identifier as string, name: r.name as string };
  });
}

export async function reconcilePoolDelta(input: ReconcilePoolDeltaInput): Promise<ReconcilePoolDeltaResult> {
  const wf = 'reconcilePoolDelta';
  const { spec, fields } = passSpecOf(input, wf);
  optionalInteger(fields, 'revision', wf, 0, Number.MAX_SAFE_INTEGER);
  const uid = spec.serviceUid;
  const ports = Object.keys(spec.ports);
  const backends = readBackends(fields.backends, spec.loadBalancers, ports);
  const destroys = readDestroys(fields.destroys, spec.loadBalancers);
  const creates = spec.loadBalancers.flatMap((lb) => desiredObjects(spec, lb).filter((d): d is DesiredOf<'server'> => d.kind === 'server').map((desired) => ({ loadBalancer: lb, desired })));
  if (creates.length + destroys.length > MAX_DELTA_SERVERS) throw invalidInput(`${wf}: ${creates.length + destroys.length} Servers to write: at most ${MAX_DELTA_SERVERS}`);

  const engine = proxyActivities<Activities>(ENGINE_CALL);
  const readiness = proxyActivities<Activities>(readinessOptions(spec.readiness));
  const result: ReconcilePoolDeltaResult = { created: [], destroyed: [] };
  const staleBecause = (why: string) => {
    result.stale ??= why;
  };

  /** One Backend's joining Servers: created and tagged in one realizeObjects, what is still deploying awaited after. */
  const createUnder = async (lb: string, port: string, members: DesiredOf<'server'>[]) => {
    const backend = backends[lb]?.[port] as string;
    const on = `on ${short(lb)}`;
    const realized = await CancellationScope.nonCancellable(() =>
      engine.realizeObjects.executeWithOptions({ summary: `create and await Server${members.length > 1 ? 's' : ''} ${listed(members.map((d) => d.name))} ${on} (pool delta)` }, [
        {
          serviceUid: uid,
          loadBalancer: lb,
          kind: 'server',
          members: members.map((d) => ({ key: d.key, fields: completeFields('server', d.fields, backend) as CreateObjectInput['fields'] })),
          unlisted: true,
          // Nothing waits on a Server: one readiness GET when its deploy is surely over, not the median aim's two.
          sure: true,
        },
      ]),
    );
    const byKey = new Map(members.map((d) => [d.key, d]));
    const waiting: { key: string; identifier: string; name: string }[] = [];
    for (const r of realized) {
      const d = byKey.get(r.key);
      if (!d) continue;
      result.created.push({ loadBalancer: lb, key: r.key, name: d.name, identifier: r.identifier, state: r.state });
      if (r.outcome === 'NotReady') waiting.push({ key: r.key, identifier: r.identifier, name: d.name });
      else if (r.outcome !== 'Deployed' && r.outcome !== 'Updated') staleBecause(`Server ${d.name} ${on}: ${r.outcome === 'Gone' ? 'vanished while deploying' : 'deployment failed'}`);
    }
    if (waiting.length === 0) return;
    const settled = await readiness.settleObjects.executeWithOptions({ summary: `await Server${waiting.length > 1 ? 's' : ''} ${listed(waiting.map((w) => w.name))} ${on} (pool delta)` }, [
      { objects: waiting.map((w) => ({ kind: 'server' as const, identifier: w.identifier, name: w.name })) },
    ]);
    for (const s of settled) {
      const c = result.created.find((x) => x.identifier === s.identifier);
      if (!c) continue;
      if (s.outcome === 'Deployed' || s.outcome === 'Updated') c.state = s.outcome;
      else staleBecause(`Server ${c.name} ${on}: ${s.outcome === 'Gone' ? 'vanished while deploying' : 'deployment failed'}`);
    }
  };

  try {
    // New Servers first, old ones removed after, so that traffic moves before anything is taken away.
    const groups = new Map<string, { lb: string; port: string; members: DesiredOf<'server'>[] }>();
    for (const c of creates) {
      const id = `${c.loadBalancer}\n${c.desired.port}`;
      const g = groups.get(id) ?? { lb: c.loadBalancer, port: c.desired.port, members: [] };
      g.members.push(c.desired);
      groups.set(id, g);
    }
    // Every group comes to rest before the pass goes on or ends, failed or not: no create is left in flight.
    const settled = await Promise.allSettled([...groups.values()].map((g) => createUnder(g.lb, g.port, g.members)));
    for (const s of settled) {
      if (s.status === 'rejected') {
        if (isCancellation(s.reason)) throw s.reason;
        staleBecause(causeOf(s.reason));
      }
    }
    if (result.stale === undefined && destroys.length > 0) {
      const byId = new Map(destroys.map((d) => [d.identifier, d]));
      const outcomes = await engine.destroyObjects.executeWithOptions(
        { summary: `destroy Server${destroys.length > 1 ? 's' : ''} ${listed(destroys.map((d) => `${d.name} on ${short(d.loadBalancer)}`))} (pool delta)` },
        [{ serviceUid: uid, objects: destroys.map((d) => ({ kind: 'server' as const, identifier: d.identifier, name: d.name })) }],
      );
      for (const o of outcomes) {
        const d = byId.get(o.identifier);
        if (!d) continue;
        // Another owner's object under our Backend (retagged since the last converged pass): the full pass decides.
        if (o.outcome === 'not ours') staleBecause(`Server ${d.name} (${d.identifier}) on ${short(d.loadBalancer)} is no longer tagged for the service`);
        else result.destroyed.push({ loadBalancer: d.loadBalancer, key: d.key, identifier: d.identifier });
      }
    }
  } catch (err) {
    if (isCancellation(err)) {
      // Superseded (a new spec or a delete): what was created must reach the next pass, which might otherwise miss it
      // while the tag index lags (as reconcile-lb.ts does).
      if (result.created.length > 0) {
        await CancellationScope.nonCancellable(() =>
          getExternalWorkflowHandle(workflowIds.controller(uid))
            .signal(supersededCreatesSignal, { v: SCHEMA_VERSION, identifiers: result.created.map((c) => c.identifier).sort() })
            .catch(() => undefined),
        );
      }
      throw err;
    }
    staleBecause(causeOf(err));
  }
  if (result.stale === undefined) recordPassEnd(uid, 'converged');
  return result;
}
