/**
 * The real `lbaas` CLI as a process never waits in silence (cli/wait.ts, client/pickup.ts): with no worker on the
 * task queue, `apply --wait` says within 30 s of starting why nothing happens and how to fix it, and again 30 s later;
 * with workers whose Worker Deployment has no Current Version it names the set-current-version command, which, once
 * run, lets the waiting apply through; with the Current Version's workers gone and another build polling, it names
 * both ways out once the gone worker's last poll is older than LIVE_POLLER_MS.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { setCurrentVersion } from '../../worker/versioning';
import { cliEnv, LBAAS_BIN, REPO_ROOT } from '../helpers/cli';
import { fileTemporal } from '../helpers/file-temporal';
import { exampleSpec } from '../helpers/fixtures';

let dir: string;
const t = fileTemporal(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'lbaas-waits-'));
  t.cleanup(() => rm(dir, { recursive: true, force: true }));
});

interface Line {
  /** Milliseconds from the command's start. */
  at: number;
  text: string;
}

/** `lbaas <args>` with each stderr line timestamped as it arrives; `onLine` may act on the lines as they come. */
function run(args: string[], taskQueue: string, onLine: (l: Line, stop: () => void) => void = () => undefined): Promise<{ code: number | null; stdout: string; lines: Line[] }> {
  const started = Date.now();
  const child = spawn(process.execPath, [LBAAS_BIN, ...args], { env: cliEnv({ address: t.address, namespace: t.namespace, taskQueue }), cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let partial = '';
  const lines: Line[] = [];
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    partial += d.toString();
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const text of parts) {
      const l = { at: Date.now() - started, text };
      lines.push(l);
      onLine(l, () => child.kill('SIGTERM'));
    }
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, lines })));
}

async function specFor(uid: string): Promise<string> {
  const file = path.join(dir, `${uid}.json`);
  await writeFile(file, JSON.stringify(exampleSpec(['lb-waits'], { serviceUid: uid })));
  t.cleanup(() => t.client.workflow.getHandle(`lbaas/${uid}`).terminate('test cleanup').catch(() => undefined));
  return file;
}

