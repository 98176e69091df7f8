/**
 * `lbaas kube` configuration, as the real CLI process reads it: flags with env fallbacks, exit 2 naming the bad flag,
 * exit 4 when the API server does not answer (before Temporal is contacted), --help naming every flag; and the
 * kube-apiserver installer's pure parts and cache lookup. The controller itself runs in `npm run test:kube`.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { kubeSettings, type KubeOptions } from '../../cli/commands/kube';
import { CliError } from '../../common/errors';
import { ensureKubeApiserver, KubeApiserverNotFoundError, kubeCacheDir, rewriteStagingReplaces, versionLdflags } from '../../kube/install';
import { kubeconfigText } from '../../kube/local-apiserver';

const BIN = path.resolve(__dirname, '..', '..', '..', 'bin', 'lbaas.js');
let dir: string;

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-kube-cli-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH, HOME: dir, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    p.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    p.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

const base: KubeOptions = { loadBalancer: [], externalAddress: [], namespace: 'kube-system', leaseDuration: '15s' };

test('settings: flags win over env; env lists are comma-separated; addresses canonical; the lease is lbaas-kube', () => {
  const env = { LBAAS_CLUSTER_NAME: 'prod', LBAAS_LOAD_BALANCERS: 'lb-a, lb-b', LBAAS_EXTERNAL_ADDRESSES: '203.0.113.10,2001:DB8:0::10' };
  assert.deepEqual(kubeSettings(base, env), {
    clusterName: 'prod',
    loadBalancers: ['lb-a', 'lb-b'],
    externalAddresses: ['203.0.113.10', '2001:db8::10'],
    loadBalancerClass: null,
    discovery: { tagPrefix: 'anxkube-ccm-lb', intervalMs: 120_000 },
    namespace: 'kube-system',
    leaseName: 'lbaas-kube',
    leaseDurationMs: 15_000,
    healthAddress: null,
  });
  const flags = kubeSettings({ ...base, clusterName: 'stage', loadBalancer: ['lb-c'], externalAddress: ['198.51.100.1'], loadBalancerClass: 'lbaas.anx.io/lb' }, env);
  assert.deepEqual([flags.clusterName, flags.loadBalancers, flags.externalAddresses, flags.loadBalancerClass], ['stage', ['lb-c'], ['198.51.100.1'], 'lbaas.anx.io/lb']);
});

test('settings: discovery is on by default, needing no --load-balancer; its flags win over env; false turns it off', () => {
  assert.deepEqual(kubeSettings({ ...base, clusterName: 'c' }, {}).discovery, { tagPrefix: 'anxkube-ccm-lb', intervalMs: 120_000 });
  assert.deepEqual(kubeSettings({ ...base, clusterName: 'c' }, {}).loadBalancers, []);
  const env = { LBAAS_AUTO_DISCOVERY_TAG_PREFIX: 'from-env', LBAAS_AUTO_DISCOVER_LOAD_BALANCER: 'true' };
  assert.deepEqual(kubeSettings({ ...base, clusterName: 'c' }, env).discovery, { tagPrefix: 'from-env', intervalMs: 120_000 });
  assert.deepEqual(kubeSettings({ ...base, clusterName: 'c', autoDiscoveryTagPrefix: 'mine', discoveryInterval: '30s' }, env).discovery, { tagPrefix: 'mine', intervalMs: 30_000 });
  assert.equal(kubeSettings({ ...base, clusterName: 'c', loadBalancer: ['lb'], autoDiscoverLoadBalancer: 'false' }, env).discovery, null);
});

test('settings: --health-address wins over LBAAS_HEALTH_ADDRESS; off when neither is given', () => {
  const on = { ...base, clusterName: 'c', loadBalancer: ['lb'] };
  assert.equal(kubeSettings(on, {}).healthAddress, null);
  assert.deepEqual(kubeSettings(on, { LBAAS_HEALTH_ADDRESS: '0.0.0.0:8081' }).healthAddress, { host: '0.0.0.0', port: 8081 });
  assert.deepEqual(kubeSettings({ ...on, healthAddress: '127.0.0.1:9000' }, { LBAAS_HEALTH_ADDRESS: '0.0.0.0:8081' }).healthAddress, { host: '127.0.0.1', port: 9000 });
});

test('settings: each bad value is an exit-2 error naming its flag', () => {
  const cases: [Partial<KubeOptions>, NodeJS.ProcessEnv, RegExp][] = [
    [{}, {}, /^--cluster-name: required/],
    [{ clusterName: 'a b' }, {}, /^--cluster-name: must be/],
    [{ clusterName: 'c', autoDiscoverLoadBalancer: 'false' }, {}, /^--load-balancer: at least one is required when --auto-discover-load-balancer is false/],
    [{ clusterName: 'c' }, { LBAAS_AUTO_DISCOVER_LOAD_BALANCER: 'false' }, /^--load-balancer: at least one/],
    [{ clusterName: 'c', autoDiscoverLoadBalancer: 'yes' }, {}, /^--auto-discover-load-balancer: must be true or false, got "yes"/],
    [{ clusterName: 'c', autoDiscoveryTagPrefix: 'a b' }, {}, /^--auto-discovery-tag-prefix: /],
    [{ clusterName: 'c', discoveryInterval: '5s' }, {}, /^--discovery-interval: must be whole seconds from 10s to 3600s, got "5s"/],
    [{ clusterName: 'c', loadBalancer: ['a/b'] }, {}, /^--load-balancer: "a\/b"/],
    [{ clusterName: 'c', loadBalancer: ['a', 'a'] }, {}, /^--load-balancer: given twice/],
    [{ clusterName: 'c', loadBalancer: ['a'], externalAddress: ['300.1.1.1'] }, {}, /^--external-address: "300.1.1.1"/],
    [{ clusterName: 'c', loadBalancer: ['a'], loadBalancerClass: '' }, {}, /^--load-balancer-class: must not be empty/],
    [{ clusterName: 'c', loadBalancer: ['a'], namespace: 'Kube_System' }, {}, /^--namespace: /],
    [{ clusterName: 'c', loadBalancer: ['a'], leaseDuration: '1m' }, {}, /^--lease-duration: /],
    [{ clusterName: 'c', loadBalancer: ['a'], leaseName: 'Lease!' }, {}, /^--lease-name: /],
    [{ clusterName: 'c', loadBalancer: ['a'], healthAddress: '8081' }, {}, /^--health-address: must be host:port \(e\.g\. 0\.0\.0\.0:8081\), got "8081"$/],
    [{ clusterName: 'c', loadBalancer: ['a'] }, { LBAAS_HEALTH_ADDRESS: 'x:y' }, /^--health-address: must be host:port/],
  ];
  for (const [opts, env, message] of cases) {
    assert.throws(
      () => kubeSettings({ ...base, ...opts }, env),
      (err: unknown) => err instanceof CliError && err.exitCode === 2 && message.test(err.message),
      `${JSON.stringify(opts)} -> ${message}`,
    );
  }
});

test('lbaas kube --help documents every flag and its env variable', async () => {
  const r = await run(['kube', '--help']);
  assert.equal(r.code, 0);
  for (const flag of ['--kubeconfig', '--cluster-name', '--load-balancer ', '--external-address', '--load-balancer-class', '--namespace', '--lease-name', '--lease-duration', '--auto-discover-load-balancer', '--auto-discovery-tag-prefix', '--discovery-interval', '--health-address']) assert.ok(r.stdout.includes(flag), flag);
  for (const v of ['KUBECONFIG', 'LBAAS_CLUSTER_NAME', 'LBAAS_LOAD_BALANCERS', 'LBAAS_EXTERNAL_ADDRESSES', 'LBAAS_AUTO_DISCOVER_LOAD_BALANCER', 'LBAAS_AUTO_DISCOVERY_TAG_PREFIX', 'LBAAS_HEALTH_ADDRESS']) assert.ok(r.stdout.includes(v), v);
});

test('lbaas kube: a kubeconfig that does not exist exits 2 naming --kubeconfig; one pointing at nothing exits 4', async () => {
  const missing = await run(['kube', '--cluster-name', 'c', '--load-balancer', 'lb', '--kubeconfig', path.join(dir, 'nope')]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /^lbaas: --kubeconfig: .*nope: no such file/m);

  // A port that was free a moment ago: nothing listens there.
  const port = await new Promise<number>((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });
  const file = path.join(dir, 'kubeconfig');
  await writeFile(file, kubeconfigText(`https://127.0.0.1:${port}`, path.join(dir, 'ca.crt'), 'u', 't').replace(/certificate-authority: .*/, 'insecure-skip-tls-verify: true'));
  const r = await run(['kube', '--cluster-name', 'c', '--load-balancer', 'lb'], { KUBECONFIG: file, TEMPORAL_ADDRESS: '127.0.0.1:1' });
  assert.equal(r.code, 4, r.stderr);
  assert.match(r.stderr, new RegExp(`^lbaas: cannot reach the Kubernetes API server at https://127.0.0.1:${port} \\(from KUBECONFIG .*\\): .*ECONNREFUSED`, 'm'));
});

