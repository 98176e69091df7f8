/**
 * What the CLI prints: the JSON documents of docs/cli.md#json-documents and their text forms for people, as pure
 * functions of the controller's data, plus the small argument checks every command shares.
 */
import { decodeVersioningBehavior } from '@temporalio/common';
import { invalid } from '../common/errors';
import { ellipsize, formatStatus, formatTime, keyValues, table } from './output';
import type { ServiceSummary } from '../client/service-client';
import { PLAN_LIMITS, type ControllerStatus, type LoadBalancerProgress, type PassResult, type PlanServiceResult } from '../contract';
import { formatDuration, isServiceUid, KIND_TITLE, MESSAGES, parseDuration, type AddressStatus, type ObjectStatus } from '../domain';

/** `--timeout 90s`: a duration of at least 1 ms; anything else is a usage error naming the flag. */
export function parseDurationFlag(text: string, flag: string): number {
  const ms = parseDuration(text);
  if (ms === null || ms <= 0) throw invalid(`${flag}: must be a duration like 90s, 10m or 1m30s (got ${JSON.stringify(text)})`);
  return ms;
}

/** Service uids are checked like the spec's, so that a typo is a usage error, not a lookup of a strange workflow id. */
export function checkUid(uid: string): string {
  if (!isServiceUid(uid)) throw invalid(`service uid ${JSON.stringify(ellipsize(uid, 140))}: ${MESSAGES.serviceUid}`);
  return uid;
}

// ---- apply --wait ----

export interface LoadBalancerOutcome {
  status: AddressStatus;
  created: number;
  destroyed: number;
  recovered: number;
  /** Only when this load balancer failed. */
  error?: string;
}

/** docs/cli.md#json-documents: the document `apply --wait` prints. */
export interface ApplyResult {
  serviceUid: string;
  /** The revision this result is for. */
  revision: number;
  /** Only when a newer spec superseded the one applied: the revision that was applied (older than `revision`). */
  appliedRevision?: number;
  converged: boolean;
  status: AddressStatus;
  loadBalancers: Record<string, LoadBalancerOutcome>;
  error?: string;
}

export function applyResult(r: PassResult, applied: number): ApplyResult {
  const loadBalancers: Record<string, LoadBalancerOutcome> = {};
  for (const lb of Object.keys(r.loadBalancers).sort()) {
    const s = r.loadBalancers[lb];
    if (!s) continue;
    loadBalancers[lb] = { status: s.status, created: s.created, destroyed: s.destroyed, recovered: s.recovered, ...(s.error ? { error: s.error } : {}) };
  }
  return {
    serviceUid: r.serviceUid,
    revision: r.revision,
    ...(r.revision !== applied ? { appliedRevision: applied } : {}),
    converged: r.converged,
    status: r.status,
    loadBalancers,
    ...(r.error ? { error: r.error } : {}),
  };
}

export function applyResultText(r: ApplyResult, lbSummaries: PassResult['loadBalancers']): string {
  const pairs: [string, string][] = [
    ['service', r.serviceUid],
    ['revision', r.appliedRevision !== undefined ? `${r.revision} (superseded revision ${r.appliedRevision})` : String(r.revision)],
    ['result', r.converged ? 'converged' : `failed: ${r.error ?? 'unknown error'}`],
    ['status', formatStatus(r.status)],
  ];
  const rows = Object.entries(r.loadBalancers).map(([lb, o]) => [
    lb,
    lbSummaries[lb]?.cleanup ? 'removed (left the spec)' : o.error ? 'failed' : 'converged',
    String(o.created),
    String(o.destroyed),
    String(o.recovered),
    o.error ? ellipsize(o.error, 120) : '',
  ]);
  return `${keyValues(pairs)}\n${table(['load balancer', 'result', 'created', 'destroyed', 'recovered', 'error'], rows)}`;
}

// ---- status ----

export interface ObjectView {
  loadBalancer: string;
  kind: string;
  name: string;
  identifier: string | null;
  state: string;
  error?: string;
}

/** docs/cli.md#json-documents: the document `status -o json` prints. */
export interface StatusView {
  serviceUid: string;
  phase: string;
  revision: number;
  /** The build the controller runs on (its Worker Deployment Version); null before its first workflow task. */
  build: BuildView | null;
  /** For a service with `serverPool`: the pool, its newest revision received, and the revision last converged. */
  pool?: { name: string; revision: number | null; servers: number | null; convergedRevision: number | null };
  status: AddressStatus;
  loadBalancers: Record<string, LoadBalancerOutcome & { converged: boolean }>;
  objects: ObjectView[];
}

const objectView = (o: ObjectStatus): ObjectView => ({
  loadBalancer: o.loadBalancer,
  kind: o.kind,
  name: o.name,
  identifier: o.identifier,
  state: o.state,
  ...(o.error ? { error: o.error } : {}),
});

