/**
 * The build the upgrade test starts from: a commit of this repository checked out in a git worktree of its own and
 * built there, as a release an operator runs today would be.
 *
 * Which commit: the test's first argument (`npm run test:upgrade -- <commit or tag>`), else LBAAS_UPGRADE_FROM, else
 * PREVIOUS_RELEASE, the release whose entity loops workflows/legacy/ keeps. The first versioned commit is the oldest
 * one that put `workerDeploymentOptions` into worker/main.ts (`git log -S`). Earlier commits run unversioned workers, which an
 * upgrade to a versioned build must drain first (docs/operations.md#from-a-release-without-worker-versioning): the
 * second scenario starts from the last of them (LBAAS_UPGRADE_FROM_UNVERSIONED, else the first versioned commit's
 * parent).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../helpers/cli';

const run = promisify(execFile);

async function git(args: readonly string[], cwd = REPO_ROOT): Promise<string> {
  const { stdout } = await run('git', args, { cwd, maxBuffer: 16 * 2 ** 20 });
  return stdout.trim();
}

export interface PreviousBuild {
  /** The commit it was built from, and how it was named. */
  commit: string;
  named: string;
  dir: string;
  /** Its `bin/lbaas.js`. */
  bin: string;
  /** Removes the worktree (and its build). */
  remove(): Promise<void>;
}

/**
 * The release before entities were PINNED: its serviceController and serverPool loops are workflows/legacy/, and
 * its AUTO_UPGRADE runs are what this build must take over (docs/architecture.md, "Versions and patches").
 */
export const PREVIOUS_RELEASE = '88e5a3a';

/** The commit to upgrade from, resolved as the file comment says; throws naming what was tried when none is found. */
export async function upgradeFrom(argv: readonly string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): Promise<{ commit: string; named: string; explicit: boolean }> {
  const given = argv.find((a) => !a.startsWith('-')) ?? env.LBAAS_UPGRADE_FROM;
  if (given) {
    const commit = await git(['rev-parse', '--verify', `${given}^{commit}`]).catch(() => {
      throw new Error(`LBAAS_UPGRADE_FROM / argument: ${given} is not a commit of this repository`);
    });
    return { commit, named: given, explicit: true };
  }
  const commit = await git(['rev-parse', '--verify', `${PREVIOUS_RELEASE}^{commit}`]).catch(() => {
    throw new Error(`the previous release ${PREVIOUS_RELEASE} is not a commit of this checkout (a shallow clone?): fetch it, or name a commit (LBAAS_UPGRADE_FROM)`);
  });
  return { commit, named: `the previous release ${PREVIOUS_RELEASE}`, explicit: false };
}

/** The last commit before Worker Versioning: LBAAS_UPGRADE_FROM_UNVERSIONED, else the first versioned commit's parent. */
export async function lastUnversioned(env: NodeJS.ProcessEnv = process.env): Promise<{ commit: string; named: string }> {
  const given = env.LBAAS_UPGRADE_FROM_UNVERSIONED;
  if (given) {
    const commit = await git(['rev-parse', '--verify', `${given}^{commit}`]).catch(() => {
      throw new Error(`LBAAS_UPGRADE_FROM_UNVERSIONED: ${given} is not a commit of this repository`);
    });
    return { commit, named: given };
  }
  return { commit: await git(['rev-parse', '--verify', `${await firstVersioned()}^`]), named: 'the last unversioned commit' };
}

async function firstVersioned(): Promise<string> {
  const introduced = (await git(['log', '--reverse', '--format=%H', '-S', 'workerDeploymentOptions', 'HEAD', '--', 'worker/main.ts'])).split('\n')[0];
  if (!introduced) throw new Error('no commit to upgrade from: no argument, no LBAAS_UPGRADE_FROM, no tag versioned-base, and no commit put workerDeploymentOptions into worker/main.ts (is this a shallow clone?)');
  return introduced;
}

/**
 * Checks `commit` out into a temporary git worktree and builds it. With the same package-lock.json as this checkout
 * it shares this checkout's node_modules (only `npm run build` runs); otherwise `npm ci` installs its own.
 */
export async function buildPrevious(from: { commit: string; named: string }, progress: (line: string) => void): Promise<PreviousBuild> {
  const dir = path.join(mkdtempSync(path.join(os.tmpdir(), 'lbaas-upgrade-from-')), 'lbaas');
  await git(['worktree', 'add', '--detach', dir, from.commit]);
  const remove = async () => {
    await git(['worktree', 'remove', '--force', dir]).catch(() => rmSync(dir, { recursive: true, force: true }));
    await git(['worktree', 'prune']).catch(() => undefined);
    rmSync(path.dirname(dir), { recursive: true, force: true });
  };
  try {
    const lock = (root: string) => readFileSync(path.join(root, 'package-lock.json'), 'utf8');
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    if (lock(dir) === lock(REPO_ROOT) && existsSync(path.join(REPO_ROOT, 'node_modules'))) {
      progress(`building ${from.commit.slice(0, 12)} (${from.named}) in ${dir} on this checkout's node_modules`);
      symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
      await run(npm, ['run', 'build'], { cwd: dir, maxBuffer: 64 * 2 ** 20 });
    } else {
      progress(`installing and building ${from.commit.slice(0, 12)} (${from.named}) in ${dir} (its package-lock.json differs)`);
      await run(npm, ['ci', '--no-audit', '--no-fund'], { cwd: dir, maxBuffer: 64 * 2 ** 20 });
    }
    return { ...from, dir, bin: path.join(dir, 'bin', 'lbaas.js'), remove };
  } catch (err) {
    await remove();
    throw err;
  }
}