test('the README shows the RBAC manifest exactly as examples/k8s-rbac.yaml, the file test:kube runs lbaas kube with', async () => {
  const root = path.resolve(__dirname, '..', '..', '..');
  const [readme, rbac] = await Promise.all([readFile(path.join(root, 'README.md'), 'utf8'), readFile(path.join(root, 'examples', 'k8s-rbac.yaml'), 'utf8')]);
  assert.ok(readme.includes('```yaml\n' + rbac + '```'), 'README.md embeds examples/k8s-rbac.yaml verbatim');
});

test('installer: go.mod staging replaces point at the published modules; the version is stamped as a release build does', () => {
  const goMod = ['replace (', '\tk8s.io/api => ./staging/src/k8s.io/api', '\tk8s.io/client-go => ./staging/src/k8s.io/client-go', '\tgithub.com/x/y => github.com/x/y v1.0.0', ')', ''].join('\n');
  assert.equal(
    rewriteStagingReplaces(goMod, 'v0.37.2'),
    ['replace (', '\tk8s.io/api => k8s.io/api v0.37.2', '\tk8s.io/client-go => k8s.io/client-go v0.37.2', '\tgithub.com/x/y => github.com/x/y v1.0.0', ')', ''].join('\n'),
  );
  assert.equal(rewriteStagingReplaces('replace k8s.io/api => ./staging/src/k8s.io/api\n', 'v0.1.2'), 'replace k8s.io/api => k8s.io/api v0.1.2\n');
  assert.match(versionLdflags('1.37.2'), /-X k8s\.io\/component-base\/version\.gitVersion=v1\.37\.2 -X k8s\.io\/component-base\/version\.gitMajor=1 -X k8s\.io\/component-base\/version\.gitMinor=37/);
});