/** Where a workflow runs, from its describe(): Temporal's versioning info (docs/operations.md#upgrading-lbaas). */
export interface BuildView {
  deploymentName: string;
  buildId: string;
  behavior: 'PINNED' | 'AUTO_UPGRADE' | null;
  /** An AUTO_UPGRADE workflow on its way to the Current Version (`<deployment>.<build id>`): its next task runs there. */
  movingTo?: string;
}

type DeploymentVersionInfo = { deploymentName?: string | null; buildId?: string | null } | null | undefined;
/** The part of a describe()'s raw workflowExecutionInfo.versioningInfo that says where the workflow runs. */
export interface VersioningInfo {
  behavior?: Parameters<typeof decodeVersioningBehavior>[0];
  deploymentVersion?: DeploymentVersionInfo;
  versionTransition?: { deploymentVersion?: DeploymentVersionInfo } | null;
}

export function buildView(info: VersioningInfo | null | undefined): BuildView | null {
  const v = info?.deploymentVersion;
  if (!v?.deploymentName || !v.buildId) return null;
  const to = info?.versionTransition?.deploymentVersion;
  return {
    deploymentName: v.deploymentName,
    buildId: v.buildId,
    behavior: decodeVersioningBehavior(info?.behavior) ?? null,
    ...(to?.deploymentName && to.buildId ? { movingTo: `${to.deploymentName}.${to.buildId}` } : {}),
  };
}

function buildText(b: BuildView | null): string {
  if (!b) return '- (no workflow task completed on a versioned worker yet)';
  return `${b.deploymentName}.${b.buildId}${b.behavior ? ` (${b.behavior.toLowerCase().replace('_', '-')})` : ''}${b.movingTo ? `, moving to ${b.movingTo}` : ''}`;
}

export function statusView(s: ControllerStatus, build: BuildView | null = null): StatusView {
  const loadBalancers: StatusView['loadBalancers'] = {};
  for (const lb of Object.keys(s.loadBalancers).sort()) {
    const x = s.loadBalancers[lb];
    if (!x) continue;
    loadBalancers[lb] = { converged: x.converged, status: x.status, created: x.created, destroyed: x.destroyed, recovered: x.recovered, ...(x.error ? { error: x.error } : {}) };
  }
  const pool = s.pool ? { pool: { ...s.pool, convergedRevision: s.lastPass?.converged ? (s.lastPass.poolRevision ?? null) : null } } : {};
  return { serviceUid: s.serviceUid, phase: s.phase, revision: s.revision, build, ...pool, status: s.status, loadBalancers, objects: s.objects.map(objectView) };
}

export function statusText(s: ControllerStatus, build: BuildView | null = null): string {
  const last = s.lastPass;
  const pairs: [string, string][] = [
    ['service', s.serviceUid],
    ['phase', s.phase],
    ['revision', String(s.revision)],
    [
      'last pass',
      last
        ? `${last.pass} (revision ${last.revision}) ${last.converged ? 'converged' : `failed: ${ellipsize(last.error ?? 'unknown error', 200)}`} at ${formatTime(last.finishedAt)}`
        : '-',
    ],
    ['running', s.running ? `pass ${s.running.pass} (revision ${s.running.revision}${s.running.teardown ? ', delete' : ''}) since ${formatTime(s.running.startedAt)}` : '-'],
    ['build', buildText(build)],
  ];
  if (s.pool) {
    const converged = last?.poolRevision === undefined ? '' : `, last pass on pool revision ${last.poolRevision}`;
    pairs.splice(3, 0, ['server pool', s.pool.revision === null ? `${s.pool.name} (waiting for its servers)` : `${s.pool.name} revision ${s.pool.revision} (${s.pool.servers} servers${converged})`]);
  }
  if (s.engineRateLimitedUntil && s.engineRateLimitedUntil > Date.now()) pairs.push(['engine', `rate limited by the Engine (requests held back until ${formatTime(s.engineRateLimitedUntil)})`]);
  if (s.nextRetryAt !== null) pairs.push(['next retry', `${formatTime(s.nextRetryAt)} (${s.consecutiveFailures} failed ${s.consecutiveFailures === 1 ? 'pass' : 'passes'} in a row)`]);
  pairs.push(['status', formatStatus(s.status)]);
  const lbRows = Object.keys(s.loadBalancers)
    .sort()
    .map((lb) => {
      const x = s.loadBalancers[lb];
      return [lb, x?.cleanup ? 'removed' : x?.converged ? 'converged' : 'failed', String(x?.created ?? 0), String(x?.destroyed ?? 0), String(x?.recovered ?? 0), ellipsize(x?.error ?? '', 120)];
    });
  const objRows = s.objects.map((o) => [o.loadBalancer, KIND_TITLE[o.kind] ?? o.kind, o.name, o.identifier ?? '-', o.state, ellipsize(o.error ?? '', 120)]);
  return [
    keyValues(pairs),
    table(['load balancer', 'result', 'created', 'destroyed', 'recovered', 'error'], lbRows),
    objRows.length > 0 ? table(['load balancer', 'kind', 'name', 'identifier', 'state', 'error'], objRows) : 'no objects\n',
  ].join('\n');
}

