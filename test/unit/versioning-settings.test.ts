/**
 * The Worker Deployment Version `lbaas worker` polls as (worker/versioning.ts): the build id recorded at build time,
 * the settings that override it, and bad values refused naming the variable.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { buildInfo, defaultBuildId, deploymentVersionFromEnv, setCurrentVersion, versionText } from '../../worker/versioning';
import { workerEnv } from '../../worker/start';

const REPO_ROOT = path.join(__dirname, '..', '..', '..');
const info = { version: '1.2.3', commit: '0123456789abcdef0123456789abcdef01234567' };

test('the build id is the version plus the first 12 characters of the commit, or the version alone outside git', () => {
  assert.equal(defaultBuildId(info), '1.2.3+0123456789ab');
  assert.equal(defaultBuildId({ version: '1.2.3', commit: null }), '1.2.3');
});

test('the build records the package version and, in a git checkout, its HEAD commit; outside git no commit', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lbaas-build-info-'));
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    mkdirSync(path.join(dir, 'scripts'));
    copyFileSync(path.join(REPO_ROOT, 'scripts', 'build-info.js'), path.join(dir, 'scripts', 'build-info.js'));
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ version: '4.5.6' }));
    execFileSync(process.execPath, [path.join(dir, 'scripts', 'build-info.js')]);
    assert.deepEqual(buildInfo(path.join(dir, 'dist')), { version: '4.5.6', commit: null });
    git('init', '-q');
    git('add', '.');
    git('-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-q', '-m', 'x');
    execFileSync(process.execPath, [path.join(dir, 'scripts', 'build-info.js')]);
    assert.deepEqual(buildInfo(path.join(dir, 'dist')), { version: '4.5.6', commit: git('rev-parse', 'HEAD') });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('outside git LBAAS_BUILD_COMMIT names the commit (the Containerfile passes it); a value that is no commit id exits 2 naming it and writes nothing', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lbaas-build-info-'));
  const script = path.join(dir, 'scripts', 'build-info.js');
  try {
    mkdirSync(path.join(dir, 'scripts'));
    copyFileSync(path.join(REPO_ROOT, 'scripts', 'build-info.js'), script);
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ version: '4.5.6' }));
    const commit = '88e5a3ae6198c398b97df7cc0f0e9abb00d0fac9';
    execFileSync(process.execPath, [script], { env: { ...process.env, LBAAS_BUILD_COMMIT: commit } });
    assert.deepEqual(buildInfo(path.join(dir, 'dist')), { version: '4.5.6', commit });
    rmSync(path.join(dir, 'dist'), { recursive: true });
    const r = spawnSync(process.execPath, [script], { env: { ...process.env, LBAAS_BUILD_COMMIT: 'main; rm -rf /' }, encoding: 'utf8' });
    assert.equal(r.status, 2);
    assert.equal(r.stderr, 'build-info: LBAAS_BUILD_COMMIT must be a hexadecimal commit id, got "main; rm -rf /"\n');
    assert.equal(existsSync(path.join(dir, 'dist')), false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('without build-info.json the build id falls back to the package version', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lbaas-build-info-'));
  try {
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ version: '9.8.7' }));
    assert.deepEqual(buildInfo(path.join(dir, 'dist')), { version: '9.8.7', commit: null });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('defaults: Deployment lbaas, this build; LBAAS_DEPLOYMENT_NAME and LBAAS_BUILD_ID override them', () => {
  assert.deepEqual(deploymentVersionFromEnv({}, info), { deploymentName: 'lbaas', buildId: '1.2.3+0123456789ab' });
  assert.deepEqual(deploymentVersionFromEnv({ LBAAS_DEPLOYMENT_NAME: 'lbaas-eu', LBAAS_BUILD_ID: 'release-42' }, info), { deploymentName: 'lbaas-eu', buildId: 'release-42' });
  assert.equal(versionText({ deploymentName: 'lbaas', buildId: '1.2.3+0123456789ab' }), 'lbaas.1.2.3+0123456789ab');
});

test('bad names are refused naming the variable', () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ LBAAS_DEPLOYMENT_NAME: 'lbaas.eu' }, /^LBAAS_DEPLOYMENT_NAME: must not contain "\." or ":", got "lbaas\.eu"$/],
    [{ LBAAS_DEPLOYMENT_NAME: 'lbaas:eu' }, /^LBAAS_DEPLOYMENT_NAME: must not contain "\." or ":"/],
    [{ LBAAS_DEPLOYMENT_NAME: '__lbaas' }, /^LBAAS_DEPLOYMENT_NAME: must not start with "__"/],
    [{ LBAAS_BUILD_ID: '__unversioned__' }, /^LBAAS_BUILD_ID: must not start with "__", got "__unversioned__"$/],
    [{ LBAAS_BUILD_ID: 'a b' }, /^LBAAS_BUILD_ID: must not contain white space/],
    [{ LBAAS_BUILD_ID: 'x'.repeat(201) }, /^LBAAS_BUILD_ID: at most 200 characters, got 201$/],
  ];
  for (const [env, message] of cases) assert.throws(() => deploymentVersionFromEnv(env, info), (err: Error) => (assert.match(err.message, message), true), JSON.stringify(env));
});

test('lbaas worker makes its Version current when none is (default), always with LBAAS_SET_CURRENT_VERSION=true, never with false', () => {
  const base = { ANEXIA_TOKEN: 't', LBAAS_BUILD_ID: 'b1' };
  assert.equal(workerEnv(base).setCurrent, 'if-none');
  assert.equal(workerEnv({ ...base, LBAAS_SET_CURRENT_VERSION: '' }).setCurrent, 'if-none');
  assert.equal(workerEnv({ ...base, LBAAS_SET_CURRENT_VERSION: 'if-none' }).setCurrent, 'if-none');
  assert.equal(workerEnv({ ...base, LBAAS_SET_CURRENT_VERSION: 'true' }).setCurrent, true);
  assert.equal(workerEnv({ ...base, LBAAS_SET_CURRENT_VERSION: 'false' }).setCurrent, false);
  assert.deepEqual(workerEnv(base).deployment, { deploymentName: 'lbaas', buildId: 'b1' });
  assert.throws(() => workerEnv({ ...base, LBAAS_SET_CURRENT_VERSION: 'yes' }), (err: Error) => (assert.equal(err.message, 'LBAAS_SET_CURRENT_VERSION: must be true, false or if-none, got "yes"'), true));
});

test('LBAAS_HEALTH_ADDRESS is read as host:port; a bad one names the variable', () => {
  const base = { ANEXIA_TOKEN: 't', LBAAS_BUILD_ID: 'b1' };
  assert.equal(workerEnv(base).healthAddress, undefined);
  assert.deepEqual(workerEnv({ ...base, LBAAS_HEALTH_ADDRESS: '0.0.0.0:8081' }).healthAddress, { host: '0.0.0.0', port: 8081 });
  assert.deepEqual(workerEnv({ ...base, LBAAS_HEALTH_ADDRESS: ':8081' }).healthAddress, { host: '0.0.0.0', port: 8081 });
  assert.deepEqual(workerEnv({ ...base, LBAAS_HEALTH_ADDRESS: '[::1]:8081' }).healthAddress, { host: '::1', port: 8081 });
  for (const bad of ['8081', 'localhost', 'host:99999', 'a b:1']) {
    assert.throws(() => workerEnv({ ...base, LBAAS_HEALTH_ADDRESS: bad }), (err: Error) => (assert.equal(err.message, `LBAAS_HEALTH_ADDRESS: must be host:port (e.g. 0.0.0.0:8081), got "${bad}"`), true), bad);
  }
});

test('making a Version current retries while the server is busy (workers of one build starting together) and stops once it is current', async () => {
  const version = { deploymentName: 'lbaas', buildId: '0.1.0+abc' };
  const busy = (code: number, message: string) => Object.assign(new Error(message), { code });
  let describes = 0;
  let sets = 0;
  let current: string | undefined;
  const workflowService = {
    describeWorkerDeployment: async () => {
      describes++;
      // Another worker's call won meanwhile: the second describe after the busy answers finds it current.
      if (describes === 1) throw busy(8, '8 RESOURCE_EXHAUSTED: consistent query buffer is full');
      if (describes === 2) throw busy(10, '10 ABORTED: conflicting update');
      return { workerDeploymentInfo: { routingConfig: { currentDeploymentVersion: current ? { buildId: current } : null } } };
    },
    setWorkerDeploymentCurrentVersion: async () => {
      sets++;
      current = version.buildId;
      return {};
    },
  };
  const client = { workflowService } as unknown as Parameters<typeof setCurrentVersion>[0];
  assert.deepEqual(await setCurrentVersion(client, 'default', version), { result: 'set' });
  assert.deepEqual({ describes, sets }, { describes: 3, sets: 1 });
  assert.deepEqual(await setCurrentVersion(client, 'default', version), { result: 'already' });
  assert.equal(sets, 1);
});

test('making a Version current gives up at once on an error retrying cannot fix, naming the Version', async () => {
  const workflowService = {
    describeWorkerDeployment: async () => {
      throw Object.assign(new Error('7 PERMISSION_DENIED: no'), { code: 7 });
    },
  };
  const client = { workflowService } as unknown as Parameters<typeof setCurrentVersion>[0];
  await assert.rejects(setCurrentVersion(client, 'default', { deploymentName: 'lbaas', buildId: 'b1' }), /could not make lbaas\.b1 the Current Version in namespace default: 7 PERMISSION_DENIED/);
});
