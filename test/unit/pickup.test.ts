/**
 * client/pickup.ts's decisions and kube/pickup-watch.ts's reporting against a scripted WorkflowService, for the
 * states the real server (test/workflow/pickup.test.ts) cannot be put into quickly: a stopped worker's stale poller,
 * a Current Version no worker polls, unversioned workers, a stuck pass under a controller, a stuck activity.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { diagnosePickup, LIVE_POLLER_MS, type PickupClient } from '../../client/pickup';
import { KubePickupWatch, NOT_PICKED_UP_REASON } from '../../kube/pickup-watch';
import type { KubeService } from '../../kube/objects';
import { KubeHealth } from '../../kube/health';

const NOW = 1_800_000_000_000;
const ts = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 });

interface Wf {
  pendingWorkflowTask?: { state: number; originalScheduledTime: ReturnType<typeof ts> } | null;
  pendingActivities?: { state: number; scheduledTime?: ReturnType<typeof ts>; nextAttemptScheduleTime?: ReturnType<typeof ts> | null; activityOptions?: { taskQueue: { name: string } } }[];
  pendingChildren?: { workflowId: string; runId: string }[];
  versioningInfo?: unknown;
  closed?: boolean;
}
type Poller = { lastAccessTime: ReturnType<typeof ts>; deploymentOptions?: { deploymentName: string; buildId: string; workerVersioningMode: number } | null };

function fake(o: { workflows: Record<string, Wf>; pollers?: Poller[]; activityPollers?: Poller[]; current?: string | null }) {
  const asked: string[] = [];
  /** The task queue and Deployment questions, in order. */
  const queried: string[] = [];
  const workflowService = {
    describeWorkflowExecution: async (req: { execution: { workflowId: string } }) => {
      asked.push(req.execution.workflowId);
      const w = o.workflows[req.execution.workflowId];
      if (!w) throw Object.assign(new Error('5 NOT_FOUND: workflow not found'), { code: 5 });
      return {
        workflowExecutionInfo: { taskQueue: 'q', execution: { runId: `run-${req.execution.workflowId}` }, versioningInfo: w.versioningInfo ?? null, ...(w.closed ? { closeTime: ts(NOW) } : {}) },
        pendingWorkflowTask: w.pendingWorkflowTask ?? null,
        pendingActivities: w.pendingActivities ?? [],
        pendingChildren: w.pendingChildren ?? [],
      };
    },
    describeTaskQueue: async (req: { taskQueueType: number }) => {
      queried.push('describeTaskQueue');
      return { pollers: req.taskQueueType === 1 ? (o.pollers ?? []) : (o.activityPollers ?? o.pollers ?? []) };
    },
    describeWorkerDeployment: async () => {
      queried.push('describeWorkerDeployment');
      if (o.current === undefined) throw Object.assign(new Error('5 NOT_FOUND'), { code: 5 });
      return { workerDeploymentInfo: { routingConfig: o.current === null ? { currentVersion: '__unversioned__' } : { currentDeploymentVersion: { deploymentName: 'lbaas', buildId: o.current } } } };
    },
  };
  return { client: { workflowService } as unknown as PickupClient, asked, queried };
}

const waiting = (sinceMs: number): Wf => ({ pendingWorkflowTask: { state: 1, originalScheduledTime: ts(NOW - sinceMs) } });
const versioned = (buildId: string, agoMs = 1_000): Poller => ({ lastAccessTime: ts(NOW - agoMs), deploymentOptions: { deploymentName: 'lbaas', buildId, workerVersioningMode: 2 } });
const ask = (client: PickupClient, workflowId = 'lbaas/u', minWaitMs = 15_000) => diagnosePickup(client, { namespace: 'ns', taskQueue: 'q', workflowId, minWaitMs, now: NOW });

