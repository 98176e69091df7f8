/**
 * Finds or builds kube-apiserver v1.37.2, the real Kubernetes API server that `npm run test:kube` and `lbaas dev --kube`
 * run (on Debian's etcd). There is no release archive of the bare API server for every platform, and `go install`
 * cannot build k8s.io/kubernetes (its go.mod points its staging modules at ./staging), so the build takes the module
 * from the Go module proxy (`go mod download`), points each staging module at its published v0.37.2 instead, and
 * builds ./cmd/kube-apiserver with the version stamped, as a release build would carry it.
 *
 * Order: KUBE_APISERVER_PATH, the user cache ($LBAAS_CACHE_DIR, $XDG_CACHE_HOME, ~/.cache), then the build. The build
 * runs as every other pinned install does (dev/go-install.ts, dev/install-lock.ts): in a private directory under a
 * lock other runs wait on, checked there, renamed into place, so a half-written binary is never found in the cache.
 */
import { execFile, spawn } from 'node:child_process';
import { cp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { goVersion, INSTALL_DIR_PREFIX, installAtomically, isExecutable, MIN_GO } from '../dev/go-install';
import { withInstallLock } from '../dev/install-lock';
import { cacheDir as cliCacheDir } from '../dev/temporal-path';

const execFileAsync = promisify(execFile);

export const KUBERNETES_VERSION = '1.37.2';
/** The staging modules (k8s.io/api, k8s.io/apiserver, ...) are published as v0.<minor>.<patch>. */
const STAGING_VERSION = `v0.${KUBERNETES_VERSION.split('.').slice(1).join('.')}`;
const MODULE = `k8s.io/kubernetes@v${KUBERNETES_VERSION}`;
const FILE = 'kube-apiserver';
const ENV_VAR = 'KUBE_APISERVER_PATH';

export class KubeApiserverNotFoundError extends Error {
  constructor(readonly tried: string[]) {
    super(
      `could not find or build kube-apiserver v${KUBERNETES_VERSION}. Tried:\n` +
        tried.map((t) => `  - ${t}`).join('\n') +
        `\nFix: install Go >= ${MIN_GO.join('.')} (the Go module proxy must be reachable) and run again, or build it yourself ` +
        `(docs/kubernetes.md#the-api-server-for-tests) and set ${ENV_VAR} to it.`,
    );
    this.name = 'KubeApiserverNotFoundError';
  }
}

/** Where the pinned API server lives: beside the pinned Temporal CLI in the user cache. */
export function kubeCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(cliCacheDir(env), '..', '..', 'kube-apiserver', `v${KUBERNETES_VERSION}`);
}

/** The version `kube-apiserver --version` reports (`Kubernetes v1.37.2`), without the v, or null. */
export async function apiserverVersion(file: string): Promise<string | null> {
  try {
    const { stdout } = await execFileAsync(file, ['--version'], { timeout: 20_000 });
    return /Kubernetes v(\S+)/.exec(stdout)?.[1] ?? null;
  } catch {
    return null;
  }
}

/** go.mod with every `k8s.io/X => ./staging/src/k8s.io/X` replaced by `k8s.io/X => k8s.io/X <staging version>`. */
export function rewriteStagingReplaces(goMod: string, version = STAGING_VERSION): string {
  return goMod.replace(/^(\s*(?:replace\s+)?)(k8s\.io\/[A-Za-z0-9._/-]+)(\s+=>\s+)\.\/staging\/src\/\S+/gm, (_m, lead: string, mod: string, arrow: string) => `${lead}${mod}${arrow}${mod} ${version}`);
}

/** The link flags that make the binary report the pinned version, as Kubernetes' own release build stamps it. */
export function versionLdflags(version = KUBERNETES_VERSION): string {
  const [major, minor] = version.split('.');
  const pkg = 'k8s.io/component-base/version';
  return [`-X ${pkg}.gitVersion=v${version}`, `-X ${pkg}.gitMajor=${major}`, `-X ${pkg}.gitMinor=${minor}`, `-X ${pkg}.gitTreeState=clean`].join(' ');
}

function run(cmd: string, args: string[], o: { cwd?: string; env: NodeJS.ProcessEnv; progress: (l: string) => void; what: string }): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: o.cwd, env: o.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let tail = '';
    const started = Date.now();
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (tail = (tail + c.toString('utf8')).slice(-2000)));
    const ticker = setInterval(() => o.progress(`  still ${o.what} (${Math.round((Date.now() - started) / 1000)} s)`), 30_000);
    child.on('error', (e) => {
      clearInterval(ticker);
      reject(e);
    });
    child.on('close', (code) => {
      clearInterval(ticker);
      if (code === 0) resolve(out);
      else reject(new Error(`${o.what}: exited with code ${code}: ${tail.trim().split('\n').slice(-3).join(' | ')}`));
    });
  });
}

