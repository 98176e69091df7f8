/**
 * The Engine simulator: a local Anexia Engine speaking the LBaaS v1 and Core v1 subset of
 * docs/engine-api.md, plus the `/_sim/` admin API. `startSimulator` runs it in-process.
 */
import { randomInt } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { FaultModel } from './faults';
import { loadState, Persister } from './persist';
import { createServer } from './server';
import { type PatchInput, patchObject, type SeedInput, seedObject } from './fixtures';
import { PROFILES, type Profile } from './manners';
import { Simulator } from './sim';
import type { StatsSnapshot } from './stats';
import { type AdminObject, adminView } from './views';

export type { AdminObject } from './views';
export type { SeedInput, PatchInput } from './fixtures';
export type { FaultModel, FaultInput } from './faults';
export type { Manners, Profile, RateLimit, Sparse } from './manners';
export { PROFILES, REALISTIC, REALISTIC_DELETE_MS } from './manners';
export { deployDraw, deployKey } from './draws';
export type { StatsSnapshot } from './stats';
export { Simulator } from './sim';
export { SimError } from './errors';
export { KIND_SPECS, LOADBALANCER_TYPE_ID, type Kind, type StateTitle } from './model';

export interface MsRange {
  min: number;
  max: number;
}

export interface SimulatorOptions {
  /** Default 8090; 0 picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Engine API token expected as `Authorization: Token <token>`. Default 'dev-token'; '' disables the check. */
  token?: string;
  /** How long objects stay NewlyCreated/Updating. Default 500-1500 ms. */
  deployMs?: MsRange;
  /** How long a deleted object stays readable (and listed, in the realistic profile). Default 0; realistic 2000-5000. */
  deleteMs?: MsRange;
  /**
   * 'ideal' (default): the kind Engine of docs/engine-api.md. 'realistic': the real Engine's manners, all on
   * (manners.ts, simulator/README.md): rate limit, listed asynchronous deletion, tag index lag, overlapping tag
   * requests failing, sparse answers. Reset returns to this profile.
   */
  profile?: Profile;
  /** Seed of every PRNG stream (identifiers, delays, faults). Default: random. */
  seed?: number;
  /** Loaded on start when it exists; saved (throttled, atomic) on changes and on close. */
  stateFile?: string;
  /** Receives one line per request and per settled deploy. Default: silent. */
  log?: (line: string) => void;
}

export interface RunningSimulator {
  /** `http://127.0.0.1:<port>` (or the bound host when it is a specific address). */
  url: string;
  port: number;
  /** The seed in use (the given one or the random one drawn). */
  seed: number;
  /** In-process access to everything the admin API offers. */
  sim: Simulator;
  stats(): StatsSnapshot;
  resetStats(): void;
  /** Like `POST /_sim/reset`. */
  reset(): void;
  /** Like `PUT /_sim/faults`; throws a ZodError on bad input. */
  setFaults(input: unknown): FaultModel;
  /** Like `POST /_sim/objects`; returns the identifier. */
  seedObject(input: SeedInput): string;
  /** Like `PATCH /_sim/objects/<id>`. */
  patchObject(id: string, input: PatchInput): AdminObject;
  objects(): AdminObject[];
  /** Saves the state file now (no-op without one). */
  save(): Promise<void>;
  /** Stops listening, drops connections, cancels timers and saves the state file. */
  close(): Promise<void>;
}

/** The demo load balancers `lbaas sim --seed-demo` creates (fixed identifiers, state Deployed). */
export const DEMO_LOAD_BALANCERS = [
  { identifier: '6f0c3d2e9a8b4c7d8e9f0a1b2c3d4e5f', name: 'demo-lb-1', ip_address: '198.51.100.1' },
  { identifier: '7a1d4e3f0b9c5d8e9f0a1b2c3d4e5f60', name: 'demo-lb-2', ip_address: '198.51.100.2' },
] as const;

/** Creates the demo load balancers unless they exist. Returns the identifiers created. */
export function seedDemo(sim: Simulator): string[] {
  const created: string[] = [];
  for (const lb of DEMO_LOAD_BALANCERS) {
    if (sim.store.get(lb.identifier)) continue;
    seedObject(sim, { kind: 'loadbalancer', identifier: lb.identifier, state: 'Deployed', fields: { name: lb.name, ip_address: lb.ip_address } });
    created.push(lb.identifier);
  }
  return created;
}

function checkRange(name: string, r: MsRange | undefined, def: MsRange): MsRange {
  const v = r ?? def;
  if (!Number.isInteger(v.min) || !Number.isInteger(v.max) || v.min < 0 || v.max < v.min) {
    throw new Error(`${name} must be integers with 0 <= min <= max (got ${JSON.stringify(v)})`);
  }
  return { min: v.min, max: v.max };
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

export async function startSimulator(opts: SimulatorOptions = {}): Promise<RunningSimulator> {
  const host = opts.host ?? '127.0.0.1';
  const port = opts.port ?? 8090;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`port must be 0-65535 (got ${port})`);
  const seed = opts.seed ?? randomInt(0, 2 ** 31);
  const profile = opts.profile ?? 'ideal';
  if (!PROFILES.includes(profile)) throw new Error(`profile must be one of ${PROFILES.join(', ')} (got ${JSON.stringify(profile)})`);
  const sim = new Simulator({
    seed,
    profile,
    deployMs: checkRange('deployMs', opts.deployMs, { min: 500, max: 1500 }),
    deleteMs: opts.deleteMs === undefined ? undefined : checkRange('deleteMs', opts.deleteMs, { min: 0, max: 0 }),
    log: opts.log,
  });

  let persister: Persister | null = null;
  if (opts.stateFile) {
    if (loadState(sim, opts.stateFile)) opts.log?.(`loaded ${sim.store.byId.size} objects from ${opts.stateFile}`);
    const p = new Persister(sim, opts.stateFile);
    sim.onChange = () => p.changed();
    persister = p;
  }

  const server = createServer(sim, { token: opts.token ?? 'dev-token' });
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      sim.cancelAll();
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(`cannot listen on ${host}:${port}: the port is already in use`)
          : new Error(`cannot listen on ${host}:${port}: ${err.message}`),
      );
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const actual = (server.address() as AddressInfo).port;

  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      sim.cancelAll();
      await persister?.close();
    })();
    return closing;
  };

  return {
    url: `http://${urlHost(host)}:${actual}`,
    port: actual,
    seed,
    sim,
    stats: () => sim.stats.snapshot(),
    resetStats: () => sim.stats.reset(),
    reset: () => sim.reset(),
    setFaults: (input) => sim.setFaults(input),
    seedObject: (input) => seedObject(sim, input).identifier,
    patchObject: (id, input) => adminView(patchObject(sim, id, input)),
    objects: () => sim.objects(),
    save: () => persister?.save() ?? Promise.resolve(),
    close,
  };
}
