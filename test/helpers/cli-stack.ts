/**
 * The setup the CLI test files (test/cli) share: one stack for the whole file (stack.ts startStack: the file's dev
 * server and namespace, a worker on a task queue of its own, the simulator), the environment a CLI run gets for it
 * (cli.ts cliEnv: Temporal settings and the task queue, never an Engine token), and a temporary directory for spec
 * files; all stopped or removed after the file's last test.
 *
 * Two ways to run `lbaas`: `proc` starts `node bin/lbaas.js` as a process, for what only a process shows (stdin, the
 * exit code and streams of a real process); `cli` runs the same main in the test's own process (cli.ts
 * runInProcess), which saves the second of CPU a process takes to start where the command's behaviour, not the
 * process, is under test.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { LbaasClient } from '../../client/service-client';
import { cliEnv, runCli, runInProcess, type CliRun } from './cli';
import { startStack, stopTemporalServer, temporalServer, type Stack } from './stack';

export interface CliStack {
  readonly stack: Stack;
  /** The client library on the stack's task queue. */
  readonly lbaas: LbaasClient;
  /** The environment of a CLI run against the stack. */
  readonly env: NodeJS.ProcessEnv;
  /** The file's temporary directory. */
  readonly dir: string;
  /** `lbaas <args>` as a process, `input` on its stdin. */
  proc(args: readonly string[], input?: string | Uint8Array): Promise<CliRun>;
  /** `lbaas <args>` in this process. */
  cli(args: readonly string[]): Promise<CliRun>;
  /** Writes `content` (a string as is, anything else as JSON) to `name` in the file's directory; resolves to its path. */
  file(name: string, content: unknown): Promise<string>;
}

/**
 * Registers the file's `before` and `after`; the fields are there once `before` has run. `hooks.setup` runs in that
 * same `before`, after the stack has started; `hooks.teardown` in the `after`, before the stack stops.
 */
export function cliStack(
  name: string,
  opts: Parameters<typeof startStack>[0] = {},
  hooks: { setup?: (s: CliStack) => Promise<void>; teardown?: (s: CliStack) => Promise<void> } = {},
): CliStack {
  let parts: { stack: Stack; lbaas: LbaasClient; env: NodeJS.ProcessEnv; dir: string } | null = null;
  const get = () => {
    if (!parts) throw new Error('cliStack: used before its before() hook ran');
    return parts;
  };
  const s: CliStack = {
    get stack() {
      return get().stack;
    },
    get lbaas() {
      return get().lbaas;
    },
    get env() {
      return get().env;
    },
    get dir() {
      return get().dir;
    },
    proc: (args, input) => runCli(args, { env: get().env, ...(input !== undefined ? { input } : {}) }),
    cli: (args) => runInProcess(args, get().env),
    async file(fileName, content) {
      const p = path.join(get().dir, fileName);
      await writeFile(p, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
      return p;
    },
  };
  let stack: Stack | undefined;
  let dir: string | undefined;
  before(async () => {
    stack = await startStack(opts);
    const srv = await temporalServer();
    dir = await mkdtemp(path.join(os.tmpdir(), `lbaas-cli-${name}-`));
    parts = { stack, lbaas: new LbaasClient(stack.client, stack.taskQueue), env: cliEnv({ address: srv.address, namespace: stack.namespace, taskQueue: stack.taskQueue }), dir };
    await hooks.setup?.(s);
  });
  after(async () => {
    if (parts) await hooks.teardown?.(s);
    await stack?.stop();
    await stopTemporalServer();
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  return s;
}
