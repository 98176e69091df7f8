/**
 * serverPool: the long-lived workflow of one server pool (id `lbaas-pool/<name>`). It holds the members and a
 * revision that grows with every real change, knows the services whose controllers subscribed, and sends every
 * change to each of them (contract/messages.ts has the protocol; docs/architecture.md, "Server pools", the design).
 *
 *   idle ──change, subscribe or resync──▶ deliver a round (one signal to each of at most `deliveryRound` subscribers
 *        owed, concurrently) ──▶ idle
 *   idle ──delete accepted (no subscribers)──▶ end
 *   idle ──history long──▶ continue-as-new (members, subscribers and what is still owed carried over), between
 *        rounds too (a pool with thousands of subscribers joining never stops owing someone), and also while a
 *        `waitConverged` waits: Temporal fails that wait, and the client sends it again to the new run
 *   idle or between rounds ──a new target build──▶ continue-as-new onto that build (waits as on a long history)
 *
 * PINNED (workflows/versioning.ts), and it moves to a new build by continue-as-new as the controller does
 * (workflows/controller.ts): only the input and the messages cross builds (contract/schema.ts), so this loop carries
 * no patch. Inputs without `v: 2` are runs of the previous release and run its loop (workflows/legacy/pool.ts).
 */
import { HandlerUnfinishedPolicy } from '@temporalio/common';
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  makeContinueAsNewFunc,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { concurrencyLimit, formatIssues, isPoolName, POOL_NAME_RULE, SPEC_LIMITS, validateMembers, type ServerSpec } from '../domain';
import { invalidInput, optionalInteger } from './input';
import { runsPreviousLoop } from './legacy/dispatch';
import { legacyServerPool } from './legacy/pool';
import {
  poolAddUpdate,
  poolDeleteUpdate,
  poolMembersSignal,
  poolRemoveUpdate,
  poolReportSignal,
  poolResyncSignal,
  poolSetUpdate,
  poolStatusQuery,
  poolSubscribeSignal,
  poolUnsubscribeSignal,
  poolWaitUpdate,
  searchAttributes,
  poolWakeSignal,
  workflowIds,
  readPoolReport,
  readServiceRef,
  SCHEMA_VERSION,
} from '../contract';
import { PoolState } from './pool-state';
import type { ServerPoolInput } from './entity-inputs';

export type { ServerPoolInput } from './entity-inputs';

/**
 * A change to 300 subscribers costs about 600 events (a signal initiated and completed each), so pools rotate at
 * the same 2,000 events as controllers: a few fan-outs per run, replays stay short.
 */
export const POOL_CONTINUE_AS_NEW_EVENTS = 2_000;

/**
 * A pool has at most MAX_SIGNALS_AT_ONCE signals to controllers pending: Temporal refuses more than 2,000 pending
 * signals per workflow (`limit.numPendingSignals.error`), and a pool with more subscribers than that would fail its
 * workflow task for good. A delivery round takes at most this many owed subscribers, and a long history rotates
 * between rounds, so that a pool with thousands of subscribers joining (which never stops owing someone) still stays
 * under 2,000 events per run (docs/scaling.md).
 */
export const MAX_SIGNALS_AT_ONCE = 500;

