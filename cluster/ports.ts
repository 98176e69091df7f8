/**
 * The ports of the local cluster: PostgreSQL's and, per Temporal server process, gRPC, membership, metrics (and the
 * frontend's HTTP). Saved in the state directory and reused while they can be bound.
 *
 * Every port is drawn from 20000-32767, below the kernel's ephemeral range (32768-60999 on Linux by default), where
 * `listen(0)` and the local end of every outgoing connection land. A port drawn there is free when it is drawn, but
 * not while its server is down: a history host killed and started again, PostgreSQL restarted, or a process that
 * starts late. Meanwhile the other processes open database and gRPC connections by the hundred, and one of them may
 * take the port as its local end; the server then cannot listen ("Failed to start gRPC listener") and exits.
 * Membership ports must stay below 32768 anyway: they are stored in cluster_membership.rpc_port, a SMALLINT in
 * Temporal's PostgreSQL schema, and a larger one makes the host fail to join ("value out of range for type smallint").
 */
import { randomInt } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import type { ProcessPorts, TemporalService } from './config';

export interface PortLayout {
  postgres: number;
  processes: Record<string, ProcessPorts>;
}

/** Where the ports are drawn from: [LOW, HIGH], outside the ephemeral range and within a SMALLINT. */
export const PORT_RANGE = { low: 20_000, high: 32_767 } as const;

export async function bindable(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A port of PORT_RANGE that is not in `taken` and can be bound now. */
export async function drawPort(taken: Set<number>): Promise<number> {
  for (let attempt = 0; attempt < 500; attempt++) {
    const port = PORT_RANGE.low + randomInt(PORT_RANGE.high - PORT_RANGE.low + 1);
    if (taken.has(port) || !(await bindable(port))) continue;
    taken.add(port);
    return port;
  }
  throw new Error(`no free port between ${PORT_RANGE.low} and ${PORT_RANGE.high} for the local Temporal cluster`);
}

function allPorts(layout: PortLayout, plan: { name: string }[]): number[] {
  return [layout.postgres, ...plan.flatMap((p) => Object.values(layout.processes[p.name] as ProcessPorts) as number[])];
}

/**
 * The ports of a kept cluster stay what they were while they can all be bound (its address then does not change
 * between runs); new ports are drawn for a new cluster, when a saved one is taken, or when a saved layout (from an
 * older lbaas) has ports outside PORT_RANGE.
 */
export async function portLayout(file: string, plan: { name: string; service: TemporalService }[]): Promise<PortLayout> {
  const saved = JSON.parse(await readFile(file, 'utf8').catch(() => 'null')) as PortLayout | null;
  if (saved && plan.every((p) => saved.processes[p.name])) {
    const all = allPorts(saved, plan);
    const inRange = all.every((port) => port >= PORT_RANGE.low && port <= PORT_RANGE.high);
    if (inRange && new Set(all).size === all.length && (await Promise.all(all.map(bindable))).every(Boolean)) return saved;
  }
  const taken = new Set<number>();
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
