/**
 * The lower bound of convergence time for one service on one load balancer, from the deploy delays the simulator
 * actually drew in the run (`GET /_sim/objects`: deployMs per object).
 *
 * No reconciler can be faster than the longest dependency chain: a Frontend cannot be created before its Backend is
 * deployed, a Bind before its Frontend, a Server before its Backend. Per chain level one Engine request round trip
 * (the create) is added: the object's deploy cannot start before its create reached the Engine, and its parent's
 * readiness cannot be known before a read returned. Per port: Backend + max(Frontend + max(Binds), max(Servers)).
 */
import type { AdminObject } from '../simulator';

export interface LoadBalancerBound {
  loadBalancer: string;
  /** The longest chain of deploy delays alone. */
  deployChainMs: number;
  /** deployChainMs plus one request latency per level of that chain. */
  boundMs: number;
  /** Levels of the longest chain (3 when it ends in a Bind, 2 in a Server). */
  levels: number;
  objects: number;
  /** When the last object on this load balancer finished deploying (epoch ms). */
  lastDeployedAt: number;
  /** How long after the last deploy here ended a GET first answered it (the tail's readiness overshoot); NaN if none did. */
  lastNoticeMs: number;
  /** When the first Backend was created (epoch ms). */
  firstCreatedAt: number;
  /** Per Frontend, Bind and Server: from its parent's deploy finishing to its own create (the reconciler's reaction). */
  reactionsMs: number[];
  /**
   * The two parts of each reaction whose parent's settled deploy a GET answered (simulator's deploySeenAt): *notice*,
   * from the deploy's end to that GET (the readiness poll's overshoot), and *handoff*, from that GET to the child's
   * create (reporting the parent ready and getting the child's create going).
   */
  noticesMs: number[];
  handoffsMs: number[];
}

const link = (o: AdminObject, field: string) => String(o.fields[field] ?? '');

export function loadBalancerBound(objects: readonly AdminObject[], loadBalancer: string, latencyMs: number): LoadBalancerBound {
  const of = (kind: string) => objects.filter((o) => o.kind === kind);
  const backends = of('backend').filter((o) => link(o, 'load_balancer') === loadBalancer);
  const frontends = of('frontend');
  const binds = of('bind');
  const servers = of('server');
  const d = (o: AdminObject) => o.deployMs ?? 0;
  let best = { ms: 0, deploy: 0, levels: 0 };
  let count = 0;
  let lastDeployedAt = 0;
  let lastNoticeMs = NaN;
  let firstCreatedAt = Infinity;
  const reactionsMs: number[] = [];
  const noticesMs: number[] = [];
  const handoffsMs: number[] = [];
  const react = (child: AdminObject, parent: AdminObject) => {
    if (parent.deployedAt === null) return;
    reactionsMs.push(Date.parse(child.createdAt) - Date.parse(parent.deployedAt));
    if (parent.deploySeenAt === null) return;
    noticesMs.push(Date.parse(parent.deploySeenAt) - Date.parse(parent.deployedAt));
    handoffsMs.push(Date.parse(child.createdAt) - Date.parse(parent.deploySeenAt));
  };
  const seen = (o: AdminObject) => {
    count++;
    if (o.deployedAt === null) throw new Error(`${o.kind} ${o.name} has not finished deploying: the run did not converge`);
    const at = Date.parse(o.deployedAt);
    if (at < lastDeployedAt) return;
    lastDeployedAt = at;
    lastNoticeMs = o.deploySeenAt === null ? NaN : Date.parse(o.deploySeenAt) - at;
  };
  for (const b of backends) {
    seen(b);
    firstCreatedAt = Math.min(firstCreatedAt, Date.parse(b.createdAt));
    const chains: { ms: number; deploy: number; levels: number }[] = [{ ms: 0, deploy: 0, levels: 0 }];
    for (const f of frontends.filter((x) => link(x, 'default_backend') === b.identifier)) {
      seen(f);
      react(f, b);
      let tail = { ms: 0, deploy: 0, levels: 0 };
      for (const bi of binds.filter((x) => link(x, 'frontend') === f.identifier)) {
        seen(bi);
        react(bi, f);
        if (d(bi) + latencyMs > tail.ms) tail = { ms: d(bi) + latencyMs, deploy: d(bi), levels: 1 };
      }
      chains.push({ ms: d(f) + latencyMs + tail.ms, deploy: d(f) + tail.deploy, levels: 1 + tail.levels });
    }
    for (const s of servers.filter((x) => link(x, 'backend') === b.identifier)) {
      seen(s);
      react(s, b);
      chains.push({ ms: d(s) + latencyMs, deploy: d(s), levels: 1 });
    }
    const longest = chains.reduce((a, c) => (c.ms > a.ms ? c : a));
    const chain = { ms: d(b) + latencyMs + longest.ms, deploy: d(b) + longest.deploy, levels: 1 + longest.levels };
    if (chain.ms > best.ms) best = chain;
  }
  return { loadBalancer, deployChainMs: best.deploy, boundMs: best.ms, levels: best.levels, objects: count, lastDeployedAt, lastNoticeMs, firstCreatedAt, reactionsMs, noticesMs, handoffsMs };
}
