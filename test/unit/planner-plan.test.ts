/**
 * Unit tests of planLoadBalancer over the example service, for each failed-resources policy and for failed objects.
 * (Longer than 300 lines: every case builds on the same desired/observed fixtures and plan renderings at the top.)
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  desiredObjects,
  isPlanEmpty,
  planLoadBalancer,
  validateSpec,
  type DesiredObject,
  type FailedResourcesPolicy,
  type ObservedObject,
  type Plan,
  type StateName,
} from '../../domain';

const LB = '6f0c3d2e9a8b4c7d8e9f0a1b2c3d4e5f';
const POLICIES: readonly FailedResourcesPolicy[] = ['recover', 'recreate'];
const S = 'web.default.prod';

function desired(patch: Record<string, unknown> = {}): DesiredObject[] {
  const result = validateSpec({
    serviceUid: '9a5f0c1e-3b7d-4c7a-9d8e-0f1a2b3c4d5e',
    nameSuffix: S,
    loadBalancers: [LB],
    externalAddresses: ['203.0.113.10', '2001:db8::10'],
    ports: { http: { external: 80, internal: 30080 }, https: { external: 443, internal: 30443 } },
    servers: [
      { name: 'node-1', address: '10.0.0.11' },
      { name: 'node-2', address: '10.0.0.12' },
    ],
    ...patch,
  });
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return desiredObjects(result.spec, LB);
}

/** Engine identifiers are 32 hex digits; `id(n)` is n in hex, zero-padded. */
function id(n: number): string {
  return n.toString(16).padStart(32, '0');
}

/**
 * Existing objects that match `objects` exactly, tagged, in `state`, with identifiers id(first), id(first + 1), ...
 * in desired order (for the example of docs/spec.md#format: 1-2 Backends http/https, 3-4 Frontends, 5-8 Binds http
 * v4/v6, https v4/v6, 9-12 Servers http node-1/node-2, https node-1/node-2).
 */
function existing(objects: readonly DesiredObject[], first = 1, state: StateName = 'Deployed'): ObservedObject[] {
  const ids = new Map<string, string>();
  return objects.map((d, i) => {
    const identifier = id(first + i);
    ids.set(d.key, identifier);
    return observed(d, identifier, d.parent === null ? '' : (ids.get(d.parent) ?? ''), state);
  });
}

function observed(d: DesiredObject, identifier: string, parentId: string, state: StateName, tagged = true): ObservedObject {
  const base = { identifier, name: d.name, state, tagged };
  switch (d.kind) {
    case 'backend':
      return { ...base, kind: 'backend', fields: { ...d.fields } };
    case 'frontend':
      return { ...base, kind: 'frontend', fields: { ...d.fields, default_backend: parentId } };
    case 'bind':
      return { ...base, kind: 'bind', fields: { ...d.fields, frontend: parentId } };
    case 'server':
      return { ...base, kind: 'server', fields: { ...d.fields, backend: parentId } };
  }
}

/** The same objects with one of them (by identifier) changed. */
function withChange(objects: ObservedObject[], identifier: string, change: (o: ObservedObject) => ObservedObject): ObservedObject[] {
  return objects.map((o) => (o.identifier === identifier ? change(o) : o));
}

function plan(objects: ObservedObject[], policy: FailedResourcesPolicy, want = desired()): Plan {
  return planLoadBalancer(want, { loadBalancer: LB, objects }, policy);
}

/** `key action [identifier]` per desired object. */
function actions(p: Plan): string[] {
  return p.objects.map(({ desired: d, action }) => (action.type === 'create' ? `${d.key} create` : `${d.key} ${action.type} ${action.identifier}`));
}

/** `Kind name (reason) identifier` per destroy, in plan order. */
function destroys(p: Plan): string[] {
  return p.destroy.map((d) => `${d.kind} ${d.name} (${d.reason}) ${d.identifier}`);
}

/** Every desired key of the example with `keep <id(i + 1)>`, except the overrides. */
function keptExcept(overrides: Record<string, string> = {}): string[] {
  return desired().map((d, i) => `${d.key} ${overrides[d.key] ?? `keep ${id(i + 1)}`}`);
}