test('a poller whose last poll is older than LIVE_POLLER_MS is gone: a stopped worker leaves no-worker, not workers-busy', async () => {
  const stale = fake({ workflows: { 'lbaas/u': waiting(20_000) }, pollers: [versioned('b1', LIVE_POLLER_MS + 1)], current: 'b1' });
  assert.equal((await ask(stale.client))?.reason, 'no-worker');
  const fresh = fake({ workflows: { 'lbaas/u': waiting(20_000) }, pollers: [versioned('b1', LIVE_POLLER_MS - 1)], current: 'b1' });
  const d = await ask(fresh.client);
  assert.equal(d?.reason, 'workers-busy');
  assert.equal(d?.lastPollAgoMs, LIVE_POLLER_MS - 1);
  assert.match(d?.message ?? '', /workers of build b1 polled task queue q 70 s ago but have not taken it \(busy workers, a backlog, or workers stopped within the last 70 s\)/);
});

test('the Current Version has no worker while another build polls: version-not-polled, not pinned; the fix offers both ways out', async () => {
  const f = fake({ workflows: { 'lbaas/u': waiting(20_000) }, pollers: [versioned('b2')], current: 'b1' });
  const d = await ask(f.client);
  assert.deepEqual([d?.reason, d?.pinned, d?.version], ['version-not-polled', false, { deploymentName: 'lbaas', buildId: 'b1' }]);
  assert.equal(d?.fix, 'start a worker of build b1 (LBAAS_BUILD_ID=b1), or make a polling build current: temporal worker deployment set-current-version --deployment-name lbaas --build-id b2');
});

test('no Current Version, but unversioned workers poll: they take the tasks, so a late task is workers-busy, not no-current-version', async () => {
  const f = fake({ workflows: { 'lbaas/u': waiting(20_000) }, pollers: [versioned('b1'), { lastAccessTime: ts(NOW - 1_000), deploymentOptions: null }], current: null });
  assert.equal((await ask(f.client))?.reason, 'workers-busy');
  const only = fake({ workflows: { 'lbaas/u': waiting(20_000) }, pollers: [versioned('b1')], current: null });
  assert.equal((await ask(only.client))?.reason, 'no-current-version');
});

test("a controller waiting on its pass: the pass's stuck activity is found through the pending children, pinned to its build", async () => {
  const pinned = { behavior: 1, deploymentVersion: { deploymentName: 'lbaas', buildId: 'old' } };
  const f = fake({
    workflows: {
      'lbaas/u': { pendingChildren: [{ workflowId: 'lbaas/u/pass/1', runId: 'r1' }] },
      'lbaas/u/pass/1': { versioningInfo: pinned, pendingActivities: [{ state: 1, scheduledTime: ts(NOW - 40_000), activityOptions: { taskQueue: { name: 'q' } } }] },
    },
    pollers: [versioned('new')],
    current: 'new',
  });
  const d = await ask(f.client);
  assert.deepEqual(
    [d?.reason, d?.workflowId, d?.task, d?.pinned, d?.waitingMs, d?.fix],
    [
      'version-not-polled',
      'lbaas/u/pass/1',
      'activity',
      true,
      40_000,
      'start a worker of build old (LBAAS_BUILD_ID=old), or let lbaas workers of the Current Version new take the run over: they do once nothing has polled old for 90 s, checking every 30 s (LBAAS_STRANDED_AFTER_SECONDS; an entity moves to their build, a pass is started again on it)',
    ],
  );
  assert.deepEqual(f.asked, ['lbaas/u', 'lbaas/u/pass/1']);
});

test('a run pinned to a build nobody polls: the take-over by the Current Version is offered only while that Version polls', async () => {
  const pinned = { versioningInfo: { behavior: 1, deploymentVersion: { deploymentName: 'lbaas', buildId: 'old' } } };
  const polled = await ask(fake({ workflows: { 'lbaas/u': { ...waiting(20_000), ...pinned } }, pollers: [versioned('new')], current: 'new' }).client);
  assert.deepEqual([polled?.reason, polled?.currentPolling], ['version-not-polled', { deploymentName: 'lbaas', buildId: 'new' }]);
  assert.match(polled?.message ?? '', /the run is pinned to lbaas\.old and no worker of that build polls task queue q \(builds polling: new\); fix: start a worker of build old .*, or let lbaas workers of the Current Version new take the run over: they do once nothing has polled old for 90 s/);

  // The Current Version is a third build nobody polls (only other workers of the Deployment do): no take-over offered.
  const notPolled = await ask(fake({ workflows: { 'lbaas/u': { ...waiting(20_000), ...pinned } }, pollers: [versioned('new')], current: 'newer' }).client);
  assert.deepEqual([notPolled?.reason, notPolled?.currentPolling, notPolled?.fix], ['version-not-polled', undefined, 'start a worker of build old (LBAAS_BUILD_ID=old)']);
  // No Current Version at all.
  const none = await ask(fake({ workflows: { 'lbaas/u': { ...waiting(20_000), ...pinned } }, pollers: [versioned('new')] }).client);
  assert.deepEqual([none?.reason, none?.currentPolling], ['version-not-polled', undefined]);
});

