/**
 * The serverPool loop of the previous release (the last one whose entities were AUTO_UPGRADE), kept so that its runs
 * replay on this build, as workflows/legacy/controller.ts is for controllers (docs/architecture.md, "Versions and
 * patches"): workflows/pool.ts sends every input without `v: 2` here. That release's loop as it was, patches included,
 * with the wake signal's no-op handler, the patch LEGACY_MOVE_PATCH (at the first point between delivery rounds this
 * build executes rather than replays, it continues as new) and this build's continue-as-new input (`v: 2`). Removed
 * with workflows/legacy/controller.ts.
 *
 * What follows is that release's description.
 *
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
 */
import { HandlerUnfinishedPolicy } from '@temporalio/common';
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  deprecatePatch,
  getExternalWorkflowHandle,
  patched,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { concurrencyLimit, formatIssues, isPoolName, POOL_NAME_RULE, SPEC_LIMITS, validateMembers, type ServerSpec } from '../../domain';
import { invalidInput, optionalInteger } from '../input';
import {
  poolAddUpdate,
  poolDeleteUpdate,
  poolMembersSignal,
  poolRemoveUpdate,
  poolReportSignal,
  poolResyncSignal,
  poolSetUpdate,
  poolStatusQuery,
  type PoolMembersStatus,
  poolSubscribeSignal,
  poolUnsubscribeSignal,
  poolWaitUpdate,
  searchAttributes,
  poolWakeSignal,
  workflowIds,
  SCHEMA_VERSION,
} from '../../contract';
import { LEGACY_MOVE_PATCH } from './controller';
import type { ServerPoolInput } from '../entity-inputs';
import { PoolState, type PoolSnapshot } from './pool-state';

/** The previous release's input: no `v`. */
export interface LegacyPoolInput {
  name: string;
  state?: PoolSnapshot;
  historyLimit?: number;
  deliveryRound?: number;
}

/**
 * A change to 300 subscribers costs about 600 events (a signal initiated and completed each), so pools rotate at
 * the same 2,000 events as controllers: a few fan-outs per run, replays stay short.
 */
export const POOL_CONTINUE_AS_NEW_EVENTS = 2_000;

/**
 * A pool has at most MAX_SIGNALS_AT_ONCE signals to controllers pending: Temporal refuses more than 2,000 pending
 * signals per workflow (`limit.numPendingSignals.error`), and a pool with more subscribers than that would fail its
 * workflow task for good. The limit came with the patch POOL_SIGNAL_LIMIT_PATCH, deprecated now (docs/architecture.md,
 * "Versions and patches"): a run that fanned out to at most that many at once replays either way.
 */
export const POOL_SIGNAL_LIMIT_PATCH = 'pool-signal-limit';
export const MAX_SIGNALS_AT_ONCE = 500;

/**
 * The patch that bounds a delivery round and lets a long history rotate between rounds. Before it, a round took
 * everything owed and the pool continued as new only when nothing was owed: with 5,000 services subscribing during
 * an apply something always was, and one run grew to 24,739 events and 4.6 MB (a 5,000-service run; its account is
 * in the git history of docs/scaling.md). Runs of the previous build replay the old branch (one round per owed set, no rotation while owed).
 */
export const POOL_ROUNDS_PATCH = 'pool-delivery-rounds';

/**
 * The patch that lets a long history rotate while a `waitConverged` update waits. Before it, a pool kept one run
 * until every wait was answered, so a waited fan-out to N subscribers stayed in one run (about 6 events per
 * subscriber: Temporal's 51,200 events near 8,500 subscribers, docs/scaling.md). Temporal fails a wait still open when
 * the run continues as new ("Workflow Update failed because the Workflow completed before the Update completed") and
 * client/pool-client.ts sends it again to the new run: a wait can be repeated. Runs of the previous build replay the
 * old branch: no rotation while an update handler runs. Decided once per run, the first time a long history meets a
 * running handler.
 */
export const POOL_ROTATE_WITH_WAITERS_PATCH = 'pool-rotate-with-waiters';

/**
 * The patch that delivers to owed subscribers in arrival order (PoolState.takeOwed). Before it, each round took the
 * owed subscribers in uid order, and a change marks every subscriber owed again: with changes coming faster than a
 * fan-out to thousands ends (nodes joining and leaving an autoscaled cluster), the subscribers already reached were
 * taken again first and those whose uids sort last were never reached. Runs of the previous build replay uid order
 * up to the point they reached.
 */
