/** The chaos report as people read it. */
import type { ChaosReport } from './options';

/** The report as people read it: what was injected, then each invariant. */
export function formatReport(r: ChaosReport): string {
  const o = r.options;
  const i = r.injected;
  const row = (label: string, value: string | number) => `  ${label.padEnd(40)} ${value}`;
  const lines = [
    `chaos run (${o.profile} Engine${o.profile === 'realistic' ? `, ${o.rateLimit.rps} requests/s per token, burst ${o.rateLimit.burst}` : ''}): ${o.services} services on 2 load balancers, seed ${o.seed}, ${o.workers} workers, chaos window ${Math.round(o.durationMs / 1000)} s`,
    `  fault rates ${JSON.stringify(o.rates)}, deploys ${o.deployMs.min}-${o.deployMs.max} ms`,
    '',
    'injected',
    row('Engine 5xx (serverError)', i.serverError),
    row('Engine 429 (rateLimited)', i.rateLimited),
    row('applied, answer lost (dropAfterCommit)', i.dropAfterCommit),
    row('deploys ending in DeploymentError', i.deploymentError),
    row('worker SIGKILLs', i.workerKills),
    row('worker processes started', i.workerStarts),
    row('worker exits not caused by us', i.workerOwnExits.length ? `${i.workerOwnExits.length} (${i.workerOwnExits.map((x) => `${x.name} ${x.how}${x.whileServerDown ? ' while the server was down' : ''}`).join('; ')})` : 0),
    row('Temporal dev server restarts', i.serverRestarts ? `${i.serverRestarts} (down ${(i.serverDownMs / 1000).toFixed(1)} s)` : 0),
    row('spec revisions applied', `${i.revisionsApplied} (${o.services} first + ${i.revisionsApplied - o.services} changed mid-run)`),
    row('resyncs sent after faults off', i.resyncsAfterFaultsOff),
    row('Engine requests / answered 401', `${i.engineRequests} / ${i.engineUnauthorized}`),
    ...(o.profile === 'realistic' ? [row('answered 429 by the rate limit (no Retry-After)', `${i.engineThrottled} (${((i.engineThrottled / Math.max(1, i.engineRequests)) * 100).toFixed(1)} %)`)] : []),
    '',
    'invariants',
    ...r.invariants.flatMap((inv) => [`  ${inv.held ? 'HELD  ' : 'BROKEN'}  ${inv.name}`, ...inv.detail.map((d) => `            ${d}`)]),
    '',
    `timings: setup ${(r.timings.setupMs / 1000).toFixed(1)} s, chaos ${(r.timings.chaosMs / 1000).toFixed(1)} s, converge ${(r.timings.convergeMs / 1000).toFixed(1)} s, checks ${(r.timings.checkMs / 1000).toFixed(1)} s, total ${(r.timings.totalMs / 1000).toFixed(1)} s`,
    `work directory: ${r.workDir}`,
    r.ok ? 'RESULT: every invariant held' : 'RESULT: invariants broken',
  ];
  return lines.join('\n');
}