// Side by side: each test has its own task queue and Deployment, and each spends most of a minute waiting for the
// CLI's warnings (30 s apart) or for a stopped worker's poll to go stale (70 s).
describe('lbaas apply waiting for a worker', { concurrency: true }, () => {
  test('no worker: apply --wait says within 30 s that no worker polls and to start lbaas worker, again 30 s later, then times out (exit 3)', { timeout: 120_000 }, async () => {
    const taskQueue = `waits-none-${randomUUID().slice(0, 8)}`;
    const uid = `waits-none-${randomUUID().slice(0, 8)}`;
    const r = await run(['apply', '-f', await specFor(uid), '--wait', '--timeout', '55s', '-o', 'json'], taskQueue);
    assert.equal(r.code, 3);
    assert.equal(r.stdout, '');
    const warnings = r.lines.filter((l) => l.text.includes('not picked up'));
    const expected = new RegExp(
      `^\\[\\d+s\\] warning: workflow task of lbaas/${uid} not picked up for \\d+ s: no worker polls task queue ${taskQueue}; fix: start lbaas worker \\(LBAAS_TASK_QUEUE=${taskQueue}\\)$`,
    );
    assert.equal(warnings.length, 2, r.lines.map((l) => `${l.at} ${l.text}`).join('\n'));
    for (const w of warnings) assert.match(w.text, expected);
    const [first, second] = warnings as [Line, Line];
    console.log(`first diagnosis ${first.at} ms after the command started, the second ${second.at - first.at} ms later`);
    assert.ok(first.at <= 30_000, `first diagnosis after ${first.at} ms`);
    assert.ok(second.at - first.at >= 30_000 && second.at - first.at <= 36_000, `repeated after ${second.at - first.at} ms`);
    assert.equal(r.lines[0]?.text, `warning: no worker has polled task queue ${taskQueue} recently; nothing happens until one runs (lbaas worker)`);
  });

  test('workers but no Current Version: apply says within 30 s which command makes their build current; running it lets the apply through', { timeout: 120_000 }, async () => {
    const id = randomUUID().slice(0, 8);
    const taskQueue = `waits-nocurrent-${id}`;
    const version = { deploymentName: `waits-${id}`, buildId: 'b1' };
    await t.versionedWorker(taskQueue, version, false);
    const uid = `waits-nocurrent-${id}`;
    let switched: Promise<unknown> | null = null;
    const r = await run(['apply', '-f', await specFor(uid), '--timeout', '90s'], taskQueue, (l) => {
      if (l.text.includes('not picked up') && !switched) switched = setCurrentVersion(t.client, t.namespace, version);
    });
    await switched;
    const warning = r.lines.find((l) => l.text.includes('not picked up'));
    assert.ok(warning, r.lines.map((l) => `${l.at} ${l.text}`).join('\n'));
    console.log(`diagnosis ${warning.at} ms after the command started`);
    assert.ok(warning.at <= 30_000, `after ${warning.at} ms`);
    assert.match(
      warning.text,
      new RegExp(
        `warning: workflow task of lbaas/${uid} not picked up for \\d+ s: Worker Deployment ${version.deploymentName} has no Current Version, so its workers \\(builds b1\\) receive nothing; ` +
          `fix: temporal worker deployment set-current-version --deployment-name ${version.deploymentName} --build-id b1$`,
      ),
    );
    assert.equal(r.code, 0, r.lines.map((l) => l.text).join('\n'));
    assert.match(r.stdout, new RegExp(`^applied revision 1 to service ${uid} \\(controller lbaas/${uid}\\)\n$`));
  });

  test('with the workers of the Current Version gone and another build polling: first "busy, or stopped within the last 70 s", then, once the gone poller is stale, start a worker of that build or make the polling one current', { timeout: 240_000 }, async () => {
    const id = randomUUID().slice(0, 8);
    const taskQueue = `waits-gone-${id}`;
    const deploymentName = `waits-gone-${id}`;
    const gone = await t.versionedWorker(taskQueue, { deploymentName, buildId: 'b1' }, true);
    // Stopped before the server listed its poll, b1 would never be listed: the CLI would say at once that no worker of
    // it polls, and the "busy, or stopped" step would not be seen (it failed so on a loaded machine).
    await t.untilPolled(taskQueue);
    await gone.stop();
    const stoppedAt = Date.now();
    await t.versionedWorker(taskQueue, { deploymentName, buildId: 'b2' }, false);
    const uid = `waits-gone-${id}`;
    const r = await run(['apply', '-f', await specFor(uid), '--timeout', '200s'], taskQueue, (l, stop) => {
      if (l.text.includes('no worker of that build polls')) stop();
    });
    const warnings = r.lines.filter((l) => l.text.includes('not picked up'));
    const busy = warnings[0];
    const last = warnings.at(-1);
    assert.ok(busy && last, r.lines.map((l) => l.text).join('\n'));
    assert.match(busy.text, new RegExp(`workers of build b1 polled task queue ${taskQueue} \\d+ s ago but have not taken it \\(busy workers, a backlog, or workers stopped within the last 70 s\\)`));
    assert.ok(busy.at <= 30_000, `first diagnosis after ${busy.at} ms`);
    assert.match(
      last.text,
      new RegExp(
        `the Current Version is ${deploymentName}\\.b1 and no worker of that build polls task queue ${taskQueue} \\(builds polling: b2\\); ` +
          `fix: start a worker of build b1 \\(LBAAS_BUILD_ID=b1\\), or make a polling build current: temporal worker deployment set-current-version --deployment-name ${deploymentName} --build-id b2$`,
      ),
    );
    console.log(`version-not-polled said ${Date.now() - stoppedAt} ms after the b1 worker stopped`);
  });
});
