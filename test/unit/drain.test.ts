/**
 * The drain's decisions and lines (worker/drain.ts) over a scripted Temporal service, with its intervals shortened:
 * when it stops at once, what it says while it waits, and that its time limit holds. The drain of a real worker
 * process on the dev server is test/faults/drain.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { drainVersion, type DrainOptions } from '../../worker/drain';

function scripted(o: { current: string | null; ramping?: string; counts: number[] }) {
  const queries: string[] = [];
  let i = 0;
  const client = {
    workflowService: {
      describeWorkerDeployment: async () => ({
        workerDeploymentInfo: { routingConfig: { currentDeploymentVersion: o.current ? { buildId: o.current } : null, rampingDeploymentVersion: o.ramping ? { buildId: o.ramping } : null } },
      }),
    },
    workflow: {
      count: async (query: string) => {
        queries.push(query);
        return { count: o.counts[Math.min(i++, o.counts.length - 1)] as number };
      },
      list: () =>
        (async function* () {
          for (const id of ['lbaas/b/pass/1', 'lbaas/b/lb/x', 'lbaas/c/pass/2', 'lbaas/d/pass/9']) yield { workflowId: id };
        })(),
    },
  };
  return { client: client as unknown as DrainOptions['client'], queries };
}

const base = (client: DrainOptions['client'], lines: string[], timeoutMs = 5_000): DrainOptions => ({
  client,
  namespace: 'default',
  taskQueue: 'lbaas',
  deployment: { deploymentName: 'lbaas', buildId: 'old' },
  timeoutMs,
  log: (level, line) => lines.push(`${level} ${line}`),
  checkEveryMs: 20,
  reportEveryMs: 60_000,
});

test('a worker of the Current or Ramping Version stops at once, counting nothing', async () => {
  for (const routing of [{ current: 'old' }, { current: 'new', ramping: 'old' }]) {
    const s = scripted({ ...routing, counts: [3] });
    const lines: string[] = [];
    assert.equal(await drainVersion(base(s.client, lines)), 'still current');
    assert.deepEqual(s.queries, []);
    assert.deepEqual(lines, [`INFO lbaas worker: stopping now: lbaas.old is the ${routing.current === 'old' ? 'Current' : 'Ramping'} Version, so its other workers take its work`]);
  }
});

test('a worker of an old build waits until no run pinned to its Version is left, saying which it waits for', async () => {
  const s = scripted({ current: 'new', counts: [4, 4, 1, 0] });
  const lines: string[] = [];
  const started = Date.now();
  assert.equal(await drainVersion(base(s.client, lines)), 'drained');
  const tookS = (Date.now() - started) / 1000;
  assert.equal(s.queries.length, 4);
  assert.equal(s.queries[0], "TaskQueue = 'lbaas' AND ExecutionStatus = 'Running' AND TemporalWorkflowVersioningBehavior = 'Pinned' AND TemporalWorkerDeploymentVersion = 'lbaas:old'");
  assert.equal(lines.length, 2);
  assert.match(lines[0] as string, /^INFO lbaas worker: draining lbaas\.old \(the Current Version is lbaas\.new\): waiting for 4 workflows pinned to it \(lbaas\/b\/pass\/1, lbaas\/b\/lb\/x, lbaas\/c\/pass\/2, \.\.\.\) to finish; stopping anyway in [45] s \(LBAAS_DRAIN_TIMEOUT_SECONDS\)$/);
  // The drain's own seconds, rounded: at most the time this test saw pass (a loaded machine makes it more than 0).
  const said = /^INFO lbaas worker: lbaas\.old is drained: no workflow pinned to it runs; stopping after (\d+) s of drain$/.exec(lines[1] as string);
  assert.ok(said, lines[1]);
  assert.ok(Number(said[1]) <= Math.round(tookS), `said ${said[1]} s after ${tookS} s`);
});

test('the drain gives up at its time limit, saying so; a worker stopped meanwhile ends the wait', async () => {
  const s = scripted({ current: 'new', counts: [2] });
  const lines: string[] = [];
  const started = Date.now();
  assert.equal(await drainVersion({ ...base(s.client, lines, 300), reportEveryMs: 100 }), 'timed out');
  const took = Date.now() - started;
  assert.ok(took >= 300 && took < 2_000, `took ${took} ms`);
  assert.ok(lines.filter((l) => l.includes('waiting for 2 workflows pinned to it')).length >= 2, lines.join('\n'));
  assert.equal(lines.at(-1), 'WARN lbaas worker: stopping with workflows still pinned to lbaas.old: LBAAS_DRAIN_TIMEOUT_SECONDS (0 s) ran out; the Current Version\'s workers end or move them once no worker of lbaas.old polls (docs/operations.md#upgrading-lbaas)');

  let stopped = false;
  setTimeout(() => (stopped = true), 100);
  assert.equal(await drainVersion({ ...base(scripted({ current: 'new', counts: [2] }).client, []), abandoned: () => stopped }), 'abandoned');
});