test('installer: KUBE_APISERVER_PATH that is not executable is refused naming it; a cached binary of the pinned version is used as is', async () => {
  await assert.rejects(ensureKubeApiserver({ env: { KUBE_APISERVER_PATH: path.join(dir, 'none') } }), (err: unknown) => err instanceof KubeApiserverNotFoundError && /KUBE_APISERVER_PATH=.*none: not an executable file/.test(err.message));
  const env = { LBAAS_CACHE_DIR: path.join(dir, 'cache'), PATH: process.env.PATH };
  const cached = path.join(kubeCacheDir(env), 'kube-apiserver');
  await mkdir(path.dirname(cached), { recursive: true });
  await writeFile(cached, '#!/bin/sh\necho "Kubernetes v1.37.2"\n');
  await chmod(cached, 0o755);
  assert.equal(await ensureKubeApiserver({ env }), cached);
});

/**
 * A stand-in `go` that does what the build needs of the real one, in milliseconds: `go env GOVERSION`, `go mod download
 * -json` answering with a read-only module directory (as the module cache is), and `go build` that fails unless the
 * go.mod it builds has the staging replaces rewritten and the version stamped, and otherwise writes a binary reporting
 * the version. Every build is counted in `builds`.
 */
async function standInGo(root: string): Promise<{ bin: string; builds: string }> {
  const bin = path.join(root, 'bin');
  const mod = path.join(root, 'modcache', 'k8s.io', 'kubernetes@v1.37.2');
  const builds = path.join(root, 'builds');
  await mkdir(path.join(mod, 'cmd', 'kube-apiserver'), { recursive: true });
  await mkdir(bin, { recursive: true });
  await writeFile(path.join(mod, 'go.mod'), 'module k8s.io/kubernetes\n\nreplace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n)\n');
  await chmod(path.join(mod, 'go.mod'), 0o444);
  await chmod(path.join(mod, 'cmd', 'kube-apiserver'), 0o555);
  await chmod(path.join(mod, 'cmd'), 0o555);
  await chmod(mod, 0o555);
  const script = `#!/bin/sh
case "$1" in
  env) echo go1.26.0 ;;
  mod) echo '{"Path":"k8s.io/kubernetes","Version":"v1.37.2","Dir":"${mod}"}' ;;
  build)
    grep -q 'k8s.io/api => k8s.io/api v0.37.2' go.mod || { echo "go.mod not rewritten" >&2; exit 1; }
    case "$3" in *gitVersion=v1.37.2*) ;; *) echo "version not stamped" >&2; exit 1 ;; esac
    [ "$GOFLAGS" = "-mod=mod" ] && [ "$GOWORK" = "off" ] || { echo "env" >&2; exit 1; }
    sleep 0.3
    echo x >> "${builds}"
    printf '#!/bin/sh\\necho "Kubernetes v1.37.2"\\n' > "$5"; chmod +x "$5" ;;
esac
`;
  await writeFile(path.join(bin, 'go'), script);
  await chmod(path.join(bin, 'go'), 0o755);
  return { bin, builds };
}