for (const policy of POLICIES) {
  describe(`planLoadBalancer, policy ${policy}`, () => {
    test('an empty snapshot creates every desired object in dependency order and destroys nothing', () => {
      const p = plan([], policy);
      assert.deepEqual(actions(p), desired().map((d) => `${d.key} create`));
      assert.deepEqual(p.destroy, []);
      assert.equal(p.loadBalancer, LB);
    });

    test('an exact match keeps every object, so the plan is empty', () => {
      const p = plan(existing(desired()), policy);
      assert.deepEqual(actions(p), keptExcept());
      assert.deepEqual(p.destroy, []);
      assert.equal(isPlanEmpty(p), true);
    });

    test('untagged objects are never matched nor destroyed, even exact copies and failed ones', () => {
      const foreign = existing(desired(), 0x100, 'DeploymentError').map((o) => ({ ...o, tagged: false }));
      assert.deepEqual(actions(plan(foreign, policy)), desired().map((d) => `${d.key} create`));
      assert.deepEqual(plan(foreign, policy).destroy, []);
      const p = plan([...foreign, ...existing(desired())], policy);
      assert.equal(isPlanEmpty(p), true);
    });

    test('duplicates: the ready one is kept over a smaller-identifier pending or failed copy, the copies are destroyed', () => {
      const [backendHttp, , frontendHttp, , bindV4Http] = desired();
      assert.ok(backendHttp && frontendHttp && bindV4Http);
      const main = existing(desired(), 0x10);
      const copies = [
        observed(backendHttp, id(1), '', 'NewlyCreated'),
        observed(bindV4Http, id(2), id(0x12), 'DeploymentError'),
      ];
      const p = plan([...copies, ...main], policy);
      assert.deepEqual(actions(p), desired().map((d, i) => `${d.key} keep ${id(0x10 + i)}`));
      assert.deepEqual(destroys(p), [`bind v4.http.${S} (duplicate) ${id(2)}`, `backend http.${S} (duplicate) ${id(1)}`]);
    });

    test('equally ready duplicates: the one with more matching children wins, then the smallest identifier', () => {
      const all = desired();
      const serverHttpNode1 = all.find((d) => d.key === 'server:http:node-1');
      assert.ok(all[0] && serverHttpNode1);
      const childless = observed(all[0], id(0x01), '', 'Deployed');
      const laterServer = observed(serverHttpNode1, id(0x40), id(0x10), 'Deployed');
      const p = plan([childless, laterServer, ...existing(all, 0x10)], policy);
      assert.deepEqual(actions(p), all.map((d, i) => `${d.key} keep ${id(0x10 + i)}`));
      assert.deepEqual(destroys(p), [`server node-1.http.${S} (duplicate) ${id(0x40)}`, `backend http.${S} (duplicate) ${id(0x01)}`]);
    });

    test('a renamed port destroys the old port objects (dependents first) and creates the new ones', () => {
      const renamed = desired({ ports: { web: { external: 80, internal: 30080 }, https: { external: 443, internal: 30443 } } });
      const p = plan(existing(desired()), policy, renamed);
      assert.deepEqual(actions(p), [
        `backend:https keep ${id(2)}`,
        'backend:web create',
        `frontend:https keep ${id(4)}`,
        'frontend:web create',
        `bind:https:203.0.113.10 keep ${id(7)}`,
        `bind:https:2001:db8::10 keep ${id(8)}`,
        'bind:web:203.0.113.10 create',
        'bind:web:2001:db8::10 create',
        `server:https:node-1 keep ${id(11)}`,
        `server:https:node-2 keep ${id(12)}`,
        'server:web:node-1 create',
        'server:web:node-2 create',
      ]);
      assert.deepEqual(destroys(p), [
        `bind v4.http.${S} (not desired) ${id(5)}`,
        `bind v6.http.${S} (not desired) ${id(6)}`,
        `server node-1.http.${S} (not desired) ${id(9)}`,
        `server node-2.http.${S} (not desired) ${id(10)}`,
        `frontend http.${S} (not desired) ${id(3)}`,
        `backend http.${S} (not desired) ${id(1)}`,
      ]);
    });

    test('a renamed server replaces that server on every port', () => {
      const servers = [{ name: 'node-1', address: '10.0.0.11' }, { name: 'node-3', address: '10.0.0.12' }];
      const p = plan(existing(desired()), policy, desired({ servers }));
      assert.deepEqual(actions(p).slice(8), [`server:http:node-1 keep ${id(9)}`, 'server:http:node-3 create', `server:https:node-1 keep ${id(11)}`, 'server:https:node-3 create']);
      assert.deepEqual(actions(p).slice(0, 8), keptExcept().slice(0, 8));
      assert.deepEqual(destroys(p), [`server node-2.http.${S} (not desired) ${id(10)}`, `server node-2.https.${S} (not desired) ${id(12)}`]);
    });

    test('a changed external port replaces that port\'s Binds and keeps its Frontend', () => {
      const ports = { http: { external: 8080, internal: 30080 }, https: { external: 443, internal: 30443 } };
      const p = plan(existing(desired()), policy, desired({ ports }));
      assert.deepEqual(actions(p), keptExcept({ 'bind:http:203.0.113.10': 'create', 'bind:http:2001:db8::10': 'create' }));
      assert.deepEqual(destroys(p), [`bind v4.http.${S} (not desired) ${id(5)}`, `bind v6.http.${S} (not desired) ${id(6)}`]);
    });

    test('a changed internal port replaces that port\'s Servers and keeps its Backend', () => {
      const ports = { http: { external: 80, internal: 31080 }, https: { external: 443, internal: 30443 } };
      const p = plan(existing(desired()), policy, desired({ ports }));
      assert.deepEqual(actions(p), keptExcept({ 'server:http:node-1': 'create', 'server:http:node-2': 'create' }));
      assert.deepEqual(destroys(p), [`server node-1.http.${S} (not desired) ${id(9)}`, `server node-2.http.${S} (not desired) ${id(10)}`]);
    });

    test('a drifted Backend health_check replaces the Backend and everything that links to it', () => {
      const drifted = withChange(existing(desired()), id(1), (o) =>
        o.kind === 'backend' ? { ...o, fields: { ...o.fields, health_check: '"adv_check": "httpchk"' } } : o,
      );
      const p = plan(drifted, policy);
      const http = ['backend:http', 'frontend:http', 'bind:http:203.0.113.10', 'bind:http:2001:db8::10', 'server:http:node-1', 'server:http:node-2'];
      assert.deepEqual(actions(p), keptExcept(Object.fromEntries(http.map((k) => [k, 'create']))));
      assert.deepEqual(destroys(p), [
        `bind v4.http.${S} (parent replaced) ${id(5)}`,
        `bind v6.http.${S} (parent replaced) ${id(6)}`,
        `server node-1.http.${S} (parent replaced) ${id(9)}`,
        `server node-2.http.${S} (parent replaced) ${id(10)}`,
        `frontend http.${S} (parent replaced) ${id(3)}`,
        `backend http.${S} (not desired) ${id(1)}`,
      ]);
    });

    test('objects NewlyCreated, Updating or in an unknown state are waited for, never duplicated', () => {
      let objects = existing(desired());
      objects = withChange(objects, id(1), (o) => ({ ...o, state: 'NewlyCreated' }));
      objects = withChange(objects, id(4), (o) => ({ ...o, state: 'Updating' }));
      objects = withChange(objects, id(8), (o) => ({ ...o, state: 'Unknown' }));
      const p = plan(objects, policy);
      assert.deepEqual(
        actions(p),
        keptExcept({ 'backend:http': `wait ${id(1)}`, 'frontend:https': `wait ${id(4)}`, 'bind:https:2001:db8::10': `wait ${id(8)}` }),
      );
      assert.deepEqual(p.destroy, []);
      assert.equal(isPlanEmpty(p), false);
    });

    test('an empty ports map destroys everything the service owns: Binds, Servers, Frontends, Backends', () => {
      const p = plan(existing(desired()), policy, desired({ ports: {} }));
      assert.deepEqual(p.objects, []);
      assert.deepEqual(destroys(p), [
        `bind v4.http.${S} (not desired) ${id(5)}`,
        `bind v4.https.${S} (not desired) ${id(7)}`,
        `bind v6.http.${S} (not desired) ${id(6)}`,
        `bind v6.https.${S} (not desired) ${id(8)}`,
        `server node-1.http.${S} (not desired) ${id(9)}`,
        `server node-1.https.${S} (not desired) ${id(11)}`,
        `server node-2.http.${S} (not desired) ${id(10)}`,
        `server node-2.https.${S} (not desired) ${id(12)}`,
        `frontend http.${S} (not desired) ${id(3)}`,
        `frontend https.${S} (not desired) ${id(4)}`,
        `backend http.${S} (not desired) ${id(1)}`,
        `backend https.${S} (not desired) ${id(2)}`,
      ]);
    });
  });
}

