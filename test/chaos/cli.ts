/**
 * `npm run chaos`: the chaos run of run.ts from the command line, once per simulator profile (ideal, then realistic),
 * printing each report; exits non-zero when an invariant broke in either.
 */
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parseDuration } from '../../domain';
import { DEFAULT_OPTIONS, type ChaosReport } from './options';
import { formatReport } from './report';
import { abortChaos, runChaos } from './run';

function durationArg(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const ms = /^\d+$/.test(value) ? Number(value) * 1000 : parseDuration(value);
  if (ms === null || ms <= 0) throw new Error(`--${name}: expected seconds or a duration like 90s or 2m, got "${value}"`);
  return ms;
}

function intArg(name: string, value: string | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name}: expected an integer >= ${min}, got "${value}"`);
  return n;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      services: { type: 'string' },
      seed: { type: 'string' },
      duration: { type: 'string' },
      kills: { type: 'string' },
      workers: { type: 'string' },
      changed: { type: 'string' },
      'converge-timeout': { type: 'string' },
      'no-restart': { type: 'boolean' },
      'no-shared-suffix': { type: 'boolean' },
      'fresh-foreign': { type: 'boolean' },
      keep: { type: 'boolean' },
      json: { type: 'string' },
      profile: { type: 'string' },
      'rate-limit': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(
      'usage: npm run chaos -- [--services 12] [--seed S] [--duration 120s] [--kills 6] [--workers 2] [--changed 4]\n' +
        '                        [--converge-timeout 10m] [--no-restart] [--no-shared-suffix] [--fresh-foreign] [--keep] [--json FILE]\n' +
        '                        [--profile ideal|realistic|both] [--rate-limit 20]\n' +
        'Runs the chaos phase on the ideal simulator profile, then on the realistic one (default both); each phase must hold every invariant.\n',
    );
    return 0;
  }
  const profiles = values.profile === undefined || values.profile === 'both' ? (['ideal', 'realistic'] as const) : [values.profile];
  for (const p of profiles) if (p !== 'ideal' && p !== 'realistic') throw new Error(`--profile: expected ideal, realistic or both, got "${p}"`);
  const services = intArg('services', values.services, DEFAULT_OPTIONS.services, 1);
  const options = {
    services,
    seed: intArg('seed', values.seed, Math.floor(Math.random() * 1_000_000), 0),
    durationMs: durationArg('duration', values.duration, DEFAULT_OPTIONS.durationMs),
    kills: intArg('kills', values.kills, DEFAULT_OPTIONS.kills, 0),
    workers: intArg('workers', values.workers, DEFAULT_OPTIONS.workers, 1),
    changed: intArg('changed', values.changed, Math.ceil(services / 3), 0),
    convergeTimeoutMs: durationArg('converge-timeout', values['converge-timeout'], DEFAULT_OPTIONS.convergeTimeoutMs),
    serverRestart: !values['no-restart'],
    sharedSuffix: !values['no-shared-suffix'],
    freshForeign: values['fresh-foreign'] ?? false,
    keep: values.keep ?? false,
    rateLimit: { rps: intArg('rate-limit', values['rate-limit'], DEFAULT_OPTIONS.rateLimit.rps, 1), burst: DEFAULT_OPTIONS.rateLimit.burst },
    progress: (line: string) => process.stderr.write(`${line}\n`),
  };
  const reports: ChaosReport[] = [];
  for (const profile of profiles as readonly ('ideal' | 'realistic')[]) {
    const report = await runChaos({ ...options, profile });
    reports.push(report);
    process.stdout.write(`${formatReport(report)}\n\n`);
  }
  if (values.json) await writeFile(values.json, JSON.stringify(reports, null, 2));
  return reports.every((r) => r.ok) ? 0 : 1;
}

if (require.main === module) {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`chaos: ${signal}: stopping workers, the Temporal server and the simulator\n`);
      void (abortChaos() ?? Promise.resolve()).finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    });
  }
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      process.stderr.write(`chaos: ${(err as Error).stack ?? String(err)}\n`);
      process.exitCode = 2;
    },
  );
}
