/**
 * `lbaas import --load-balancer ID… [--service-uid UID…] [--out-dir DIR] [-o yaml|json] [--force] [--check]`:
 * the specs of the services the upstream controller built, read by the importServices workflow (the CLI never talks
 * to the Engine). A spec is written only when it matches the load balancers exactly; what stands in the way is
 * reported per service and object on stderr. Exit 0 when every service found was written, 1 when one was not (or a
 * requested uid was not found, or --check found a change), 2 for usage errors and unknown load balancers.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isPoolName, isServiceUid, POOL_NAME_RULE, validateSpec } from '../../domain';
import { groupIntoPool, withPool, type PoolGrouping } from '../../domain/import-pool';
import type { ImportedService } from '../../domain/import-types';
import { CliError, EXIT, invalid } from '../../common/errors';
import { poolYaml, problemLine, runImport, specYaml, withClusterName } from '../../client/import';
import { CLUSTER_NAME_PATTERN, CLUSTER_NAME_RULE } from '../../kube/mapping';
import { workflowIds, type ImportServicesResult, type PlanServiceResult } from '../../contract';
import { noAnswerHint, warnIfNoWorker, withTemporal, type Temporal } from '../connect';
import type { CliIo } from '../io';
import { json } from '../output';
import { planText } from '../views';
import { within } from '../wait';

/** One read of each load balancer plus one tag listing per service: minutes would mean no worker is taking it. */
const IMPORT_TIMEOUT_MS = 5 * 60_000;
/** Each --check plan is one observation per service; the same bound as `lbaas plan`. */
const PLAN_TIMEOUT_MS = 5 * 60_000;

export interface ImportOptions {
  loadBalancer: string[];
  serviceUid: string[];
  outDir?: string;
  output: 'yaml' | 'json';
  force?: boolean;
  check?: boolean;
  pool?: string;
  clusterName?: string;
}

interface Outcome {
  service: ImportedService;
  written: boolean;
  /** What the file holds: the spec, or with --pool the spec naming the pool. */
  document?: unknown;
  file?: string;
  check?: { changes: number; plan: PlanServiceResult };
}

export async function importCommand(opts: ImportOptions, io: CliIo): Promise<void> {
  const loadBalancers = opts.loadBalancer ?? [];
  if (loadBalancers.length === 0) throw invalid('import: --load-balancer ID is required (repeat it for every load balancer the services use)');
  for (const lb of loadBalancers) if (lb === '' || lb.includes('/') || lb.length > 128) throw invalid(`import: --load-balancer ${JSON.stringify(lb)}: not a load balancer identifier`);
  for (const uid of opts.serviceUid ?? []) if (!isServiceUid(uid)) throw invalid(`import: --service-uid ${JSON.stringify(uid)}: not a service uid`);
  if (opts.pool !== undefined && !isPoolName(opts.pool)) throw invalid(`import: --pool ${JSON.stringify(opts.pool)}: ${POOL_NAME_RULE}`);
  const cluster = opts.clusterName;
  if (cluster !== undefined && !CLUSTER_NAME_PATTERN.test(cluster)) throw invalid(`import: --cluster-name ${JSON.stringify(cluster)}: ${CLUSTER_NAME_RULE}`);

  await withTemporal(io.env, async (t) => {
    await warnIfNoWorker(t, io.stderr);
    const workflowId = workflowIds.importRun(randomUUID());
    const result = await within(
      t.client,
      IMPORT_TIMEOUT_MS,
      () => runImport(t.lbaas, loadBalancers, opts.serviceUid ?? [], workflowId),
      () => new CliError(`timed out after ${IMPORT_TIMEOUT_MS / 60_000}m waiting for the import (${noAnswerHint(t.settings.taskQueue)})`, EXIT.timeout),
      { workflowId, taskQueue: t.settings.taskQueue, say: (line: string) => io.stderr(`${line}\n`) },
    );
    const missing = result.loadBalancers.filter((l) => !l.found).map((l) => l.loadBalancer);
    if (missing.length > 0) throw invalid(`import: no load balancer ${missing.join(', ')} on the Engine; nothing was written`);

    const outcomes: Outcome[] = result.services.map((found) => {
      const service = cluster === undefined ? found : withClusterName(found, cluster);
      const written = service.spec !== null && (service.problems.length === 0 || opts.force === true);
      return { service, written, ...(written ? { document: service.spec } : {}) };
    });
    const pool = opts.pool === undefined ? null : pooled(outcomes, opts.pool);
    if (opts.outDir !== undefined) await writeFiles(outcomes, pool, opts.outDir, opts.output);
    if (opts.check) await check(t, outcomes, io);
    report(result, outcomes, pool, opts, io);
    const failed = outcomes.some((o) => !o.written) || result.notFound.length > 0 || outcomes.some((o) => (o.check?.changes ?? 0) > 0);
    if (failed) process.exitCode = EXIT.failed;
  });
}

interface Pooled extends PoolGrouping {
  file?: string;
}

