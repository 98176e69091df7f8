/**
 * Starting importServices (contract/workflow-types.ts) from any Temporal client, and turning its result into spec files.
 * Like the rest of the client library, this never talks to the Engine: a worker reads the load balancers.
 */
import { randomUUID } from 'node:crypto';
import YAML from 'yaml';
import { AMBIGUOUS, upstreamPortReading } from '../domain/import-names';
import type { ImportedService, ImportProblem } from '../domain/import-types';
import type { PoolFile } from '../domain/pool';
import { searchAttributes, workflowIds, workflowTypes, type ImportServicesResult, type ImportServicesWorkflow } from '../contract';
import type { LbaasClient } from './service-client';


export async function runImport(lbaas: LbaasClient, loadBalancers: string[], serviceUids: string[] = [], workflowId = workflowIds.importRun(randomUUID())): Promise<ImportServicesResult> {
  return lbaas.client.workflow.execute<ImportServicesWorkflow>(workflowTypes.importServices, {
    workflowId,
    taskQueue: lbaas.taskQueue,
    args: [{ loadBalancers, serviceUids }],
    staticSummary: `import services from ${loadBalancers.length === 1 ? `load balancer ${loadBalancers[0]}` : `${loadBalancers.length} load balancers`}`,
    typedSearchAttributes: [{ key: searchAttributes.loadBalancers, value: [...new Set(loadBalancers)].sort() }],
  });
}

/** A problem as one line: where (load balancer, kind, name, identifier), then what. */
export function problemLine(p: ImportProblem): string {
  const where = [p.loadBalancer ? `load balancer ${p.loadBalancer}` : '', p.kind ? `${p.kind[0]?.toUpperCase()}${p.kind.slice(1)} ${p.name ?? ''}`.trim() : '', p.identifier ? `(${p.identifier})` : '']
    .filter((x) => x !== '')
    .join(' ');
  return where === '' ? p.message : `${where}: ${p.message}`;
}

/**
 * A service's spec as a YAML document, with a comment saying where it came from, the notes, and, for a spec written
 * despite problems (--force), a warning listing each one: applying such a spec changes objects.
 */
export function specYaml(s: ImportedService, content: unknown = s.spec): string {
  const doc = new YAML.Document(content);
  const lines = [`imported by lbaas import from ${s.objects} objects on ${s.loadBalancers.join(', ')}`];
  if (s.problems.length > 0) {
    lines.push('WARNING: written with --force; this spec does NOT match what the load balancers hold, and applying it', 'changes or replaces objects. Problems found:');
    lines.push(...s.problems.map((p) => `  - ${problemLine(p).replace(/\n/g, ' ')}`));
  }
  lines.push(...s.notes.map((n) => `note: ${n}`));
  doc.commentBefore = lines.map((l) => ` ${l}`).join('\n');
  return doc.toString({ lineWidth: 0 });
}

/** A pool file as YAML, with a comment saying how to create the pool before applying the specs that name it. */
export function poolYaml(pool: PoolFile, members: readonly string[]): string {
  const doc = new YAML.Document(pool);
  doc.commentBefore = [` server pool ${pool.name}, imported by lbaas import: the servers of ${members.join(', ')}`, ` create it (lbaas pool set -f <this file>) before applying the specs that name it`].join('\n');
  return doc.toString({ lineWidth: 0 });
}

/**
 * A service as the upstream controller of cluster `clusterName` named it (`lbaas import --cluster-name`): its single
 * port read by the suffix `<service>.<namespace>.<cluster>`, so that the single unnamed port of a Service gets the
 * spec lbaas kube applies for it. Only the spec's ports and nameSuffix can change, never the objects they name; the
 * ambiguity note is replaced by what was decided, or by why neither reading fits the cluster's convention.
 */
export function withClusterName(s: ImportedService, clusterName: string): ImportedService {
  if (s.spec === null) return s;
  const reading = upstreamPortReading(s.spec.ports, s.spec.nameSuffix, clusterName);
  const notes = s.notes.filter((n) => !n.startsWith(AMBIGUOUS));
  if (!reading.ok) return { ...s, notes: [...notes, `${AMBIGUOUS} ${reading.message}; the spec keeps the first reading`] };
  if (!reading.changed) return notes.length === s.notes.length ? s : { ...s, notes };
  return {
    ...s,
    spec: { ...s.spec, ports: reading.ports, nameSuffix: reading.nameSuffix },
    notes: [...notes, `cluster ${clusterName}: the single unnamed port "" with nameSuffix "${reading.nameSuffix}", as the upstream named it`],
  };
}
