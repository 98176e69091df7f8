/**
 * poolRound: one delivery round of a server pool (id `lbaas-pool/<name>/round/<round>`): sends one revision of the
 * pool's members to every service using the pool, page by page. The pool starts it and does not wait for it
 * (ParentClosePolicy.ABANDON: a pool continuing as new leaves its round running); it is the pool's only round in
 * flight, and it tells the pool when it has ended (roundEnded), which starts the next round if the pool changed
 * meanwhile. docs/architecture.md, "Server pools", has the design.
 *
 *   page ──deliverPoolPage (list a page of the controllers naming the pool, signal each)──▶ next page ──…──▶ last page
 *   last page ──roundEnded to the pool──▶ done
 *   between pages ──history long──▶ continue-as-new with the page token and the counts so far
 *
 * Who is signalled is read from visibility, so the pool keeps no subscribers; a service that visibility did not show
 * yet reads the members itself when it starts using the pool (activities/pools.ts, readServerPool). Signals go from
 * the activity: no history event per service, and none of Temporal's 2,000 pending signals per workflow used. A
 * page's activity is retried whole (signals carry the revision and a controller takes only a newer one).
 */
import { continueAsNew, getExternalWorkflowHandle, proxyActivities, setCurrentDetails, workflowInfo } from '@temporalio/workflow';
import type { PoolActivities } from '../activities/pools';
import { poolRoundEndedSignal, SCHEMA_VERSION, workflowIds, type PoolDelta, type PoolRoundResult, type SchemaVersion } from '../contract';
import { isPoolName, POOL_NAME_RULE, validateMembers, type ServerSpec } from '../domain';
import { fieldsOf, invalidInput, onlyKnownFields, optionalInteger } from './input';

/**
 * Controllers listed and signalled per page: a visibility page of 500 is one query, and 500 signals at the
 * activity's bounded concurrency take a few seconds, within a heartbeat or two.
 */
export const ROUND_PAGE_SIZE = 500;

/** A page costs about 6 events; 1,000 events is over 150 pages (75,000 services) per run. */
export const ROUND_CONTINUE_AS_NEW_EVENTS = 1_000;

export interface PoolRoundInput {
  v: SchemaVersion;
  pool: string;
  revision: number;
  /** Every member, or (`delta`) what changed since the revision the pool's previous round sent. */
  servers?: ServerSpec[];
  delta?: PoolDelta;
  pageSize?: number;
  historyLimit?: number;
  /** Carried over by continue-as-new: where the round is. */
  progress?: { pageToken: string; pages: number; listed: number; signalled: number; gone: number };
}

/** The fields of a round's input: what the pool starts it with, and `progress` that its continue-as-new adds. */
export const POOL_ROUND_FIELDS = ['v', 'pool', 'revision', 'servers', 'delta', 'pageSize', 'historyLimit', 'progress'] as const;
const PROGRESS_COUNTS = ['pages', 'listed', 'signalled', 'gone'] as const;

/** `progress` of a round continued as new: where it is (absent in a round's first run). */
function progressOf(v: unknown): PoolRoundInput['progress'] | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw invalidInput('poolRound: progress: must be {pageToken, pages, listed, signalled, gone}');
  const fields = v as Record<string, unknown>;
  onlyKnownFields(fields, 'poolRound: progress', ['pageToken', ...PROGRESS_COUNTS]);
  if (typeof fields.pageToken !== 'string' || fields.pageToken === '') throw invalidInput("poolRound: progress.pageToken: must be the next page's token");
  for (const name of PROGRESS_COUNTS) {
    const n = fields[name];
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) throw invalidInput(`poolRound: progress.${name}: must be an integer from 0`);
  }
  return fields as unknown as PoolRoundInput['progress'];
}

const { deliverPoolPage } = proxyActivities<PoolActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '30s',
  // A busy frontend or a restarting worker: retried without a limit (changes meanwhile wait for the next round).
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

export async function poolRound(input: PoolRoundInput): Promise<PoolRoundResult> {
  const fields = fieldsOf(input, 'poolRound', '"v", "pool", "revision" and "servers" or "delta"');
  onlyKnownFields(fields, 'poolRound', POOL_ROUND_FIELDS);
  if (input.v !== SCHEMA_VERSION) throw invalidInput(`poolRound: v: this build reads schema version ${SCHEMA_VERSION}, got ${JSON.stringify(input.v)}`);
  if (!isPoolName(input.pool)) throw invalidInput(`poolRound: pool: ${POOL_NAME_RULE}`);
  if (!Number.isInteger(input.revision) || input.revision < 1) throw invalidInput('poolRound: revision: must be a pool revision from 1');
  if (input.servers !== undefined && input.delta !== undefined) throw invalidInput('poolRound: servers or delta: give one, not both');
  const d = input.delta;
  if (d !== undefined) {
    if (typeof d !== 'object' || d === null || Array.isArray(d)) throw invalidInput('poolRound: delta: must be a change {base, upsert, remove}');
    onlyKnownFields(d as unknown as Record<string, unknown>, 'poolRound: delta', ['base', 'upsert', 'remove']);
  }
  const validDelta = d !== undefined && Number.isInteger(d.base) && d.base >= 0 && d.base < input.revision && validateMembers(d.upsert).ok && Array.isArray(d.remove);
  if (input.servers === undefined ? !validDelta : !validateMembers(input.servers).ok) throw invalidInput('poolRound: servers or delta: must be the members of the pool, or a change since a revision before this one');
  const members = input.servers !== undefined ? { servers: input.servers } : { delta: d as PoolDelta };
  const pageSize = optionalInteger(input as unknown as Record<string, unknown>, 'pageSize', 'poolRound', 1, 1_000) ?? ROUND_PAGE_SIZE;
  const historyLimit = optionalInteger(input as unknown as Record<string, unknown>, 'historyLimit', 'poolRound', 20, 50_000) ?? ROUND_CONTINUE_AS_NEW_EVENTS;
  const p = { pageToken: null as string | null, pages: 0, listed: 0, signalled: 0, gone: 0, ...progressOf(fields.progress) };
  const show = (state: string) =>
    setCurrentDetails(`**revision ${input.revision}** of server pool ${input.pool} — ${state}\n\n${p.signalled} services signalled in ${p.pages} pages (${p.gone} had ended)`);

  for (;;) {
    show('delivering');
    if (p.pageToken !== null && (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > historyLimit)) {
      return continueAsNew<typeof poolRound>({ ...input, progress: { ...p, pageToken: p.pageToken } });
    }
    const page = await deliverPoolPage.executeWithOptions({ summary: `revision ${input.revision}: page ${p.pages + 1}` }, [
      { pool: input.pool, revision: input.revision, ...members, pageToken: p.pageToken, pageSize },
    ]);
    p.pages++;
    p.listed += page.listed;
    p.signalled += page.signalled;
    p.gone += page.gone;
    p.pageToken = page.nextPageToken;
    if (p.pageToken === null) break;
  }
  show('done');
  // The pool starts no other round until this one ends. A pool that has ended (deleted) is not found: nothing to tell.
  await getExternalWorkflowHandle(workflowIds.pool(input.pool))
    .signal(poolRoundEndedSignal, { v: SCHEMA_VERSION, round: workflowInfo().workflowId, revision: input.revision })
    .catch(() => undefined);
  return { pool: input.pool, revision: input.revision, listed: p.listed, signalled: p.signalled, gone: p.gone };
}
