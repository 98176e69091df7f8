import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyState, describePlan, isPlanEmpty, planSummary, type Action, type Plan, type StateName } from '../../domain';

const LB = '6f0c3d2e9a8b4c7d8e9f0a1b2c3d4e5f';
const ID = '1234abcd'.repeat(4);

function planWith(actions: Action[], destroy: Plan['destroy'] = []): Plan {
  return {
    loadBalancer: LB,
    objects: actions.map((action, i) => ({
      desired: { kind: 'backend', key: `backend:p${i}`, name: `p${i}.web`, port: `p${i}`, parent: null, fields: { name: `p${i}.web`, mode: 'tcp', health_check: '', load_balancer: LB } },
      action,
    })),
    destroy,
  };
}

describe('classifyState', () => {
  const table: [StateName, string][] = [
    ['Deployed', 'ok'],
    ['Updated', 'ok'],
    ['NewlyCreated', 'progressing'],
    ['Updating', 'progressing'],
    ['Unknown', 'progressing'],
    ['DeploymentError', 'failed'],
  ];
  for (const [state, cls] of table) test(`${state} is ${cls}`, () => assert.equal(classifyState(state), cls));
});

describe('isPlanEmpty', () => {
  test('only keeps and no destroys is empty (converged); no objects at all is empty too', () => {
    assert.equal(isPlanEmpty(planWith([{ type: 'keep', identifier: ID }])), true);
    assert.equal(isPlanEmpty(planWith([])), true);
  });
  const busy: [string, Plan][] = [
    ['a create', planWith([{ type: 'keep', identifier: ID }, { type: 'create' }])],
    ['a wait', planWith([{ type: 'wait', identifier: ID }])],
    ['a recover', planWith([{ type: 'recover', identifier: ID }])],
    ['a destroy', planWith([], [{ kind: 'bind', identifier: ID, name: 'v4.http.web', reason: 'not desired' }])],
  ];
  for (const [what, plan] of busy) test(`a plan with ${what} is not empty`, () => assert.equal(isPlanEmpty(plan), false));
});

describe('planSummary and describePlan', () => {
  const plan = planWith(
    [{ type: 'create' }, { type: 'keep', identifier: ID }, { type: 'wait', identifier: ID }, { type: 'recover', identifier: ID }, { type: 'create' }],
    [
      { kind: 'bind', identifier: ID, name: 'v4.http.old', reason: 'not desired' },
      { kind: 'backend', identifier: ID, name: 'http.old', reason: 'failed (recreate)' },
    ],
  );

  test('planSummary counts every action and every destroy', () => {
    assert.deepEqual(planSummary(plan), { create: 2, destroy: 2, recover: 1, wait: 1, keep: 1 });
  });

  test('describePlan lists destroys first, then the steps in dependency order, leaving out kept objects', () => {
    assert.deepEqual(describePlan(plan), [
      `destroy Bind v4.http.old (not desired) ${ID}`,
      `destroy Backend http.old (failed (recreate)) ${ID}`,
      'create Backend p0.web',
      `wait Backend p2.web ${ID}`,
      `recover Backend p3.web ${ID}`,
      'create Backend p4.web',
    ]);
  });

  test('describePlan lists kept objects too when asked', () => {
    assert.deepEqual(describePlan(plan, { includeKept: true }).slice(2, 4), ['create Backend p0.web', `keep Backend p1.web ${ID}`]);
  });
});
