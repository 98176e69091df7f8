/**
 * The ports of the local cluster: PostgreSQL's and, per Temporal server process, gRPC, membership, metrics (and the
 * frontend's HTTP). Saved in the state directory and reused while they can be bound.
 *
 * Every port is drawn below the kernel's ephemeral range (common/ports.ts says why). For the cluster the window
 * between drawing a port and binding it is long and comes back: a history host killed and started again, PostgreSQL
 * restarted, a process that starts late, while the other processes open database and gRPC connections by the hundred
 * (a port taken meanwhile makes the server exit with "Failed to start gRPC listener"). Membership ports must stay
 * below 32768 anyway: they are stored in cluster_membership.rpc_port, a SMALLINT in Temporal's PostgreSQL schema, and a
 * larger one makes the host fail to join ("value out of range for type smallint").
 */
import { readFile, writeFile } from 'node:fs/promises';
import { bindable, drawPort, PORT_RANGE } from '../common/ports';
import type { ProcessPorts, TemporalService } from './config';

export { PORT_RANGE };

export interface PortLayout {
  postgres: number;
  processes: Record<string, ProcessPorts>;
}

function allPorts(layout: PortLayout, plan: { name: string }[]): number[] {
  return [layout.postgres, ...plan.flatMap((p) => Object.values(layout.processes[p.name] as ProcessPorts) as number[])];
}

/**
 * The ports of a kept cluster stay what they were while they can all be bound (its address then does not change
 * between runs); new ports are drawn for a new cluster, when a saved one is taken or `reserved` (ports the caller binds
 * later), or when a saved layout (from an older lbaas) has ports outside PORT_RANGE.
 */
export async function portLayout(file: string, plan: { name: string; service: TemporalService }[], reserved: readonly number[] = []): Promise<PortLayout> {
  const saved = JSON.parse(await readFile(file, 'utf8').catch(() => 'null')) as PortLayout | null;
  if (saved && plan.every((p) => saved.processes[p.name])) {
    const all = allPorts(saved, plan);
    const inRange = all.every((port) => port >= PORT_RANGE.low && port <= PORT_RANGE.high);
    if (inRange && new Set(all).size === all.length && all.every((port) => !reserved.includes(port)) && (await Promise.all(all.map((port) => bindable(port)))).every(Boolean)) return saved;
  }
  const taken = new Set<number>(reserved);
  const layout: PortLayout = { postgres: await drawPort(taken), processes: {} };
  for (const p of plan) {
    layout.processes[p.name] = {
      grpc: await drawPort(taken),
      membership: await drawPort(taken),
      metrics: await drawPort(taken),
      ...(p.service === 'frontend' ? { http: await drawPort(taken) } : {}),
    };
  }
  await writeFile(file, JSON.stringify(layout, null, 2));
  return layout;
}