test('an activity waiting for its retry is not late before the retry is due; a busy activity queue is not reported (rate limits hold it back)', async () => {
  const retrying = fake({ workflows: { 'lbaas/u': { pendingActivities: [{ state: 1, scheduledTime: ts(NOW - 60_000), nextAttemptScheduleTime: ts(NOW - 5_000) }] } }, current: 'b1' });
  assert.equal(await ask(retrying.client), null);
  const busy = fake({ workflows: { 'lbaas/u': { pendingActivities: [{ state: 1, scheduledTime: ts(NOW - 60_000) }] } }, pollers: [versioned('b1')], current: 'b1' });
  assert.equal(await ask(busy.client), null);
});

test('nothing to say: a started task, a closed or unknown workflow, a task younger than asked', async () => {
  assert.equal(await ask(fake({ workflows: { 'lbaas/u': { pendingWorkflowTask: { state: 2, originalScheduledTime: ts(NOW - 60_000) } } } }).client), null);
  assert.equal(await ask(fake({ workflows: { 'lbaas/u': { ...waiting(60_000), closed: true } } }).client), null);
  assert.equal(await ask(fake({ workflows: {} }).client), null);
  assert.equal(await ask(fake({ workflows: { 'lbaas/u': waiting(14_000) } }).client), null);
});

test('KubePickupWatch: a waiting Service is reported once its task has waited, with a Warning Event, again after the repeat interval, blocking readiness; done forgets it', async () => {
  const f = fake({ workflows: { 'lbaas/u': waiting(20_000) }, current: 'b1' });
  const lines: string[] = [];
  const events: { svc: string; type: string; reason: string; message: string }[] = [];
  const watch = new KubePickupWatch({
    client: f.client,
    namespace: 'ns',
    taskQueue: 'q',
    log: (l) => lines.push(l),
    event: async (svc, type, reason, message) => void events.push({ svc: svc.metadata.name, type, reason, message }),
  });
  const svc = { metadata: { name: 'web', namespace: 'default', uid: 'u' } } as unknown as KubeService;
  watch.waiting('default/web', { workflowId: 'lbaas/u', service: svc, what: 'revision 1 of service u' }, NOW - 20_000);
  assert.equal(watch.blocking(), null, 'nothing known before a check');
  await watch.check(NOW);
  const message = 'workflow task of lbaas/u not picked up for 20 s: no worker polls task queue q; fix: start lbaas worker (LBAAS_TASK_QUEUE=q)';
  assert.deepEqual(lines, [`default/web: revision 1 of service u: ${message}`]);
  assert.deepEqual(events, [{ svc: 'web', type: 'Warning', reason: NOT_PICKED_UP_REASON, message }]);
  assert.equal(watch.blocking(), `workflows not picked up (1 waiting): default/web: ${message}`);
  assert.deepEqual(watch.counts(), { waiting: 1, notPickedUp: { 'no-worker': 1, 'no-current-version': 0, 'version-not-polled': 0, 'workers-busy': 0 } });
  await watch.check(NOW + 10_000);
  assert.equal(events.length, 1, 'not again within 30 s');
  await watch.check(NOW + 30_000);
  assert.equal(events.length, 2, 'again after 30 s');
  // Still waiting on the same workflow (the revision became known): not a new wait.
  watch.waiting('default/web', { workflowId: 'lbaas/u', service: svc, what: 'revision 2 of service u' }, NOW + 31_000);
  assert.notEqual(watch.blocking(), null);
  watch.done('default/web');
  assert.equal(watch.blocking(), null);
  assert.deepEqual(watch.counts().waiting, 0);
  assert.equal(lines.at(-1), 'default/web: revision 2 of service u: its workflow was picked up or the wait ended');
});