export async function serverPool(input: ServerPoolInput): Promise<{ name: string; revision: number }> {
  const v = (input as { v?: unknown } | undefined)?.v;
  // The previous release's runs, and `v: 2` runs it started, replay its loop (workflows/legacy/dispatch.ts).
  if (runsPreviousLoop(input)) return legacyServerPool(input as unknown as Parameters<typeof legacyServerPool>[0]);
  if (v !== SCHEMA_VERSION) throw invalidInput(`serverPool: v: this build reads schema version ${SCHEMA_VERSION} (or none: the previous release), got ${JSON.stringify(v)}`);
  if (!isPoolName(input?.name)) throw invalidInput(`serverPool: name: ${POOL_NAME_RULE}`);
  const name = input.name;
  const historyLimit = optionalInteger(input as unknown as Record<string, unknown>, 'historyLimit', 'serverPool', 20, 50_000) ?? POOL_CONTINUE_AS_NEW_EVENTS;
  const deliveryRound = optionalInteger(input as unknown as Record<string, unknown>, 'deliveryRound', 'serverPool', 1, MAX_SIGNALS_AT_ONCE) ?? MAX_SIGNALS_AT_ONCE;
  const st = new PoolState(name, input.state);
  const publish = () => setCurrentDetails(st.details());

  const members = (value: unknown): ServerSpec[] => {
    const r = validateMembers(value);
    if (!r.ok) throw new Error(`invalid servers:\n${formatIssues(r.issues)}`);
    return r.servers;
  };
  const notDeleting = () => {
    if (st.deleting) throw new Error(`server pool ${name} is being deleted`);
  };
  const change = { validator: (value: unknown) => (notDeleting(), void members(value)) };
  setHandler(poolSetUpdate, (servers) => done(st.set(members(servers))), { ...change, description: 'Replace the members; a new revision only when they differ.' });
  setHandler(poolAddUpdate, (servers) => done(st.add(members(servers))), { ...change, description: 'Add members, or change the address of members of that name.' });
  setHandler(poolRemoveUpdate, (names) => done(st.remove(names as string[])), {
    validator: (names: unknown) => {
      notDeleting();
      if (!Array.isArray(names) || names.length === 0 || names.length > SPEC_LIMITS.servers || !names.every((n) => typeof n === 'string' && n !== '')) {
        throw new Error(`names: must be a list of 1 to ${SPEC_LIMITS.servers} server names`);
      }
    },
    description: 'Remove members by name; names that are not members are ignored.',
  });
  setHandler(
    poolDeleteUpdate,
    () => {
      st.deleting = true;
      publish();
      return { name, revision: st.revision };
    },
    {
      validator: () => {
        notDeleting();
        const services = st.services();
        if (services.length > 0) throw new Error(`server pool ${name} is used by ${services.length} ${services.length === 1 ? 'service' : 'services'}: ${services.join(', ')}; move them off the pool (or delete them) first`);
      },
      description: 'End the pool; refused while services use it.',
    },
  );
  setHandler(
    poolWaitUpdate,
    async (revision) => {
      await condition(() => st.settled(revision));
      const services = st.serviceStatus();
      return { name, revision: st.revision, converged: services.every((s) => (s.convergedRevision ?? 0) >= revision), services };
    },
    {
      validator: (revision: number) => {
        if (!Number.isInteger(revision) || revision < 0 || revision > st.revision) throw new Error(`revision: must be a revision of the pool from 0 to ${st.revision}`);
      },
      description: 'Wait until every service using the pool has finished a pass for this revision or a newer one.',
      // A long history or a new build continues as new with waits open: their callers send them again.
      unfinishedPolicy: HandlerUnfinishedPolicy.ABANDON,
    },
  );
  setHandler(poolStatusQuery, () => st.status(), { description: 'Members, revision, and per service the pool revision it has converged.' });
  setHandler(poolSubscribeSignal, (m) => {
    const r = readServiceRef(m);
    if (!r) return;
    st.subscribe(r.serviceUid);
    publish();
  });
  setHandler(poolUnsubscribeSignal, (m) => {
    const r = readServiceRef(m);
    if (!r) return;
    st.unsubscribe(r.serviceUid);
    publish();
  });
  setHandler(poolReportSignal, (m) => {
    const r = readPoolReport(m);
    if (!r) return;
    st.report(r);
    publish();
  });
  setHandler(poolResyncSignal, () => st.resync());
  // A worker of a new Current Version wakes every entity still on another build (worker/wake.ts).
  setHandler(poolWakeSignal, () => undefined);

  function done<T>(result: T): T {
    publish();
    return result;
  }

  upsertSearchAttributes([{ key: searchAttributes.serverPool, value: name }]);
  publish();

  const historyIsLong = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > historyLimit;
  /** Another build is the target now: between delivery rounds, nothing is in flight that the snapshot does not carry. */
  const moved = () => workflowInfo().targetWorkerDeploymentVersionChanged;
  const rotate = () => {
    const next: ServerPoolInput = { v: SCHEMA_VERSION, name, state: st.snapshot(), ...(input.historyLimit ? { historyLimit } : {}), ...(input.deliveryRound ? { deliveryRound } : {}) };
    if (moved()) return makeContinueAsNewFunc<typeof serverPool>({ initialVersioningBehavior: 'AUTO_UPGRADE' })(next);
    return continueAsNew<typeof serverPool>(next);
  };
  const rotateNow = () => (historyIsLong() || moved()) && !st.deleting;
  for (;;) {
    await condition(() => st.owed.size > 0 || st.deleting || rotateNow());
    if (st.owed.size > 0) {
      // Between rounds a long history (or a new build) rotates, what is owed carried in the snapshot, waits open or
      // not: Temporal fails the open waits and their callers send them again to the new run.
      if (rotateNow()) return rotate();
      await deliver(st.takeOwed(deliveryRound));
      publish();
      continue;
    }
    // Deliveries go on while waiting for handlers: a waitConverged handler may be waiting for exactly those (their
    // reports). A long history or a new build rotates meanwhile.
    await condition(() => allHandlersFinished() || st.owed.size > 0 || rotateNow());
    if (st.owed.size > 0) continue;
    if (rotateNow()) return rotate();
    // A deleting pool woke only once its handlers finished (rotateNow excludes it).
    if (st.deleting) return { name, revision: st.revision };
  }

  /**
   * One signal per subscriber, each with what changed since the revision it was last sent, or every member when it
   * is new, re-subscribing or too far behind (PoolState.messageFor); a change arriving meanwhile is owed again and
   * sent next round: the latest revision always reaches everyone. A controller that is gone cannot be signalled; it is
   * dropped from the subscribers.
   */
  async function deliver(uids: string[]): Promise<void> {
    const limit = concurrencyLimit(MAX_SIGNALS_AT_ONCE);
    await Promise.all(
      uids.map((uid) =>
        limit(async () => {
          try {
            await getExternalWorkflowHandle(workflowIds.controller(uid)).signal(poolMembersSignal, { v: SCHEMA_VERSION, ...st.messageFor(uid) });
          } catch {
            st.drop(uid);
          }
        }),
      ),
    );
  }
}
