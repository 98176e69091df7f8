/**
 * Announced members of a realizeObjects group (RealizeObjectsInput.announce; docs/architecture.md, "Announced
 * parents"): the end of such a member's deploy is reported as announced (the worker signals it at once) while a
 * sibling still deploys, and not when it is the last one (the group's result follows at once).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DeployTimes } from '../../activities/deploy-times';
import type { EngineClient } from '../../activities/engine';
import { IdentifierCache } from '../../activities/memory';
import { realizeObjects, type MemberProgress } from '../../activities/realize';

const LB = 'c'.repeat(32);

/** Backends that deploy in `deployMs[name]` ms from their create; lists are empty, tags succeed. */
function fakeEngine(deployMs: Record<string, number>) {
  const created = new Map<string, { name: string; at: number }>();
  return {
    list: async () => [],
    async create(_kind: string, body: { name: string }) {
      const identifier = String(created.size + 1).padStart(32, '0');
      created.set(identifier, { name: body.name, at: Date.now() });
      return { identifier, name: body.name, state: { id: '4', type: 4 } };
    },
    async get(_kind: string, id: string) {
      const o = created.get(id) as { name: string; at: number };
      const done = Date.now() - o.at >= (deployMs[o.name] ?? 0);
      return { identifier: id, state: done ? { id: '3', text: 'Deployed' } : { id: '4', text: 'NewlyCreated' } };
    },
    getResource: async (id: string) => ({ identifier: id, tags: [] }),
    tag: async () => {},
  } as unknown as EngineClient;
}

const backend = (port: string) => ({ key: `backend:${port}`, fields: { name: `${port}.svc.test`, load_balancer: LB, mode: 'tcp', health_check: '' } });

async function settledReports(deployMs: Record<string, number>, announce: string[]): Promise<MemberProgress[]> {
  const reports: MemberProgress[] = [];
  await realizeObjects(
    fakeEngine(deployMs),
    new IdentifierCache(),
    new DeployTimes(),
    { serviceUid: 'announce-uid', loadBalancer: LB, kind: 'backend', members: [backend('http'), backend('https')] as never, announce },
    { windowMs: 10_000, onProgress: (m) => reports.push(m) },
  );
  return reports.filter((m) => m.settled);
}

test('an announced member that is ready while its sibling still deploys is reported announced; the last one is not', async () => {
  const reports = await settledReports({ 'http.svc.test': 100, 'https.svc.test': 900 }, ['backend:http', 'backend:https']);
  assert.deepEqual(
    reports.map((m) => [m.key, m.state, m.announced === true]),
    [
      ['backend:http', 'Deployed', true],
      ['backend:https', 'Deployed', false],
    ],
  );
});

test('a member not named in announce is never reported announced', async () => {
  const reports = await settledReports({ 'http.svc.test': 100, 'https.svc.test': 900 }, ['backend:https']);
  assert.deepEqual(
    reports.map((m) => [m.key, m.announced === true]),
    [
      ['backend:http', false],
      ['backend:https', false],
    ],
  );
});
