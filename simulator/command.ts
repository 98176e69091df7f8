/**
 * `lbaas sim`: runs the Engine simulator until SIGINT/SIGTERM. Prints exactly one line on stdout when ready,
 * `engine simulator listening on http://127.0.0.1:<port>`; request logs go to stderr unless --quiet.
 * Bad flag values are usage errors (exit code 2) naming the flag.
 */
import { type Command, Option } from 'commander';
import { type MsRange, PROFILES, type Profile, seedDemo, type SimulatorOptions, startSimulator } from './index';

export interface SimFlags {
  port: string;
  host: string;
  token: string;
  deployMs: string;
  /** Left out: the profile's default (0 ideal, 2000-5000 realistic). */
  deleteMs?: string;
  profile: string;
  seed?: string;
  state?: string;
  seedDemo?: boolean;
  quiet?: boolean;
}

export class FlagError extends Error {
  constructor(
    readonly flag: string,
    message: string,
  ) {
    super(`${flag}: ${message}`);
  }
}

const MAX_MS = 3_600_000;

/** `MIN-MAX` or a single `N` (milliseconds). */
export function parseMsRange(flag: string, text: string): MsRange {
  const m = /^\s*(\d{1,7})\s*(?:-\s*(\d{1,7})\s*)?$/.exec(text);
  if (!m) throw new FlagError(flag, `'${text}' is not a delay in milliseconds (expected MIN-MAX or N, e.g. 500-1500)`);
  const min = Number(m[1]);
  const max = m[2] === undefined ? min : Number(m[2]);
  if (max < min) throw new FlagError(flag, `'${text}': MIN must not exceed MAX`);
  if (max > MAX_MS) throw new FlagError(flag, `'${text}': at most ${MAX_MS} ms`);
  return { min, max };
}

export function parsePort(flag: string, text: string): number {
  if (!/^\s*\d{1,5}\s*$/.test(text) || Number(text) > 65535) {
    throw new FlagError(flag, `'${text}' is not a port number (0-65535; 0 picks a free port)`);
  }
  return Number(text);
}

export function parseSeed(flag: string, text: string): number {
  const n = Number(text);
  if (!/^\s*-?\d+\s*$/.test(text) || !Number.isSafeInteger(n)) throw new FlagError(flag, `'${text}' is not an integer`);
  return n;
}

/** Turns the flags into simulator options (without `log`); throws FlagError naming the flag. */
export function simOptionsFromFlags(flags: SimFlags, sourceOf: (key: string) => string | undefined = () => undefined): SimulatorOptions {
  const name = (flag: string, key: string, env: string): string => (sourceOf(key) === 'env' ? `${flag} (from ${env})` : flag);
  if (flags.host.trim() === '') throw new FlagError('--host', 'must not be empty');
  if (flags.token === '') throw new FlagError(name('--token', 'token', 'LBAAS_SIM_TOKEN'), 'must not be empty');
  if (/\s/.test(flags.token)) throw new FlagError(name('--token', 'token', 'LBAAS_SIM_TOKEN'), 'must not contain whitespace');
  if (flags.state !== undefined && flags.state.trim() === '') throw new FlagError('--state', 'must name a file');
  if (!(PROFILES as readonly string[]).includes(flags.profile)) {
    throw new FlagError(name('--profile', 'profile', 'LBAAS_SIM_PROFILE'), `'${flags.profile}' is not a profile (${PROFILES.join(' or ')})`);
  }
  return {
    port: parsePort(name('--port', 'port', 'LBAAS_SIM_PORT'), flags.port),
    host: flags.host,
    token: flags.token,
    deployMs: parseMsRange('--deploy-ms', flags.deployMs),
    deleteMs: flags.deleteMs === undefined ? undefined : parseMsRange('--delete-ms', flags.deleteMs),
    profile: flags.profile as Profile,
    seed: flags.seed === undefined ? undefined : parseSeed('--seed', flags.seed),
    stateFile: flags.state,
  };
}

function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const onSignal = (sig: NodeJS.Signals): void => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      // A second signal while shutting down exits at once.
      process.once('SIGINT', () => process.exit(130));
      process.once('SIGTERM', () => process.exit(143));
      resolve(sig);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

async function runSim(flags: SimFlags, cmd: Command): Promise<void> {
  const out = cmd.configureOutput();
  const writeOut = out.writeOut ?? ((s: string) => process.stdout.write(s));
  const writeErr = out.writeErr ?? ((s: string) => process.stderr.write(s));
  let options: SimulatorOptions;
  try {
    options = simOptionsFromFlags(flags, (key) => cmd.getOptionValueSource(key));
  } catch (err) {
    if (err instanceof FlagError) {
      process.exitCode = 2;
      cmd.error(`error: ${err.message}`, { exitCode: 2, code: 'lbaas.sim.invalidFlag' });
    }
    throw err;
  }
  const log = flags.quiet ? undefined : (line: string): void => void writeErr(`sim: ${line}\n`);
  const running = await startSimulator({ ...options, log });
  if (flags.seedDemo) {
    const created = seedDemo(running.sim);
    log?.(created.length ? `seeded demo load balancers ${created.join(', ')}` : 'demo load balancers already exist');
  }
  log?.(`seed ${running.seed}; profile ${options.profile ?? 'ideal'}; deploys take ${options.deployMs?.min ?? 0}-${options.deployMs?.max ?? 0} ms`);
  writeOut(`engine simulator listening on ${running.url}\n`);
  const sig = await waitForSignal();
  log?.(`${sig}: shutting down${options.stateFile ? `, saving ${options.stateFile}` : ''}`);
  await running.close();
}

export function addSimCommand(program: Command): void {
  program
    .command('sim')
    .description('run the Engine simulator: LBaaS v1 and Core v1 (resources, tags), plus the /_sim admin API')
    .addOption(new Option('--port <n>', 'port to listen on (0 picks a free one)').env('LBAAS_SIM_PORT').default('8090'))
    .addOption(new Option('--host <address>', 'address to bind').default('127.0.0.1'))
    .addOption(new Option('--token <token>', 'expected Engine API token (Authorization: Token <token>)').env('LBAAS_SIM_TOKEN').default('dev-token'))
    .addOption(new Option('--deploy-ms <range>', 'how long objects stay NewlyCreated/Updating, MIN-MAX or N').default('500-1500'))
    .addOption(new Option('--delete-ms <range>', 'how long a deleted object stays readable (and listed, realistic), MIN-MAX or N (default: 0; realistic 2000-5000)'))
    .addOption(
      new Option('--profile <name>', "'ideal', or 'realistic': the real Engine's rate limit, listed deletion, tag index lag, tag conflicts, sparse answers")
        .env('LBAAS_SIM_PROFILE')
        .default('ideal'),
    )
    .addOption(new Option('--seed <n>', 'PRNG seed: identifiers, delays and faults are reproducible (default: random)'))
    .addOption(new Option('--state <file>', 'keep objects across restarts in this file (loaded on start, saved on change and exit)'))
    .addOption(new Option('--seed-demo', 'create the demo load balancers demo-lb-1 and demo-lb-2 unless they exist'))
    .addOption(new Option('--quiet', 'no request log on stderr'))
    .action(async (flags: SimFlags, cmd: Command) => runSim(flags, cmd));
}
