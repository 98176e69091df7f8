/**
 * `npm run test:image`: the Containerfile builds an image with Debian's buildah (a real multi-stage build: `npm ci`
 * and `npm run build` in the build stage, only production dependencies in the final one), FROM a Node 24 base made on
 * this machine (test/image/buildah.ts); then `lbaas worker` runs from the image's own file system (the container's
 * root mounted read-only, as the chart runs it, chrooted into as the image's user, started by the image's entrypoint)
 * against a Temporal dev server and the Engine simulator, until a service applied with the host's CLI converges.
 * It prints the image's size. The built image and its container are removed afterwards; only the base stays cached.
 *
 * It needs root (chroot, mounts), buildah and debootstrap; without them it is skipped, saying why.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { cliEnv, runCli } from '../helpers/cli';
import { exampleSpec, seedLoadBalancer, taggedLines } from '../helpers/fixtures';
import { startStack, stopTemporalServer, temporalServer, TEST_TOKEN, type Stack } from '../helpers/stack';
import { until } from '../helpers/workflows';
import { buildah, ensureTestBase, run } from './buildah';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const progress = (l: string) => process.stderr.write(`[image] ${l}\n`);

function missing(): string | null {
  if (process.platform !== 'linux') return 'needs Linux';
  if (process.getuid?.() !== 0) return 'needs root (buildah with the vfs driver, chroot and mounts)';
  for (const tool of ['buildah', 'debootstrap', 'chroot', 'mount']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore', env: { PATH: `${process.env.PATH}:/usr/sbin:/sbin` } });
    } catch {
      return `needs ${tool} (Debian: apt-get install buildah debootstrap)`;
    }
  }
  return null;
}

const skip = missing();
const tag = `localhost/lbaas-orchestrator:test-${randomUUID().slice(0, 8)}`;
const cleanups: (() => Promise<unknown>)[] = [];
let stack: Stack | undefined;
let worker: ChildProcess | undefined;

after(async () => {
  if (worker && worker.exitCode === null && worker.signalCode === null) {
    worker.kill('SIGKILL');
    await new Promise((r) => worker!.once('exit', r));
  }
  // In reverse: the mounts inside the root, the root, the container, the image.
  for (const c of cleanups.reverse()) await c().catch((err: Error) => progress(`cleanup: ${err.message}`));
  await stack?.stop();
  await stopTemporalServer();
});

/** Mounts something and registers its unmount. */
async function mount(args: string[], target: string, what: string): Promise<void> {
  await run('mount', [...args, target], { what });
  cleanups.push(() => run('umount', ['-R', target], { what: `unmounting ${target}` }));
}

