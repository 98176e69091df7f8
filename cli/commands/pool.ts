/**
 * `lbaas pool set|add|remove|status|list|delete`: server pools (workflows/pool.ts). Exit codes as for services:
 * 0 done, 1 a service using the pool failed (status --wait), 2 invalid input or refused (a missing pool, a delete
 * while services use it), 3 timed out waiting.
 */
import { WorkflowUpdateFailedError } from '@temporalio/client';
import type { CliIo } from '../io';
import { warnIfNoWorker, withTemporal, type Temporal } from '../connect';
import { CliError, EXIT, invalid } from '../../common/errors';
import { json, keyValues, table, type OutputFormat } from '../output';
import { loadPoolFile } from '../../client/spec-file';
import { PoolInUseError, PoolNotFoundError } from '../../client/pool-client';
import { formatDuration, formatIssues, isPoolName, POOL_NAME_RULE, validateMembers, type ServerSpec } from '../../domain';
import { workflowIds, type PoolChangeResult, type PoolServiceCounts, type PoolServiceStatus, type PoolStatus } from '../../contract';
import { parseDurationFlag } from '../views';
import { waitWithProgress } from '../wait';

type Out = { output: OutputFormat };

function checkName(name: string): string {
  if (!isPoolName(name)) throw invalid(`pool name ${JSON.stringify(name)}: ${POOL_NAME_RULE}`);
  return name;
}

/** Runs `fn` against Temporal, turning a missing pool and the pool's refusals into exit 2. */
async function withPools<T>(io: CliIo, fn: (t: Temporal) => Promise<T>): Promise<T> {
  return withTemporal(io.env, async (t) => {
    try {
      return await fn(t);
    } catch (err) {
      if (err instanceof PoolNotFoundError) throw invalid(err.message);
      if (err instanceof PoolInUseError) throw invalid(`refused: ${err.message}`);
      if (err instanceof WorkflowUpdateFailedError) throw invalid(`refused: ${(err.cause as Error | undefined)?.message ?? err.message}`);
      throw err;
    }
  });
}

function changeText(r: PoolChangeResult): string {
  if (!r.changed) return `server pool ${r.name}: unchanged (revision ${r.revision})\n`;
  const parts = [
    r.added.length > 0 ? `added ${r.added.join(', ')}` : '',
    r.removed.length > 0 ? `removed ${r.removed.join(', ')}` : '',
    r.readdressed.length > 0 ? `new address for ${r.readdressed.join(', ')}` : '',
  ].filter((p) => p !== '');
  const n = r.services;
  return `server pool ${r.name} revision ${r.revision}: ${parts.join('; ')}; delivering to ${n} ${n === 1 ? 'service' : 'services'} (lbaas pool status ${r.name} --wait follows them)\n`;
}

function printChange(r: PoolChangeResult, opts: Out, io: CliIo): void {
  io.stdout(opts.output === 'json' ? json(r) : changeText(r));
}

export async function poolSet(opts: { file: string } & Out, io: CliIo): Promise<void> {
  const { pool } = await loadPoolFile(opts.file);
  await withPools(io, async (t) => {
    await warnIfNoWorker(t, io.stderr);
    printChange(await t.lbaas.pools.set(pool), opts, io);
  });
}

/** `--server NAME=ADDRESS`, validated as pool file entries (the same rules as a spec's servers). */
export function parseServerFlags(entries: readonly string[]): ServerSpec[] {
  if (entries.length === 0) throw invalid('--server NAME=ADDRESS: at least one is required');
  const list = entries.map((e) => {
    const at = e.indexOf('=');
    if (at <= 0) throw invalid(`--server ${JSON.stringify(e)}: must be NAME=ADDRESS, like node-1=10.0.0.11`);
    return { name: e.slice(0, at), address: e.slice(at + 1) };
  });
  const r = validateMembers(list, '--server');
  if (!r.ok) throw invalid(`invalid --server (${entries.join(' ')}):\n${formatIssues(r.issues)}`);
  return r.servers;
}

export async function poolAdd(name: string, opts: { server: string[] } & Out, io: CliIo): Promise<void> {
  checkName(name);
  const servers = parseServerFlags(opts.server ?? []);
  await withPools(io, async (t) => printChange(await t.lbaas.pools.add(name, servers), opts, io));
}

export async function poolRemove(name: string, servers: string[], opts: Out, io: CliIo): Promise<void> {
  checkName(name);
  await withPools(io, async (t) => {
    const r = await t.lbaas.pools.remove(name, servers);
    const absent = servers.filter((s) => !r.removed.includes(s));
    if (absent.length > 0) io.stderr(`not members of ${name} (nothing to remove): ${absent.join(', ')}\n`);
    printChange(r, opts, io);
  });
}

