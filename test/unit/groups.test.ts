/**
 * The act step's groups and their schedule (workflows/groups.ts): siblings grouped by parent, kind and action,
 * bounded in size; a group starts once its parent is ready, in the order parents were decided, and never when its
 * parent's group failed or the parent did not deploy.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Action, Plan, PlannedObject } from '../../domain';
import { groupsOf, GroupSchedule, PARENT_GROUPS, type Group } from '../../workflows/groups';

const LB = 'l'.repeat(32);

function planned(key: string, kind: PlannedObject['desired']['kind'], parent: string | null, action: Action): PlannedObject {
  return { desired: { kind, key, name: key, port: '', parent, fields: {} } as PlannedObject['desired'], action };
}

/** Backend b (created) with Servers s1..s3 (created) and a Frontend f (kept) with Binds f/x (created) and f/y (waited for). */
function plan(): Plan {
  return {
    loadBalancer: LB,
    destroy: [],
    objects: [
      planned('b', 'backend', null, { type: 'create' }),
      planned('f', 'frontend', 'b', { type: 'keep', identifier: 'F' }),
      planned('s1', 'server', 'b', { type: 'create' }),
      planned('s2', 'server', 'b', { type: 'create' }),
      planned('s3', 'server', 'b', { type: 'create' }),
      planned('f/x', 'bind', 'f', { type: 'create' }),
      planned('f/y', 'bind', 'f', { type: 'wait', identifier: 'Y' }),
    ],
  };
}

describe('groupsOf', () => {
  test('groups siblings by parent, kind and action in plan order; kept objects are in none', () => {
    const groups = groupsOf(plan(), 1000).map((g) => ({ parent: g.parent, kind: g.kind, creating: g.creating, members: g.members.map((m) => m.desired.key) }));
    assert.deepEqual(groups, [
      { parent: null, kind: 'backend', creating: true, members: ['b'] },
      { parent: 'b', kind: 'server', creating: true, members: ['s1', 's2', 's3'] },
      { parent: 'f', kind: 'bind', creating: true, members: ['f/x'] },
      { parent: 'f', kind: 'bind', creating: false, members: ['f/y'] },
    ]);
  });

  test('parents that children wait for get groups of their own, at most PARENT_GROUPS per family; parents with nothing waiting on them stay together', () => {
    const backends = (n: number, withChildren: boolean): Plan => ({
      loadBalancer: LB,
      destroy: [],
      objects: Array.from({ length: n }, (_, i) => [
        planned(`b${i}`, 'backend', null, { type: 'create' }),
        planned(`b${i}/s`, 'server', `b${i}`, withChildren ? { type: 'create' } : { type: 'keep', identifier: `S${i}` }),
      ]).flat(),
    });
    const backendGroups = (p: Plan, max = 1000) => groupsOf(p, max).filter((g) => g.kind === 'backend').map((g) => g.members.length);
    // Two ports: each Backend's Frontend and Servers start as soon as that Backend is ready.
    assert.deepEqual(backendGroups(backends(2, true)), [1, 1]);
    assert.equal(PARENT_GROUPS, 16);
    assert.deepEqual(backendGroups(backends(16, true)), Array(16).fill(1));
    // 40 Backends: 16 groups of 3 at most (ceil(40 / 16)), in plan order.
    assert.deepEqual(backendGroups(backends(40, true)), [...Array(13).fill(3), 1]);
    assert.deepEqual(backendGroups(backends(1024, true)), Array(16).fill(64));
    // maxMembers still bounds a group.
    assert.deepEqual(backendGroups(backends(40, true), 2), Array(20).fill(2));
    // Every child kept: nothing waits on the Backends, one group as before.
    assert.deepEqual(backendGroups(backends(40, false)), [40]);
  });

  test('a family larger than maxMembers is split into groups of at most that many', () => {
    const sizes = groupsOf(plan(), 2).filter((g) => g.kind === 'server').map((g) => g.members.map((m) => m.desired.key));
    assert.deepEqual(sizes, [['s1', 's2'], ['s3']]);
  });
});

describe('GroupSchedule', () => {
  const keys = (g: Group) => g.members.map((m) => m.desired.key).join(',');

  test('groups start as their parents are decided: children of a parent in plan order, kept parents with their own parent', () => {
    const s = new GroupSchedule(plan(), LB, 1000);
    const first = s.next();
    assert.deepEqual(first && { members: keys(first.group), parentId: first.parentId }, { members: 'b', parentId: LB });
    assert.equal(s.next(), undefined, 'nothing else is released before the Backend is ready');
    assert.equal(s.idOf('f'), undefined, 'kept, but its parent is not decided');
    s.ended(first!.group, new Map([['b', 'B']]));
    assert.equal(s.idOf('f'), 'F');
    const order: string[] = [];
    for (let n = s.next(); n; n = s.next()) order.push(`${keys(n.group)}@${n.parentId}`);
    // The Backend's own children first (its Servers), then those of the kept Frontend released with it.
    assert.deepEqual(order, ['s1,s2,s3@B', 'f/x@F', 'f/y@F']);
  });

  test("a parent that did not deploy, or whose group failed, is not ready this round: its children's groups never start", () => {
    for (const outcome of [new Map([['b', null]]), null]) {
      const s = new GroupSchedule(plan(), LB, 1000);
      s.ended(s.next()!.group, outcome);
      assert.equal(s.next(), undefined);
      assert.equal(s.idOf('b'), null);
      assert.equal(s.idOf('f'), null);
      assert.equal(s.idOf('f/x'), null, 'its grandchildren are decided too: not ready');
    }
  });

  test('drop: released groups not started yet never start (a cancelled round)', () => {
    const s = new GroupSchedule(plan(), LB, 1000);
    s.ended(s.next()!.group, new Map([['b', 'B']]));
    s.drop();
    assert.equal(s.next(), undefined);
  });
});