test('the Containerfile builds an image whose own file system runs lbaas worker as uid 10001, read-only, until a service applied with the CLI converges', { skip: skip ?? false, timeout: 40 * 60_000 }, async () => {
  const started = Date.now();
  const base = await ensureTestBase({ progress });
  progress(`base image ${base.image} ready after ${Math.round((Date.now() - started) / 1000)} s`);

  const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  const buildStarted = Date.now();
  progress(`building ${tag} from the Containerfile (npm ci inside the build: a few minutes)`);
  cleanups.push(() => buildah(['rmi', '--force', tag], { what: `removing ${tag}` }));
  // The build stage's npm cache is kept beside the base: a second run's `npm ci` reads it instead of the registry.
  const npmCache = path.join(path.dirname(base.archive), 'npm-cache');
  await mkdir(npmCache, { recursive: true });
  await buildah(['bud', '--isolation', 'chroot', '--volume', `${npmCache}:/root/.npm`, '--pull=never', '--layers=false', '--force-rm', '-f', 'Containerfile', '--build-arg', `BASE_IMAGE=${base.image}`, '--build-arg', `LBAAS_COMMIT=${commit}`, '-t', tag, '.'], {
    what: 'building the image',
    cwd: ROOT,
    progress,
    echo: (l) => /^\[\d\/\d\] STEP|^added \d+ packages|^removed \d+ packages|^Successfully tagged/.test(l),
  });
  const buildS = Math.round((Date.now() - buildStarted) / 1000);

  // The sum of the image's layers as stored (uncompressed tar): what a node's disk holds of it.
  const layerBytes = async (name: string) => {
    const i = JSON.parse(await buildah(['inspect', '--type', 'image', name], { what: `inspecting ${name}` })) as { Manifest: string };
    const layers = (JSON.parse(i.Manifest) as { layers: { size: number }[] }).layers;
    return { count: layers.length, bytes: layers.reduce((n, l) => n + l.size, 0) };
  };
  const image = await layerBytes(tag);
  const baseLayers = await layerBytes(base.image);
  assert.ok(image.count > baseLayers.count && image.bytes > baseLayers.bytes, `${tag} is ${base.image} plus layers of its own`);
  const mb = (n: number) => `${(n / 1e6).toFixed(0)} MB`;
  const size = image.bytes;
  progress(`image ${tag}: ${mb(size)} in ${image.count} layers (base ${mb(baseLayers.bytes)}, lbaas ${mb(size - baseLayers.bytes)}), built in ${buildS} s`);

  const info = JSON.parse(await buildah(['inspect', '--type', 'image', tag], { what: 'inspecting the image' })) as {
    OCIv1: { config: { User?: string; Entrypoint?: string[]; Env?: string[]; WorkingDir?: string } };
  };
  const config = info.OCIv1.config;
  assert.equal(config.User, '10001:10001', 'a fixed non-root user');
  assert.deepEqual(config.Entrypoint, ['node', '/app/bin/lbaas.js']);
  const [uid, gid] = (config.User ?? '').split(':');

  // The container's root, mounted read-only as the chart's readOnlyRootFilesystem has it, with what a runtime adds:
  // /proc, /dev and a writable /tmp (the chart's emptyDir).
  const container = (await buildah(['from', '--quiet', '--pull=never', tag], { what: 'creating a container from the image' })).trim();
  cleanups.push(() => buildah(['rm', container], { what: `removing container ${container}` }));
  const mnt = (await buildah(['mount', container], { what: 'mounting the container' })).trim();
  cleanups.push(() => buildah(['umount', container], { what: `unmounting container ${container}` }));
  const root = await mkdtemp(path.join(os.tmpdir(), 'lbaas-image-root-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  await mount(['--bind', mnt], root, 'binding the container root');
  await run('mount', ['-o', 'remount,bind,ro', root], { what: 'making the root read-only' });
  await mount(['-t', 'proc', 'proc'], path.join(root, 'proc'), 'mounting /proc');
  await mount(['--rbind', '/dev'], path.join(root, 'dev'), 'mounting /dev');
  await run('mount', ['--make-rslave', path.join(root, 'dev')], { what: 'keeping /dev mounts from propagating back' });
  await mount(['-t', 'tmpfs', '-o', 'size=64m,mode=1777', 'tmpfs'], path.join(root, 'tmp'), 'mounting /tmp');

  const srv = await temporalServer();
  stack = await startStack({ worker: false });
  const taskQueue = stack.taskQueue;
  const env = [
    ...(config.Env ?? []),
    `TEMPORAL_ADDRESS=${srv.address}`,
    `TEMPORAL_NAMESPACE=${srv.namespace}`,
    `LBAAS_TASK_QUEUE=${taskQueue}`,
    `ANEXIA_ENGINE_URL=${stack.sim.url}`,
    `ANEXIA_TOKEN=${TEST_TOKEN}`,
    'LBAAS_SET_CURRENT_VERSION=true',
    `HOME=/tmp`,
  ];
  let out = '';
  worker = spawn('/usr/sbin/chroot', [`--userspec=${uid}:${gid}`, root, '/usr/bin/env', '-i', `--chdir=${config.WorkingDir || '/'}`, ...env, ...(config.Entrypoint ?? []), 'worker'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  worker.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  worker.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  await until('the worker from the image to start', async () => /lbaas worker: task queue /.test(out) || worker!.exitCode !== null, 180_000, 200);
  assert.match(out, /lbaas worker: task queue /, out);
  // The build id the image carries: the package version and the commit it was built from.
  const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  assert.ok(out.includes(`${pkg.version}+${commit.slice(0, 12)}`), `the worker names its build ${pkg.version}+${commit.slice(0, 12)}:\n${out}`);

  const lb = seedLoadBalancer(stack.sim, 'lb-image');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-image-spec-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const specFile = path.join(dir, 'service.json');
  await writeFile(specFile, JSON.stringify(exampleSpec([lb], { serviceUid: 'image-test' })));
  const applied = await runCli(['apply', '-f', specFile, '--wait', '--timeout', '5m', '-o', 'json'], { env: cliEnv({ address: srv.address, namespace: srv.namespace, taskQueue }), timeoutMs: 330_000 });
  assert.equal(applied.code, 0, `lbaas apply --wait: ${applied.stderr}\nthe worker printed:\n${out}`);
  const result = JSON.parse(applied.stdout) as { converged?: boolean; loadBalancers?: Record<string, { created: number }> };
  assert.equal(result.converged, true, applied.stdout);
  // docs/spec.md#format's example: 2 Backends, 2 Frontends, 4 Binds and 4 Servers on the load balancer.
  assert.equal(result.loadBalancers?.[lb]?.created, 12, applied.stdout);
  assert.equal(taggedLines(stack.sim, 'anxccm-svc-uid=image-test').length, 12);

  worker.kill('SIGTERM');
  const code = await new Promise<number | null>((r) => (worker!.exitCode !== null ? r(worker!.exitCode) : worker!.once('exit', (c) => r(c))));
  assert.equal(code, 0, `the worker ends on SIGTERM with exit 0:\n${out}`);
  progress(`test:image took ${Math.round((Date.now() - started) / 1000)} s (image ${mb(size)})`);
});