/** --pool: the written services sharing the most common server set name the pool instead of listing servers. */
function pooled(outcomes: Outcome[], name: string): Pooled {
  const written = outcomes.flatMap((o) => (o.written && o.service.spec !== null ? [o.service.spec] : []));
  const grouping = groupIntoPool(name, written);
  for (const o of outcomes) {
    if (o.service.spec !== null && grouping.members.includes(o.service.serviceUid)) o.document = withPool(o.service.spec, name);
  }
  return grouping;
}

async function writeFiles(outcomes: Outcome[], pool: Pooled | null, dir: string, format: 'yaml' | 'json'): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const o of outcomes) {
    if (!o.written) continue;
    o.file = path.join(dir, `${o.service.serviceUid}.${format}`);
    await writeFile(o.file, format === 'json' ? json(o.document) : specYaml(o.service, o.document));
  }
  if (pool?.pool) {
    pool.file = path.join(dir, `${pool.pool.name}.pool.${format}`);
    await writeFile(pool.file, format === 'json' ? json(pool.pool) : poolYaml(pool.pool, pool.members));
  }
}

/** `lbaas plan` of every written spec: an exact import plans no create, destroy or recover on any load balancer. */
async function check(t: Temporal, outcomes: Outcome[], io: CliIo): Promise<void> {
  for (const o of outcomes) {
    if (!o.written || o.service.spec === null) continue;
    const valid = validateSpec(o.service.spec);
    if (!valid.ok) continue;
    const plan = await within(
      t.client,
      PLAN_TIMEOUT_MS,
      () => t.lbaas.plan(o.service.spec, valid.spec),
      () => new CliError(`timed out after ${PLAN_TIMEOUT_MS / 60_000}m waiting for the plan of ${o.service.serviceUid}`, EXIT.timeout),
    );
    const changes = Object.values(plan.loadBalancers).reduce((n, lb) => n + lb.summary.create + lb.summary.destroy + lb.summary.recover, 0);
    o.check = { changes, plan };
    io.stderr(`check ${o.service.serviceUid}: ${changes === 0 ? 'no change' : `${changes} change(s)`}\n${indent(planText(plan))}`);
  }
}

function report(result: ImportServicesResult, outcomes: Outcome[], pool: Pooled | null, opts: ImportOptions, io: CliIo): void {
  const e = io.stderr;
  for (const l of result.loadBalancers) {
    e(`load balancer ${l.loadBalancer}: ${l.objects} objects, ${l.untagged} of them untagged (left alone)\n`);
  }
  if (result.services.length === 0 && result.notFound.length === 0) e(`no services found on ${plural(result.loadBalancers.length, 'load balancer')}: nothing written\n`);
  for (const uid of result.notFound) e(`service ${uid}: no object tagged for it on the given load balancers\n`);
  for (const o of outcomes) {
    const s = o.service;
    const head = o.written
      ? `${s.problems.length > 0 ? 'WRITTEN WITH PROBLEMS (--force)' : 'imported'} ${s.serviceUid} (${s.objects} objects on ${s.loadBalancers.join(', ')})${o.file ? ` -> ${o.file}` : ''}`
      : `NOT WRITTEN ${s.serviceUid} (${s.objects} objects on ${s.loadBalancers.join(', ')}): ${plural(s.problems.length, 'problem')}${s.spec !== null ? ' (--force writes it anyway, with a warning)' : ''}`;
    e(`${head}\n`);
    for (const p of s.problems) e(`  ${problemLine(p).replace(/\n/g, '\n    ')}\n`);
    for (const n of s.notes) e(`  note: ${n}\n`);
  }
  if (pool?.pool) e(`server pool ${pool.pool.name}: ${pool.pool.servers.length} servers, named by ${pool.members.join(', ')}${pool.file ? ` -> ${pool.file}` : ''}\n`);
  for (const x of pool?.others ?? []) e(`  ${x.serviceUid}: ${x.reason}\n`);
  if (opts.output === 'json') {
    io.stdout(
      json({
        loadBalancers: result.loadBalancers,
        notFound: result.notFound,
        ...(pool ? { pool: { ...pool.pool, members: pool.members, others: pool.others, ...(pool.file ? { file: pool.file } : {}) } } : {}),
        services: outcomes.map((o) => ({
          serviceUid: o.service.serviceUid,
          written: o.written,
          ...(o.file ? { file: o.file } : {}),
          loadBalancers: o.service.loadBalancers,
          objects: o.service.objects,
          spec: o.document ?? o.service.spec,
          problems: o.service.problems,
          notes: o.service.notes,
          ...(o.check ? { check: { changes: o.check.changes, loadBalancers: Object.fromEntries(Object.entries(o.check.plan.loadBalancers).map(([lb, p]) => [lb, p.summary])) } } : {}),
        })),
      }),
    );
  } else if (opts.outDir === undefined) {
    const docs = outcomes.filter((o) => o.written).map((o) => specYaml(o.service, o.document));
    if (pool?.pool) docs.unshift(poolYaml(pool.pool, pool.members));
    io.stdout(docs.join('---\n'));
  }
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
const indent = (text: string) => text.replace(/^(?=.)/gm, '  ');
