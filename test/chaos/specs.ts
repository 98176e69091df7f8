/**
 * What a chaos run applies and what it plants beforehand: seeded service specs on two load balancers (and the changed
 * revisions some of them get mid-run), and foreign objects that the run must never touch.
 */
import { Prng } from '../../simulator/prng';
import type { AdminObject } from '../../simulator';
import { validateSpec } from '../../domain';
import type { ValidatedSpec } from '../../domain/types';

/** Readiness fast enough for 50-400 ms deploys, patient enough (100 attempts) to outlast every injected fault. */
const READINESS = { initialInterval: '200ms', backoffCoefficient: 1.5, maximumInterval: '2s', maximumAttempts: 100 };

export interface ChaosService {
  uid: string;
  /** Specs in the order applied; the last is the one that must hold at the end. */
  revisions: Record<string, unknown>[];
}

export const serviceUid = (seed: number, i: number) => `chaos-${seed}-${i}`;

/**
 * Service `i` of a run. Load balancers rotate A, B, A+B; addresses, ports and servers vary with the seed; the
 * failed-resources policy alternates. With `sharedSuffix`, service 2 uses service 0's name suffix and port names on
 * load balancer A: two services whose objects have identical names, told apart by their tags only.
 */
export function serviceSpec(seed: number, i: number, lbs: readonly [string, string], opts: { sharedSuffix: boolean }): Record<string, unknown> {
  const prng = new Prng(seed, 100 + i);
  const [a, b] = lbs;
  const loadBalancers = i % 3 === 0 ? [a] : i % 3 === 1 ? [b] : [a, b];
  const externalAddresses = [`203.0.113.${(i % 250) + 1}`];
  if (i % 2 === 0) externalAddresses.push(`2001:db8::${(i + 1).toString(16)}`);
  const ports: Record<string, { external: number; internal: number }> = { http: { external: 80, internal: 30000 + i } };
  if (prng.chance(0.5)) ports.https = { external: 443, internal: 31000 + i };
  const servers = Array.from({ length: prng.int(1, 3) }, (_, k) => ({ name: `node-${k + 1}`, address: `10.${i % 250}.0.${k + 1}` }));
  const shared = opts.sharedSuffix && i === 2;
  return {
    serviceUid: serviceUid(seed, i),
    nameSuffix: shared ? 'svc-0.chaos' : `svc-${i}.chaos`,
    loadBalancers,
    externalAddresses,
    ports,
    servers,
    readiness: READINESS,
    failedResources: i % 2 === 0 ? 'recover' : 'recreate',
  };
}

/**
 * The revision a service gets mid-run, by variant: move to the other load balancer(s) (the old ones are cleaned
 * up), renumber and add ports, or replace the servers. Each changes names or fields of existing objects.
 */
export function changedSpec(raw: Record<string, unknown>, variant: number, lbs: readonly [string, string]): Record<string, unknown> {
  const [a, b] = lbs;
  switch (variant % 3) {
    case 0: {
      const current = raw.loadBalancers as string[];
      const moved = current.length === 2 ? [a] : current[0] === a ? [b] : [a, b];
      return { ...raw, loadBalancers: moved };
    }
    case 1:
      return { ...raw, ports: { http: { external: 8080, internal: 32080 }, admin: { external: 9000, internal: 32090 } } };
    default:
      return { ...raw, servers: [{ name: 'node-9', address: '10.250.9.9' }] };
  }
}

export function validated(raw: Record<string, unknown>): ValidatedSpec {
  const r = validateSpec(raw);
  if (!r.ok) throw new Error(`chaos spec ${String(raw.serviceUid)} is invalid: ${JSON.stringify(r.issues)}`);
  return r.spec;
}

/** What seeding foreign objects needs from the simulator (in-process or over the admin API). */
export interface Seeder {
  seed(input: { kind: string; fields: Record<string, unknown>; state: string; tags?: string[] }): Promise<string>;
}

const HEALTH = '"adv_check": "tcp-check"';

/**
 * Objects that exist before the run and are not the run's: on each load balancer, untagged look-alikes with the exact
 * names and fields the first services will create (one Frontend in DeploymentError, which a reconciler must not
 * recover), and objects tagged for a service uid that is not in the run, also with the run's names. Returns the uid
 * of that outside service.
 */
export async function seedForeign(seeder: Seeder, seed: number, lbs: readonly [string, string], specs: readonly Record<string, unknown>[]): Promise<string> {
  const outsider = `chaos-${seed}-outsider`;
  const onLb = (lb: string) => specs.filter((s) => (s.loadBalancers as string[]).includes(lb));
  for (const lb of lbs) {
    const [first, second] = onLb(lb);
    if (first) await lookAlike(seeder, lb, first, []);
    if (second) await lookAlike(seeder, lb, second, [`anxccm-svc-uid=${outsider}`]);
  }
  return outsider;
}

async function lookAlike(seeder: Seeder, lb: string, raw: Record<string, unknown>, tags: string[]): Promise<void> {
  const suffix = String(raw.nameSuffix);
  const n = (...parts: string[]) => [...parts, suffix].filter((p) => p !== '').join('.');
  const ports = raw.ports as Record<string, { external: number; internal: number }>;
  const [port, numbers] = Object.entries(ports)[0] as [string, { external: number; internal: number }];
  const address = (raw.externalAddresses as string[])[0] as string;
  const server = (raw.servers as { name: string; address: string }[])[0] as { name: string; address: string };
  const be = await seeder.seed({ kind: 'backend', fields: { name: n(port), mode: 'tcp', health_check: HEALTH, load_balancer: lb }, state: 'Deployed', tags });
  const fe = await seeder.seed({
    kind: 'frontend',
    fields: { name: n(port), mode: 'tcp', load_balancer: lb, default_backend: be },
    state: tags.length === 0 ? 'DeploymentError' : 'Deployed',
    tags,
  });
  await seeder.seed({ kind: 'bind', fields: { name: n('v4', port), address, port: numbers.external, ssl: false, frontend: fe }, state: 'Deployed', tags });
  await seeder.seed({ kind: 'server', fields: { name: n(server.name, port), ip: server.address, port: numbers.internal, check: 'enabled', backend: be }, state: 'Deployed', tags });
  // A stray the service never declared, under the look-alike Backend, in a failed state.
  await seeder.seed({ kind: 'server', fields: { name: n('stray', port), ip: '10.255.255.1', port: 1, check: 'disabled', backend: be }, state: 'DeploymentError', tags });
}

export type ForeignSnapshot = Record<string, AdminObject>;
