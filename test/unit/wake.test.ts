/**
 * worker/wake.ts against a recording fake of the client's two calls it makes (the list and the signal): the query it
 * lists with, the pace it signals at, runs that ended meanwhile, and when EntityWaker wakes again.
 * test/upgrade/upgrade.test.ts runs it against a real server.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { entitiesElsewhere, EntityWaker, wakeEntities, type WakeOptions } from '../../worker/wake';

const deployment = { deploymentName: 'lbaas', buildId: '0.1.0+new' };

function fakeClient(runs: { workflowId: string; runId: string }[], gone = new Set<string>()) {
  const queries: string[] = [];
  const signals: { workflowId: string; runId: string; name: string; arg: unknown; at: number }[] = [];
  const client = {
    workflow: {
      list({ query }: { query: string }) {
        queries.push(query);
        const listed = [...runs];
        return (async function* () {
          yield* listed;
        })();
      },
      getHandle(workflowId: string, runId: string) {
        return {
          async signal(def: { name: string }, arg: unknown) {
            if (gone.has(workflowId)) throw Object.assign(new Error('workflow not found'), { name: 'WorkflowNotFoundError' });
            signals.push({ workflowId, runId, name: def.name, arg, at: Date.now() });
          },
        };
      },
    },
  };
  return { client: client as unknown as WakeOptions['client'], queries, signals };
}

test('lists the running controllers and pools of the task queue on another Version of the Deployment', () => {
  assert.equal(
    entitiesElsewhere('lbaas', deployment),
    "TaskQueue = 'lbaas' AND ExecutionStatus = 'Running' AND WorkflowType IN ('serviceController', 'serverPool') AND TemporalWorkerDeployment = 'lbaas' AND TemporalWorkerDeploymentVersion != 'lbaas:0.1.0+new'",
  );
});

test('sends each listed run (by its run id) one wake with v: 2, no faster than the pace, and counts the runs that ended meanwhile', async () => {
  const runs = Array.from({ length: 12 }, (_, i) => ({ workflowId: `lbaas/s${i}`, runId: `r${i}` }));
  const f = fakeClient(runs, new Set(['lbaas/s3']));
  const lines: string[] = [];
  const started = Date.now();
  const r = await wakeEntities({ client: f.client, taskQueue: 'lbaas', deployment, perSecond: 100, log: (_l, line) => lines.push(line) });
  assert.deepEqual(f.queries, [entitiesElsewhere('lbaas', deployment)]);
  assert.deepEqual({ listed: r.listed, signalled: r.signalled, gone: r.gone, failed: r.failed }, { listed: 12, signalled: 11, gone: 1, failed: 0 });
  assert.deepEqual(f.signals.map((s) => `${s.workflowId} ${s.runId} ${s.name} ${JSON.stringify(s.arg)}`).sort(), runs.filter((x) => x.workflowId !== 'lbaas/s3').map((x) => `${x.workflowId} ${x.runId} wake {"v":2}`).sort());
  // 12 signals at 100/s: the last leaves no earlier than 110 ms after the start.
  assert.ok(Math.max(...f.signals.map((s) => s.at)) - started >= 100, 'paced');
  assert.match(lines.join('\n'), /woke 11 of 12 controllers and pools/);
});

test('EntityWaker wakes again while a wake still lists entities elsewhere, stops once one lists none, and starts again after the build was seen not current', async () => {
  const runs = [{ workflowId: 'lbaas/a', runId: 'r1' }];
  const f = fakeClient(runs);
  const waker = new EntityWaker({ client: f.client, taskQueue: 'lbaas', deployment, log: () => undefined });
  await waker.current();
  await waker.current();
  assert.equal(f.queries.length, 2, 'listed something: woken again');
  runs.length = 0;
  await waker.current();
  await waker.current();
  assert.equal(f.queries.length, 3, 'listed nothing: not again');
  waker.notCurrent();
  await waker.current();
  assert.equal(f.queries.length, 4);
});
