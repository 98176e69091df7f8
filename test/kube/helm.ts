/**
 * Finds or builds Helm v3.22.0 for the chart test (test/kube/chart.test.ts): HELM_PATH, the user cache
 * ($LBAAS_CACHE_DIR, $XDG_CACHE_HOME, ~/.cache, beside kube-apiserver), then `go install` from the Go module proxy, as
 * every other pinned binary here is installed (dev/go-install.ts, dev/install-lock.ts): under a lock other runs wait
 * on, in a private directory, checked, then renamed into place. The link flags are the ones Helm's own Makefile sets,
 * so the binary reports v3.22.0 and assumes the Kubernetes version of its client libraries (1.37), not 1.20.
 */
import { execFile } from 'node:child_process';
import { mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { goInstall, INSTALL_DIR_PREFIX, installAtomically, isExecutable, MIN_GO } from '../../dev/go-install';
import { withInstallLock } from '../../dev/install-lock';
import { cacheDir as cliCacheDir } from '../../dev/temporal-path';

const execFileAsync = promisify(execFile);

export const HELM_VERSION = '3.22.0';
const MODULE = `helm.sh/helm/v3/cmd/helm@v${HELM_VERSION}`;
const ENV_VAR = 'HELM_PATH';
/** Helm v3.22.0 is built against k8s.io/client-go v0.37: its Makefile stamps Kubernetes 1.37 as the default. */
const K8S = { major: '1', minor: '37' };

export class HelmNotFoundError extends Error {
  constructor(readonly tried: string[]) {
    super(
      `could not find or build Helm v${HELM_VERSION}. Tried:\n` +
        tried.map((t) => `  - ${t}`).join('\n') +
        `\nFix: install Go >= ${MIN_GO.join('.')} (the Go module proxy must be reachable) and run again, or install Helm ` +
        `v${HELM_VERSION} yourself and set ${ENV_VAR} to it.`,
    );
    this.name = 'HelmNotFoundError';
  }
}

/** Where the pinned Helm lives in the user cache. */
export function helmCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(cliCacheDir(env), '..', '..', 'helm', `v${HELM_VERSION}`);
}

/** The version `helm version --short` reports (`v3.22.0+g…`), without the v and build metadata, or null. */
export async function helmVersion(file: string): Promise<string | null> {
  try {
    const { stdout } = await execFileAsync(file, ['version', '--short'], { timeout: 20_000, env: { ...process.env, HELM_CONFIG_HOME: '/nonexistent' } });
    return /^v(\d+\.\d+\.\d+)/.exec(stdout.trim())?.[1] ?? null;
  } catch {
    return null;
  }
}

function ldflags(): string {
  const flags = ['-s', '-w', `-X helm.sh/helm/v3/internal/version.version=v${HELM_VERSION}`];
  for (const pkg of ['helm.sh/helm/v3/pkg/lint/rules', 'helm.sh/helm/v3/pkg/chartutil']) {
    flags.push(`-X ${pkg}.k8sVersionMajor=${K8S.major}`, `-X ${pkg}.k8sVersionMinor=${K8S.minor}`);
  }
  return flags.join(' ');
}

/** Returns Helm's path, building it into the user cache when missing. Throws HelmNotFoundError. */
export async function ensureHelm(opts: { env?: NodeJS.ProcessEnv; progress?: (line: string) => void } = {}): Promise<string> {
  const env = opts.env ?? process.env;
  const progress = opts.progress ?? (() => {});
  const explicit = env[ENV_VAR];
  if (explicit) {
    if (!(await isExecutable(explicit))) throw new HelmNotFoundError([`${ENV_VAR}=${explicit}: not an executable file`]);
    const v = await helmVersion(explicit);
    if (v !== HELM_VERSION) progress(`warning: ${ENV_VAR}=${explicit} reports version ${v ?? 'unknown'}, not ${HELM_VERSION}`);
    return explicit;
  }
  const dir = helmCacheDir(env);
  const target = path.join(dir, 'helm');
  if ((await helmVersion(target)) === HELM_VERSION) return target;
  try {
    await mkdir(dir, { recursive: true });
  } catch (err) {
    throw new HelmNotFoundError([`creating the cache directory ${dir}: ${(err as Error).message}`]);
  }
  const tried: string[] = [];
  const found = await withInstallLock(
    path.join(dir, '.install.lock'),
    async () => {
      for (const name of await readdir(dir)) if (name.startsWith(INSTALL_DIR_PREFIX)) await rm(path.join(dir, name), { recursive: true, force: true });
      if ((await helmVersion(target)) === HELM_VERSION) return target;
      try {
        return await installAtomically({
          dir,
          file: 'helm',
          build: async (tmp) => {
            await goInstall({
              module: MODULE,
              dir: tmp,
              what: 'helm',
              env: { ...env, CGO_ENABLED: '0' },
              progress,
              flags: ['-ldflags', ldflags()],
              expect: 'about 4 minutes on 2 cores the first time',
            });
            return path.join(tmp, 'helm');
          },
          versionOf: helmVersion,
          version: HELM_VERSION,
        });
      } catch (err) {
        tried.push(`${ENV_VAR}: not set; ${target} (user cache): not present; building ${MODULE}: ${(err as Error).message}`);
        return null;
      }
    },
    { onWait: (holder) => progress(`waiting for another install of Helm into ${dir} (${holder})`) },
  );
  if (found === null) throw new HelmNotFoundError(tried);
  return found;
}
