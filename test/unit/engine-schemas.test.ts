import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { STATE_NAME_BY_ID, stateName, stateNameFromId, toUpdateBody, type EngineBind, type EngineServer } from '../../activities/engine';

describe('state names', () => {
  const known: [string, string][] = [
    ['0', 'Updating'],
    ['1', 'Updated'],
    ['2', 'DeploymentError'],
    ['3', 'Deployed'],
    ['4', 'NewlyCreated'],
  ];
  for (const [id, name] of known) {
    test(`state id "${id}" is ${name}`, () => {
      assert.equal(stateNameFromId(id), name);
      assert.equal(stateName({ id }), name);
    });
  }

  test('ids outside docs/engine-api.md#states are Unknown, including prototype keys and titles', () => {
    for (const id of ['5', '', ' 3', '03', 'Deployed', 'toString', '__proto__', 'constructor']) {
      assert.equal(stateNameFromId(id), 'Unknown', `id ${JSON.stringify(id)}`);
    }
  });

  test('the state table is frozen', () => {
    assert.ok(Object.isFrozen(STATE_NAME_BY_ID));
  });
});

describe('toUpdateBody', () => {
  test('turns a bind as read into a PUT body: reference to bare id, state "0", null fields left out', () => {
    const bind: EngineBind = {
      identifier: 'd'.repeat(32),
      name: 'v4.http',
      state: { id: '2', title: 'DeploymentError', text: 'DeploymentError', type: 0 },
      customer_identifier: null,
      automation_rules: [],
      frontend: { identifier: 'f'.repeat(32), name: 'http' },
      address: '192.0.2.1',
      port: 443,
      ssl: true,
      ssl_certificate_path: '/etc/ssl/x.pem',
    };
    assert.deepEqual(toUpdateBody('bind', bind), {
      identifier: 'd'.repeat(32),
      name: 'v4.http',
      automation_rules: [],
      frontend: 'f'.repeat(32),
      address: '192.0.2.1',
      port: 443,
      ssl: true,
      ssl_certificate_path: '/etc/ssl/x.pem',
      state: '0',
    });
  });

  test('turns a server reference to its backend into the bare backend id', () => {
    const server: EngineServer = {
      identifier: 'e'.repeat(32),
      name: 'n1',
      state: { id: '3', title: 'Deployed', type: 1 },
      backend: { identifier: 'b'.repeat(32), name: 'http' },
      ip: '10.0.0.1',
      port: 30080,
      check: 'enabled',
    };
    assert.deepEqual(toUpdateBody('server', server), {
      identifier: 'e'.repeat(32),
      name: 'n1',
      backend: 'b'.repeat(32),
      ip: '10.0.0.1',
      port: 30080,
      check: 'enabled',
      state: '0',
    });
  });
});