export const POOL_ARRIVAL_ORDER_PATCH = 'pool-owed-in-arrival-order';

export async function legacyServerPool(input: LegacyPoolInput): Promise<{ name: string; revision: number }> {
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
      // A long history continues as new with waits open (POOL_ROTATE_WITH_WAITERS_PATCH): their callers send them again.
      unfinishedPolicy: HandlerUnfinishedPolicy.ABANDON,
    },
  );
  // Its answer has the previous release's shape (workflows/legacy/pool-state.ts), which differs from today's type.
  setHandler(poolStatusQuery, () => st.status() as unknown as PoolMembersStatus, { description: 'Members, revision, and per service the pool revision it has converged.' });
  setHandler(poolSubscribeSignal, ({ serviceUid }) => (st.subscribe(serviceUid), publish()));
  setHandler(poolUnsubscribeSignal, ({ serviceUid }) => (st.unsubscribe(serviceUid), publish()));
  setHandler(poolReportSignal, (report) => (st.report(report), publish()));
  setHandler(poolResyncSignal, () => st.resync());
  // Sent by workers of this build to move the run (worker/wake.ts): the task it brings is what matters.
  setHandler(poolWakeSignal, () => undefined);

  function done<T>(result: T): T {
    publish();
    return result;
  }

  upsertSearchAttributes([{ key: searchAttributes.serverPool, value: name }]);
  publish();

  const historyIsLong = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > historyLimit;
  const rotate = () =>
    continueAsNew<(i: ServerPoolInput) => Promise<{ name: string; revision: number }>>({
      v: SCHEMA_VERSION,
      name,
      state: st.snapshot(),
      ...(input.historyLimit ? { historyLimit } : {}),
      ...(input.deliveryRound ? { deliveryRound } : {}),
    });
  // Evaluated last in every condition below, so that replayed tasks take their recorded branch first.
  const moveNow = () => !st.deleting && patched(LEGACY_MOVE_PATCH);
  // Whether this run rotates a long history while an update handler runs: undefined until the first time it has to
  // decide, then fixed for the run (the patch's marker is written once, where the decision is first taken).
  let rotatesWithWaiters: boolean | undefined;
  const mayRotate = () => allHandlersFinished() || (rotatesWithWaiters ??= patched(POOL_ROTATE_WITH_WAITERS_PATCH));
  for (;;) {
    await condition(() => st.owed.size > 0 || st.deleting || historyIsLong() || moveNow());
    if (st.owed.size > 0) {
      if (patched(POOL_ROUNDS_PATCH)) {
        // Between rounds a long history rotates, what is owed carried in the snapshot. Runs of the previous build
        // (no pool-rotate-with-waiters marker) do not while an update handler runs: a fan-out with waiters finished
        // in one run.
        if ((historyIsLong() || moveNow()) && !st.deleting && mayRotate()) return rotate();
        await deliver(st.takeOwed(deliveryRound, patched(POOL_ARRIVAL_ORDER_PATCH) ? 'arrival' : 'uid'));
      } else {
        // Runs of the previous build: one round for everything owed, in uid order.
        await deliver(st.takeOwed(Infinity, 'uid'));
      }
      publish();
      continue;
    }
    // Deliveries go on while waiting for handlers: a waitConverged handler may be waiting for exactly those (their
    // reports). A history grown long meanwhile rotates, waits open or not, unless this run keeps the old branch.
    await condition(() => allHandlersFinished() || st.owed.size > 0 || ((historyIsLong() || moveNow()) && !st.deleting && rotatesWithWaiters !== false));
    if (st.owed.size > 0) continue;
    // A deleting pool woke only once its handlers finished (the condition's last clause excludes it).
    if (st.deleting) return { name, revision: st.revision };
    if (mayRotate()) return rotate();
  }

  /**
   * One signal per subscriber, each with what changed since the revision it was last sent, or every member when it
   * is new, re-subscribing or too far behind (PoolState.messageFor); a change arriving meanwhile is owed again and
   * sent next round: the latest revision always reaches everyone. A controller that is gone cannot be signalled; it is
   * dropped from the subscribers.
   */
  async function deliver(uids: string[]): Promise<void> {
    deprecatePatch(POOL_SIGNAL_LIMIT_PATCH);
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
