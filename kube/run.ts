/**
 * One running `lbaas kube`: the informers, then leader election, then the controller acting while it leads. Shared by
 * the `lbaas kube` command and `lbaas dev --kube`.
 */
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import type { LbaasClient } from '../client/service-client';
import type { KubeTarget } from './client';
import { KubeController } from './controller';
import { DEFAULT_LEASE, LeaderElector } from './lease';
import type { KubeSettings } from './mapping';
import type { KubeHealth } from './health';

export interface KubeRunOptions {
  target: KubeTarget;
  lbaas: LbaasClient;
  settings: KubeSettings;
  lease: { namespace: string; name: string; durationMs: number };
  log: (line: string) => void;
  env?: NodeJS.ProcessEnv;
  /** What /healthz, /readyz and /metrics read (kube/health.ts), when they are served. */
  health?: KubeHealth;
}

export interface RunningKube {
  identity: string;
  /** Resolves once stop() has released the Lease and stopped the informers. */
  done: Promise<void>;
  stop(): void;
}

export async function startKube(o: KubeRunOptions): Promise<RunningKube> {
  const env = o.env ?? process.env;
  const identity = `${env.POD_NAME || os.hostname()}_${process.pid}_${randomBytes(3).toString('hex')}`;
  const controller = new KubeController(o.target, o.lbaas, o.settings, identity, o.log);
  if (o.health) o.health.controller = controller;
  const { durationMs } = o.lease;
  const elector = new LeaderElector(o.target, {
    namespace: o.lease.namespace,
    name: o.lease.name,
    identity,
    durationMs,
    // The proportions of Kubernetes' own controllers (15 s, 10 s, 2 s).
    renewDeadlineMs: Math.round((durationMs * DEFAULT_LEASE.renewDeadlineMs) / DEFAULT_LEASE.durationMs),
    retryMs: Math.max(500, Math.round((durationMs * DEFAULT_LEASE.retryMs) / DEFAULT_LEASE.durationMs)),
    log: o.log,
  });
  await controller.start();
  o.log(`watching Services and Nodes; waiting for the lease ${o.lease.namespace}/${o.lease.name} (identity ${identity})`);
  const done = elector
    .run(
      () => controller.startLeading(),
      () => controller.stopLeading(),
    )
    .finally(() => controller.stop());
  done.catch((err: unknown) => o.health && (o.health.failed = (err as Error).message ?? String(err)));
  return { identity, done, stop: () => elector.stop() };
}