test('KubePickupWatch: busy workers (a backlog) are logged and counted but give the Service no Warning Event, and do not block readiness', async () => {
  const f = fake({ workflows: { 'lbaas/u': waiting(20_000) }, pollers: [versioned('b1')], current: 'b1' });
  const lines: string[] = [];
  const events: string[] = [];
  const watch = new KubePickupWatch({ client: f.client, namespace: 'ns', taskQueue: 'q', log: (l) => lines.push(l), event: async (svc, _t, reason) => void events.push(`${svc.metadata.name} ${reason}`) });
  const svc = { metadata: { name: 'web', namespace: 'default', uid: 'u' } } as unknown as KubeService;
  watch.waiting('default/web', { workflowId: 'lbaas/u', service: svc, what: 'revision 1 of service u' }, NOW - 20_000);
  await watch.check(NOW);
  assert.equal(lines.length, 1);
  assert.match(lines[0] as string, /^default\/web: revision 1 of service u: /);
  assert.deepEqual(events, []);
  assert.equal(watch.blocking(), null);
  assert.deepEqual(watch.counts(), { waiting: 1, notPickedUp: { 'no-worker': 0, 'no-current-version': 0, 'version-not-polled': 0, 'workers-busy': 1 } });
});

test('KubePickupWatch: one round of checks asks about the task queue and the Deployment once for all its waits, the next round again', async () => {
  const f = fake({ workflows: { 'lbaas/u1': waiting(20_000), 'lbaas/u2': waiting(20_000), 'lbaas/u3': waiting(20_000) }, pollers: [versioned('b1')], current: 'b1' });
  const lines: string[] = [];
  const watch = new KubePickupWatch({ client: f.client, namespace: 'ns', taskQueue: 'q', log: (l) => lines.push(l), event: async () => undefined, repeatMs: 0 });
  for (const u of ['u1', 'u2', 'u3']) watch.waiting(`default/${u}`, { workflowId: `lbaas/${u}`, what: `revision 1 of service ${u}` }, NOW - 20_000);
  const count = (what: string) => [...f.asked, ...f.queried].filter((a) => a === what).length;
  await watch.check(NOW);
  assert.deepEqual([count('lbaas/u1'), count('lbaas/u2'), count('lbaas/u3'), count('describeTaskQueue'), count('describeWorkerDeployment')], [1, 1, 1, 1, 1]);
  assert.equal(lines.filter((l) => /workers of build b1 polled task queue q .* but have not taken it/.test(l)).length, 3, lines.join('\n'));
  assert.deepEqual(watch.counts().notPickedUp['workers-busy'], 3);
  await watch.check(NOW + 5_000);
  assert.deepEqual([count('describeTaskQueue'), count('describeWorkerDeployment')], [2, 2]);
});

test('KubePickupWatch: while no wait is known to be blocked a check looks at 5 waits, the least recently checked; once one is blocked, at 25', async () => {
  const o: Parameters<typeof fake>[0] = { workflows: Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`lbaas/u${i}`, waiting(20_000)])), pollers: [versioned('b1')], current: 'b1' };
  const f = fake(o);
  const watch = new KubePickupWatch({ client: f.client, namespace: 'ns', taskQueue: 'q', log: () => undefined, event: async () => undefined });
  for (let i = 0; i < 30; i++) watch.waiting(`default/s${i}`, { workflowId: `lbaas/u${i}`, what: `revision 1 of service u${i}` }, NOW - 20_000);
  const ids = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `lbaas/u${from + i}`);
  // Busy workers block nothing: 5 waits per check.
  await watch.check(NOW);
  assert.deepEqual(f.asked, ids(0, 5));
  await watch.check(NOW + 5_000);
  assert.deepEqual(f.asked.slice(5), ids(5, 10));
  assert.equal(watch.counts().notPickedUp['workers-busy'], 10);
  // The workers stop: the next 5 looked at find no worker, and the check after that looks at 25.
  o.pollers = [];
  await watch.check(NOW + 10_000);
  assert.deepEqual(f.asked.slice(10), ids(10, 15));
  assert.notEqual(watch.blocking(), null);
  await watch.check(NOW + 15_000);
  assert.deepEqual(f.asked.slice(15), [...ids(15, 30), ...ids(0, 10)]);
  assert.equal(watch.counts().notPickedUp['no-worker'], 30, 'every wait has been looked at since the workers stopped');
});

