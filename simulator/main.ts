/**
 * Stand-alone entry of the simulator: `node dist/simulator/main.js [sim flags]`, the same flags as `lbaas sim`
 * without needing the rest of the CLI (used by the benchmark and tests to run it in its own process).
 */
import { Command, CommanderError } from 'commander';
import { addSimCommand } from './command';

export async function main(argv: string[]): Promise<number> {
  const program = new Command('lbaas-sim').exitOverride();
  addSimCommand(program);
  const args = argv.slice(2);
  if (args[0] !== 'sim') args.unshift('sim');
  try {
    await program.parseAsync(args, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    process.stderr.write(`lbaas sim: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

if (require.main === module) {
  main(process.argv).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`lbaas sim: ${String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