/** Failed objects: the same scenario under both policies, with what each policy must plan. */
describe('planLoadBalancer with failed objects', () => {
  const scenarios: {
    name: string;
    failed: number;
    recover: { actions: string[]; destroys: string[] };
    recreate: { actions: string[]; destroys: string[] };
  }[] = [
    {
      name: 'a failed Server',
      failed: 9,
      recover: { actions: keptExcept({ 'server:http:node-1': `recover ${id(9)}` }), destroys: [] },
      recreate: {
        actions: keptExcept({ 'server:http:node-1': 'create' }),
        destroys: [`server node-1.http.${S} (failed (recreate)) ${id(9)}`],
      },
    },
    {
      name: 'a failed Frontend (its Binds link to it)',
      failed: 3,
      recover: { actions: keptExcept({ 'frontend:http': `recover ${id(3)}` }), destroys: [] },
      recreate: {
        actions: keptExcept({ 'frontend:http': 'create', 'bind:http:203.0.113.10': 'create', 'bind:http:2001:db8::10': 'create' }),
        destroys: [
          `bind v4.http.${S} (parent replaced) ${id(5)}`,
          `bind v6.http.${S} (parent replaced) ${id(6)}`,
          `frontend http.${S} (failed (recreate)) ${id(3)}`,
        ],
      },
    },
    {
      name: 'a failed Backend (its Frontend and Servers link to it, and the Binds to that Frontend)',
      failed: 1,
      recover: { actions: keptExcept({ 'backend:http': `recover ${id(1)}` }), destroys: [] },
      recreate: {
        actions: keptExcept(
          Object.fromEntries(
            ['backend:http', 'frontend:http', 'bind:http:203.0.113.10', 'bind:http:2001:db8::10', 'server:http:node-1', 'server:http:node-2'].map((k) => [k, 'create']),
          ),
        ),
        destroys: [
          `bind v4.http.${S} (parent replaced) ${id(5)}`,
          `bind v6.http.${S} (parent replaced) ${id(6)}`,
          `server node-1.http.${S} (parent replaced) ${id(9)}`,
          `server node-2.http.${S} (parent replaced) ${id(10)}`,
          `frontend http.${S} (parent replaced) ${id(3)}`,
          `backend http.${S} (failed (recreate)) ${id(1)}`,
        ],
      },
    },
  ];
  for (const scenario of scenarios) {
    for (const policy of POLICIES) {
      const expected = scenario[policy];
      test(`${scenario.name} under ${policy}: ${policy === 'recover' ? 'recovered in place' : 'destroyed with its dependents and created again'}`, () => {
        const objects = withChange(existing(desired()), id(scenario.failed), (o) => ({ ...o, state: 'DeploymentError' }));
        const p = plan(objects, policy);
        assert.deepEqual(actions(p), expected.actions);
        assert.deepEqual(destroys(p), expected.destroys);
        assert.equal(isPlanEmpty(p), false);
      });
    }
  }

  test('desired objects out of dependency order are a programming error, not a silent wrong plan', () => {
    const reversed = desired().reverse();
    assert.throws(() => plan([], 'recover', reversed), /comes before its parent/);
  });
});