/** Builds the API server inside `tmp` and returns the binary's path there. */
async function build(tmp: string, env: NodeJS.ProcessEnv, progress: (l: string) => void): Promise<string> {
  const gv = await goVersion(env);
  if (!gv) throw new Error('`go` is not on PATH');
  if (gv[0] < MIN_GO[0] || (gv[0] === MIN_GO[0] && gv[1] < MIN_GO[1])) throw new Error(`go${gv.join('.')} is too old, need go${MIN_GO.join('.')} or newer`);
  progress(`building kube-apiserver v${KUBERNETES_VERSION} from the Go module proxy (about 6 minutes on 2 cores the first time)`);
  const started = Date.now();
  const info = JSON.parse(await run('go', ['mod', 'download', '-json', MODULE], { env, progress, what: `downloading ${MODULE}` })) as { Dir?: string; Error?: string };
  if (!info.Dir) throw new Error(`go mod download ${MODULE}: ${info.Error ?? 'no directory'}`);
  const src = path.join(tmp, 'src');
  // The module cache is read-only: build in a writable copy.
  await cp(info.Dir, src, { recursive: true });
  // The copy keeps the cache's read-only modes: go writes go.sum, and the private directory must be removable.
  await run('chmod', ['-R', 'u+w', src], { env, progress, what: 'making the copy writable' });
  const goModPath = path.join(src, 'go.mod');
  await writeFile(goModPath, rewriteStagingReplaces(await readFile(goModPath, 'utf8')));
  const out = path.join(tmp, FILE);
  const buildEnv = { ...env, GOWORK: 'off', GOFLAGS: '-mod=mod', GOSUMDB: 'off' };
  await run('go', ['build', '-ldflags', versionLdflags(), '-o', out, './cmd/kube-apiserver'], { cwd: src, env: buildEnv, progress, what: 'building kube-apiserver' });
  progress(`built kube-apiserver in ${Math.round((Date.now() - started) / 1000)} s`);
  return out;
}

/** Returns the API server's path, building it into the user cache when missing. Throws KubeApiserverNotFoundError. */
export async function ensureKubeApiserver(opts: { env?: NodeJS.ProcessEnv; progress?: (line: string) => void } = {}): Promise<string> {
  const env = opts.env ?? process.env;
  const progress = opts.progress ?? (() => {});
  const explicit = env[ENV_VAR];
  if (explicit) {
    if (!(await isExecutable(explicit))) throw new KubeApiserverNotFoundError([`${ENV_VAR}=${explicit}: not an executable file`]);
    const v = await apiserverVersion(explicit);
    if (v !== KUBERNETES_VERSION) progress(`warning: ${ENV_VAR}=${explicit} reports version ${v ?? 'unknown'}, not ${KUBERNETES_VERSION}`);
    return explicit;
  }
  const dir = kubeCacheDir(env);
  const target = path.join(dir, FILE);
  if ((await apiserverVersion(target)) === KUBERNETES_VERSION) return target;
  try {
    await mkdir(dir, { recursive: true });
  } catch (err) {
    throw new KubeApiserverNotFoundError([`creating the cache directory ${dir}: ${(err as Error).message}`]);
  }
  const tried: string[] = [];
  const onWait = (holder: string) => progress(`waiting for another install of kube-apiserver into ${dir} (${holder})`);
  const found = await withInstallLock(
    path.join(dir, '.install.lock'),
    async () => {
      // A private directory left behind is a crashed install's: only a lock holder makes them.
      for (const name of await readdir(dir)) if (name.startsWith(INSTALL_DIR_PREFIX)) await rm(path.join(dir, name), { recursive: true, force: true });
      if ((await apiserverVersion(target)) === KUBERNETES_VERSION) return target;
      try {
        return await installAtomically({ dir, file: FILE, build: (tmp) => build(tmp, env, progress), versionOf: apiserverVersion, version: KUBERNETES_VERSION });
      } catch (err) {
        tried.push(`${ENV_VAR}: not set; ${target} (user cache): not present; building ${MODULE}: ${(err as Error).message}`);
        return null;
      }
    },
    { onWait },
  );
  if (found === null) throw new KubeApiserverNotFoundError(tried);
  return found;
}
