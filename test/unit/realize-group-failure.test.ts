/**
 * A realizeObjects group whose member fails: the attempt must not end while a sibling's create is still on its way.
 *
 * Found by the cluster chaos run: an attempt that failed on one member's request returned at once, while another
 * member's POST waited in the worker's request pacer. That POST landed after the retry had listed the look-alikes
 * (so the retry created a second object), and its tag request, which nobody followed up any more, failed: an
 * untagged Server stayed on the Engine.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DeployTimes } from '../../activities/deploy-times';
import { EngineNotFoundError, EngineServerError, type EngineClient } from '../../activities/engine';
import { IdentifierCache } from '../../activities/memory';
import { realizeObjects } from '../../activities/realize';

const BACKEND = 'b'.repeat(32);
const UID = 'group-failure-uid';
const TAG = `anxccm-svc-uid=${UID}`;

const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * An Engine for Servers under one Backend: the POST of `failing` is refused with a 503 after `failMs`, other POSTs are
 * answered after `postMs`; objects stay NewlyCreated (a long deploy). Records every object, its tags, and the
 * requests still unanswered.
 */
function fakeEngine(o: { failing: string; postMs: number; failMs?: number }) {
  const objects = new Map<string, { name: string; tags: string[] }>();
  let inFlight = 0;
  let posts = 0;
  let gets = 0;
  const answer = async <T>(ms: number, body: () => T): Promise<T> => {
    inFlight++;
    try {
      await wait(ms);
      return body();
    } finally {
      inFlight--;
    }
  };
  const engine = {
    list: () => answer(0, () => [...objects].map(([identifier, v]) => ({ identifier, name: v.name }))),
    async create(_kind: string, body: { name: string }) {
      posts++;
      if (body.name === o.failing)
        return answer(o.failMs ?? 0, () => {
          throw new EngineServerError({ method: 'POST', path: '/api/LBaaS/v1/server.json', status: 503 });
        });
      return answer(o.postMs, () => {
        const identifier = String(objects.size + 1).padStart(32, '0');
        objects.set(identifier, { name: body.name, tags: [] });
        return { identifier, name: body.name, state: { id: '4', type: 4 } };
      });
    },
    get: (_kind: string, id: string) =>
      answer(0, () => {
        gets++;
        if (!objects.has(id)) throw new EngineNotFoundError({ method: 'GET', path: `/api/LBaaS/v1/server.json/${id}`, status: 404 });
        return { identifier: id, state: { id: '4', text: 'NewlyCreated' } };
      }),
    getResource: (id: string) => answer(0, () => ({ identifier: id, tags: objects.get(id)?.tags ?? [] })),
    tag: (id: string, tag: string) => answer(20, () => void objects.get(id)?.tags.push(tag)),
  } as unknown as EngineClient;
  return { engine, objects, inFlight: () => inFlight, posts: () => posts, gets: () => gets };
}

const member = (server: string) => ({
  key: `server/${server}`,
  fields: { name: `${server}.http.svc.test`, backend: BACKEND, ip: '10.0.0.1', port: 30080, check: 'enabled' as const },
});

const realize = (engine: EngineClient, members: ReturnType<typeof member>[]) =>
  realizeObjects(engine, new IdentifierCache(), new DeployTimes(), { serviceUid: UID, loadBalancer: 'lb', kind: 'server', members }, { windowMs: 60_000 });

test('a member fails while a sibling POST is on its way: the attempt fails with that error only after the sibling is created and tagged, with no request left unanswered', async () => {
  const e = fakeEngine({ failing: 'node-1.http.svc.test', postMs: 300 });
  await assert.rejects(realize(e.engine, [member('node-1'), member('node-2')]), (err: unknown) => err instanceof EngineServerError && err.status === 503);
  assert.equal(e.inFlight(), 0, 'no Engine request still unanswered when the attempt ended');
  assert.deepEqual(
    [...e.objects.values()].map((v) => ({ name: v.name, tags: v.tags })),
    [{ name: 'node-2.http.svc.test', tags: [TAG] }],
  );
});

test("a member fails while a sibling waits for its deploy: the sibling's readiness watch stops then instead of polling out the 60 s window", async () => {
  // node-2 is created and tagged at once and deploys "forever" (first poll 250 ms after); node-1's POST fails at 1 s.
  const e = fakeEngine({ failing: 'node-1.http.svc.test', postMs: 0, failMs: 1000 });
  await assert.rejects(realize(e.engine, [member('node-1'), member('node-2')]), EngineServerError);
  const polled = e.gets();
  // The prior schedule polls a few times within the first second (250 ms, then growing gaps); a watch that went on
  // to the window's end would poll dozens of times.
  assert.ok(polled >= 1 && polled <= 5, `node-2 polled ${polled} times before the attempt failed`);
  await wait(1500);
  assert.equal(e.gets(), polled, 'no poll after the attempt ended');
  assert.equal(e.inFlight(), 0);
  assert.equal(e.posts(), 2);
});