// ---- list ----

export interface ListEntry {
  serviceUid: string;
  phase: string;
  loadBalancers: string[];
  workflowId: string;
  startTime: string;
}

export const listEntry = (s: ServiceSummary): ListEntry => ({
  serviceUid: s.serviceUid,
  phase: s.phase,
  loadBalancers: s.loadBalancers,
  workflowId: s.workflowId,
  startTime: s.startTime.toISOString(),
});

export function listText(entries: readonly ListEntry[]): string {
  return table(
    ['service', 'phase', 'load balancers', 'started'],
    entries.map((e) => [e.serviceUid, e.phase, e.loadBalancers.join(',') || '-', formatTime(new Date(e.startTime))]),
  );
}

// ---- plan ----

export function planText(p: PlanServiceResult & { pool?: { name: string; revision: number; servers: readonly unknown[] } }): string {
  const out: string[] = [];
  if (p.pool) {
    const n = p.pool.servers.length;
    out.push(
      n === 0
        ? `servers from pool ${p.pool.name} (revision ${p.pool.revision}): none; the pool is empty, so the service has no Server objects (Backends, Frontends and Binds stay; its load balancers have no server to send traffic to)`
        : `servers from pool ${p.pool.name} (revision ${p.pool.revision}): ${n}`,
    );
  }
  const total = { create: 0, destroy: 0, recover: 0, wait: 0, keep: 0 };
  const lbs = Object.keys(p.loadBalancers);
  for (const lb of lbs) {
    const x = p.loadBalancers[lb];
    if (!x) continue;
    for (const k of Object.keys(total) as (keyof typeof total)[]) total[k] += x.summary[k];
    out.push(`load balancer ${lb}${x.cleanup ? ' (no longer in the spec: everything the service has there is destroyed)' : ''}: ${summaryText(x.summary)}`);
    out.push(...(x.lines.length > 0 || x.linesOmitted ? x.lines.map((l) => `  ${l}`) : ['  nothing to do']));
    if (x.linesOmitted) out.push(`  ... and ${x.linesOmitted} more ${x.linesOmitted === 1 ? 'step' : 'steps'} (counted above; a plan lists at most ${PLAN_LIMITS.lines} steps in all)`);
  }
  out.push(`plan for ${p.serviceUid} on ${lbs.length} load ${lbs.length === 1 ? 'balancer' : 'balancers'}: ${summaryText(total)}`);
  return `${out.join('\n')}\n`;
}

function summaryText(s: { create: number; destroy: number; recover: number; wait: number; keep: number }): string {
  return `${s.create} to create, ${s.destroy} to destroy, ${s.recover} to recover, ${s.wait} to wait for, ${s.keep} unchanged`;
}

// ---- progress while waiting ----

/** Objects still on their way: desired ones not ready, and ones planned for destruction not yet destroyed. */
function pendingObjects(p: LoadBalancerProgress): ObjectStatus[] {
  return p.objects.filter((o) => (o.key.startsWith('destroy:') ? o.state !== 'Destroyed' : o.state !== 'Deployed' && o.state !== 'Updated'));
}

/** One line per running load balancer reconciliation, e.g. `lb 6f0c…: creating (pass 1), 8/12 ready; pending Backend http.x, …`. */
export function progressLines(progress: readonly LoadBalancerProgress[], maxNames = 4): string[] {
  return progress.map((p) => {
    const pending = pendingObjects(p);
    const desired = p.objects.filter((o) => !o.key.startsWith('destroy:'));
    const ready = desired.filter((o) => o.state === 'Deployed' || o.state === 'Updated').length;
    const names = pending.slice(0, maxNames).map((o) => `${o.key.startsWith('destroy:') ? 'destroy ' : ''}${KIND_TITLE[o.kind]} ${o.name} (${o.state})`);
    const more = pending.length > maxNames ? `, +${pending.length - maxNames} more` : '';
    const head = `load balancer ${p.loadBalancer}: ${p.phase} (pass ${p.pass}), ${ready}/${desired.length} ready`;
    return pending.length > 0 ? `${head}; pending ${names.join(', ')}${more}` : head;
  });
}

export const elapsed = (sinceMs: number) => formatDuration(Math.floor((Date.now() - sinceMs) / 1000) * 1000);