test('installer: builds from the module (copied writable, go.mod rewritten, version stamped) into the cache once, however many ask at once', async (t) => {
  const root = await mkdtemp(path.join(dir, 'install-'));
  const go = await standInGo(root);
  // The stand-in module directory is read-only like the module cache: make it removable again for the cleanup.
  t.after(() => execFileSync('chmod', ['-R', 'u+w', root]));
  const env = { LBAAS_CACHE_DIR: path.join(root, 'cache'), PATH: `${go.bin}:${process.env.PATH}`, HOME: root };
  // Either call may win the lock: the other waits (saying so) or finds the binary already there. Exactly one of them
  // builds, and says so.
  const progress: string[][] = [[], []];
  const [a, b] = await Promise.all([0, 1].map((i) => ensureKubeApiserver({ env, progress: (l) => progress[i]!.push(l) })));
  const cached = path.join(kubeCacheDir(env), 'kube-apiserver');
  assert.deepEqual([a, b], [cached, cached]);
  assert.equal((await readFile(go.builds, 'utf8')).trim().split('\n').length, 1, 'one build');
  const built = progress.map((lines) => lines.some((l) => /building kube-apiserver v1\.37\.2 from the Go module proxy/.test(l)));
  assert.equal(built.filter(Boolean).length, 1, `exactly one call says it builds: ${JSON.stringify(progress)}`);
  for (const l of progress[built.indexOf(false)]!) assert.match(l, /^waiting for another install of kube-apiserver into /);
  // Nothing of the build is left beside the binary (the private directory with the copied module is gone).
  const entries = await readdir(kubeCacheDir(env));
  assert.deepEqual(entries.filter((f) => f.startsWith('.install-')), []);
  assert.ok(entries.includes('kube-apiserver'));
});