function statusText(s: PoolStatus): string {
  const rows = s.services.map((x) => [
    x.serviceUid,
    x.convergedRevision === null ? '-' : String(x.convergedRevision),
    x.last === null ? 'converging' : x.last.converged ? `converged ${x.last.revision}` : `failed ${x.last.revision}: ${x.last.error ?? `lbaas status ${x.serviceUid}`}`,
  ]);
  const round = s.round
    ? `round ${s.round.number} ${s.round.running ? 'sending' : 'sent'} revision ${s.round.revision} (${s.round.workflowId})${s.round.running && s.round.revision < s.revision ? `; revision ${s.revision} goes out when it ends` : ''}`
    : 'none yet';
  return [
    keyValues([
      ['pool', s.name],
      ['revision', String(s.revision)],
      ['servers', s.servers.length === 0 ? 'none (services using the pool have no Server objects)' : String(s.servers.length)],
      ['services', `${s.counts.services}: ${s.counts.converged} converged on revision ${s.revision}, ${s.counts.failed} failed, ${s.counts.pending} converging`],
      ['delivery', round],
    ]),
    s.servers.length > 0 ? table(['server', 'address'], s.servers.map((m) => [m.name, m.address])) : '',
    rows.length > 0 ? table(['service', 'converged revision', 'last pass'], rows) : 'no services use this pool\n',
  ]
    .filter((x) => x !== '')
    .join('\n');
}

/** Services named in the error of a failed `pool status --wait`; the rest are counted. */
export const FAILED_NAMED = 10;

/**
 * The error of a `pool status --wait` whose revision failed on some services: each named, at most FAILED_NAMED of
 * them (an Engine outage fails them all). The pool keeps no error texts: each service's own status has its error.
 */
export function failedOn(pool: string, revision: number, failed: PoolServiceStatus[]): string {
  const named = failed.slice(0, FAILED_NAMED).map((x) => `${x.serviceUid} (${x.last?.error ?? `its error: lbaas status ${x.serviceUid}`})`);
  const more = failed.length > FAILED_NAMED ? `, and ${failed.length - FAILED_NAMED} more (lbaas pool status ${pool} lists them)` : '';
  return `revision ${revision} of pool ${pool} failed on ${failed.length === 1 ? '1 service' : `${failed.length} services`}: ${named.join(', ')}${more}`;
}

export async function poolStatus(name: string, opts: { wait?: boolean; timeout: string } & Out, io: CliIo): Promise<void> {
  checkName(name);
  const timeoutMs = parseDurationFlag(opts.timeout, '--timeout');
  await withPools(io, async (t) => {
    let s = await t.lbaas.pools.status(name);
    if (opts.wait) {
      const revision = s.revision;
      // The wait counts the services' own state (client/pool-client.ts); its latest count is the progress shown.
      let counts: PoolServiceCounts | null = null;
      const outcome = await waitWithProgress({
        client: t.client,
        run: () => t.lbaas.pools.waitConverged(name, revision, (c) => (counts = c)),
        timeoutMs,
        progress: async () => (counts === null || counts.pending === 0 ? [] : [countsText(name, counts)]),
        ...(opts.output === 'text' ? { print: (line: string) => io.stderr(`${line}\n`) } : {}),
        pickup: { workflowId: workflowIds.pool(name), taskQueue: t.settings.taskQueue, say: (line: string) => io.stderr(`${line}\n`) },
      });
      s = await t.lbaas.pools.status(name);
      if (!outcome.done) {
        io.stdout(opts.output === 'json' ? json(s) : statusText(s));
        throw new CliError(`timed out after ${formatDuration(timeoutMs)} waiting for the services of pool ${name} to converge revision ${revision}`, EXIT.timeout);
      }
      io.stdout(opts.output === 'json' ? json(s) : statusText(s));
      const failed = outcome.value.services.filter((x) => (x.convergedRevision ?? 0) < revision);
      if (failed.length > 0) throw new CliError(failedOn(name, revision, failed), EXIT.failed);
      return;
    }
    io.stdout(opts.output === 'json' ? json(s) : statusText(s));
  });
}

function countsText(pool: string, c: PoolServiceCounts): string {
  return `pool ${pool} revision ${c.revision}: ${c.converged} of ${c.services} services converged, ${c.failed} failed, ${c.pending} still to finish a pass for it`;
}

export async function poolList(opts: Out, io: CliIo): Promise<void> {
  await withPools(io, async (t) => {
    const pools = await t.lbaas.pools.list();
    const view = pools.map((p) => ({ name: p.name, revision: p.revision, servers: p.servers.length, services: p.services }));
    if (opts.output === 'json') io.stdout(json(view));
    else io.stdout(view.length === 0 ? 'no server pools\n' : table(['pool', 'revision', 'servers', 'services'], view.map((p) => [p.name, String(p.revision), String(p.servers), String(p.services)])));
  });
}

export async function poolDelete(name: string, opts: Out, io: CliIo): Promise<void> {
  checkName(name);
  await withPools(io, async (t) => {
    const r = await t.lbaas.pools.delete(name);
    io.stdout(opts.output === 'json' ? json({ ...r, deleted: true }) : `deleted server pool ${name} (at revision ${r.revision})\n`);
  });
}