test('KubePickupWatch: a wait younger than the report delay is not even looked at', async () => {
  const f = fake({ workflows: { 'lbaas/u': waiting(20_000) }, current: 'b1' });
  const watch = new KubePickupWatch({ client: f.client, namespace: 'ns', taskQueue: 'q', log: () => undefined, event: async () => undefined });
  watch.waiting('default/web', { workflowId: 'lbaas/u', what: 'x' }, NOW - 5_000);
  await watch.check(NOW);
  assert.deepEqual(f.asked, []);
});

test('KubePickupWatch: a Service behind the node pool shares its diagnosis and gets its own Event; it stays across a failed attempt and ends with a successful one', async () => {
  const f = fake({ workflows: { 'lbaas-pool/k8s-c': waiting(20_000) }, current: 'b1' });
  const events: string[] = [];
  const watch = new KubePickupWatch({ client: f.client, namespace: 'ns', taskQueue: 'q', log: () => undefined, event: async (svc, _t, reason) => void events.push(`${svc.metadata.name} ${reason}`) });
  const svc = { metadata: { name: 'web', namespace: 'default', uid: 'u' } } as unknown as KubeService;
  watch.waiting(':node-pool', { workflowId: 'lbaas-pool/k8s-c', what: 'node pool k8s-c' }, NOW - 20_000);
  watch.waiting('default/web', { behind: ':node-pool', service: svc, what: 'waiting for the node pool k8s-c' }, NOW - 20_000);
  await watch.check(NOW);
  assert.deepEqual(events, [`web ${NOT_PICKED_UP_REASON}`]);
  assert.deepEqual(watch.counts(), { waiting: 2, notPickedUp: { 'no-worker': 2, 'no-current-version': 0, 'version-not-polled': 0, 'workers-busy': 0 } });
  assert.deepEqual(f.asked, ['lbaas-pool/k8s-c'], 'the Service behind it costs no describe');
  watch.done(':node-pool', false);
  assert.equal(watch.counts().waiting, 1, 'kept after a failed attempt');
  watch.waiting(':node-pool', { workflowId: 'lbaas-pool/k8s-c', what: 'node pool k8s-c' }, NOW);
  watch.done(':node-pool');
  assert.equal(watch.counts().waiting, 0, 'ended with the successful one');
});

test('KubeHealth: 503 until the informers have listed; /metrics has every gauge, every reason at 0 when nothing waits', () => {
  const h = new KubeHealth();
  assert.equal(h.live(), null);
  assert.equal(h.ready(), 'starting: the Service and Node informers have not listed yet');
  assert.equal(
    h.metrics(),
    [
      '# HELP lbaas_kube_informers_synced 1 once the Service and Node informers have listed.',
      '# TYPE lbaas_kube_informers_synced gauge',
      'lbaas_kube_informers_synced 0',
      '# HELP lbaas_kube_leader 1 while this process holds the lease and acts.',
      '# TYPE lbaas_kube_leader gauge',
      'lbaas_kube_leader 0',
      '# HELP lbaas_kube_workflows_waiting Services (and the node pool) whose sync waits on a workflow.',
      '# TYPE lbaas_kube_workflows_waiting gauge',
      'lbaas_kube_workflows_waiting 0',
      '# HELP lbaas_kube_workflows_not_picked_up Waits whose workflow has a task that no worker took for 10 s or more, by reason (client/pickup.ts).',
      '# TYPE lbaas_kube_workflows_not_picked_up gauge',
      'lbaas_kube_workflows_not_picked_up{reason="no-worker"} 0',
      'lbaas_kube_workflows_not_picked_up{reason="no-current-version"} 0',
      'lbaas_kube_workflows_not_picked_up{reason="version-not-polled"} 0',
      'lbaas_kube_workflows_not_picked_up{reason="workers-busy"} 0',
      '',
    ].join('\n'),
  );
  h.failed = 'lease lost';
  assert.equal(h.live(), 'controller failed: lease lost');
});
