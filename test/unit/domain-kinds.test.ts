import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  COMPARED_FIELDS,
  DESTROY_RANK,
  DESTROY_STAGES,
  KIND_DEFINITIONS,
  KIND_OF_RESOURCE_TYPE,
  KIND_TITLE,
  KINDS,
  LINK_FIELDS,
  LISTED_UNDER,
  LISTING_LEVELS,
  PARENT_KIND,
  REFERENCED_BY,
  completeFields,
  desiredObjects,
  parentIdOf,
  validateSpec,
  type FieldTable,
} from '../../domain';
import { fieldsOf } from '../../activities/kinds';
import { LBAAS_KINDS, objectSchemas, toUpdateBody } from '../../activities/engine/schemas';

const LB = 'a'.repeat(32);
const BE = 'b'.repeat(32);
const FE = 'f'.repeat(32);
const state = { id: '3', title: 'Deployed', type: 1 };

describe('kind definitions and the tables derived from them', () => {
  test('kinds in dependency order, with their titles and Core resource types', () => {
    assert.deepEqual(KINDS, ['backend', 'frontend', 'bind', 'server']);
    assert.deepEqual(KIND_TITLE, { backend: 'Backend', frontend: 'Frontend', bind: 'Bind', server: 'Server' });
    assert.deepEqual(KIND_OF_RESOURCE_TYPE, {
      '33164a3066a04a52be43c607f0c5dd8c': 'backend',
      da9d14b9d95840c08213de67f9cee6e2: 'frontend',
      bd24def982aa478fb3352cb5f49aab47: 'bind',
      '01f321a4875446409d7d8469503a905f': 'server',
    });
  });

  test('compared fields per kind, in table order', () => {
    assert.deepEqual(COMPARED_FIELDS, {
      backend: ['name', 'mode', 'health_check', 'load_balancer'],
      frontend: ['name', 'mode', 'load_balancer', 'default_backend'],
      bind: ['name', 'address', 'port', 'ssl', 'frontend'],
      server: ['name', 'ip', 'port', 'check', 'backend'],
    });
    assert.deepEqual(LINK_FIELDS, { backend: ['load_balancer'], frontend: ['load_balancer', 'default_backend'], bind: ['frontend'], server: ['backend'] });
  });

  test('destroy stages run what references others first: Binds and Servers, then Frontends, then Backends', () => {
    assert.deepEqual(DESTROY_STAGES, [['bind', 'server'], ['frontend'], ['backend']]);
    assert.deepEqual(DESTROY_RANK, { bind: 0, server: 1, frontend: 2, backend: 3 });
  });

  test('a Frontend depends on its default Backend but is listed under its load balancer: two relations, two names', () => {
    assert.equal(KIND_DEFINITIONS.frontend.dependsOn, 'default_backend');
    assert.equal(KIND_DEFINITIONS.frontend.listedUnder, 'load_balancer');
    assert.deepEqual(
      KINDS.map((k) => [k, KIND_DEFINITIONS[k].dependsOn, KIND_DEFINITIONS[k].listedUnder]),
      [
        ['backend', null, 'load_balancer'],
        ['frontend', 'default_backend', 'load_balancer'],
        ['bind', 'frontend', 'frontend'],
        ['server', 'backend', 'backend'],
      ],
    );
  });

  test("every desired object's parent is of the kind its dependsOn field links to, and comes first", () => {
    const result = validateSpec({
      serviceUid: 'svc',
      nameSuffix: 'web',
      loadBalancers: [LB],
      externalAddresses: ['203.0.113.10', '2001:db8::10'],
      ports: { http: { external: 80, internal: 30080 }, https: { external: 443, internal: 30443 } },
      servers: [{ name: 'node-1', address: '10.0.0.11' }],
    });
    assert.ok(result.ok);
    const desired = desiredObjects(result.spec, LB);
    const seen = new Map<string, string>();
    for (const d of desired) {
      const link = KIND_DEFINITIONS[d.kind].dependsOn;
      const fields = KIND_DEFINITIONS[d.kind].fields as FieldTable;
      if (link === null) assert.equal(d.parent, null);
      else assert.equal(seen.get(d.parent as string), fields[link]?.to, `${d.key} depends on ${d.parent}`);
      seen.set(d.key, d.kind);
    }
  });

  test('parent kinds follow the dependsOn links: a Backend has none, Frontends and Servers hang off Backends, Binds off Frontends', () => {
    assert.deepEqual(PARENT_KIND, { backend: null, frontend: 'backend', bind: 'frontend', server: 'backend' });
    for (const k of KINDS) {
      const parent = PARENT_KIND[k];
      if (parent !== null) assert.ok(KINDS.indexOf(parent) < KINDS.indexOf(k), `${parent} before ${k} in KINDS`);
    }
  });

  test('listing follows the listedUnder links: Backends and Frontends under the load balancer, then Binds and Servers under them', () => {
    assert.deepEqual(LISTED_UNDER, {
      backend: { field: 'load_balancer', target: 'loadbalancer' },
      frontend: { field: 'load_balancer', target: 'loadbalancer' },
      bind: { field: 'frontend', target: 'frontend' },
      server: { field: 'backend', target: 'backend' },
    });
    assert.deepEqual(LISTING_LEVELS, [
      ['backend', 'frontend'],
      ['bind', 'server'],
    ]);
  });

  test('what may reference each kind (and hold up its delete with a 409) is every link field that points at it', () => {
    assert.deepEqual(REFERENCED_BY, {
      backend: [
        { kind: 'frontend', field: 'default_backend' },
        { kind: 'server', field: 'backend' },
      ],
      frontend: [{ kind: 'bind', field: 'frontend' }],
      bind: [],
      server: [],
    });
  });

  test('the Engine client knows the load balancer and every kind of the registry', () => {
    assert.deepEqual(LBAAS_KINDS, ['loadbalancer', ...KINDS]);
  });

  test('desired objects come kind by kind in KINDS order, ports in name order within a kind', () => {
    const result = validateSpec({
      serviceUid: 'svc',
      nameSuffix: 'web',
      loadBalancers: [LB],
      externalAddresses: ['203.0.113.10'],
      ports: { https: { external: 443, internal: 30443 }, http: { external: 80, internal: 30080 } },
      servers: [{ name: 'node-1', address: '10.0.0.11' }],
    });
    assert.ok(result.ok);
    assert.deepEqual(
      desiredObjects(result.spec, LB).map((d) => d.key),
      [
        'backend:http',
        'backend:https',
        'frontend:http',
        'frontend:https',
        'bind:http:203.0.113.10',
        'bind:https:203.0.113.10',
        'server:http:node-1',
        'server:https:node-1',
      ],
    );
  });

  test('completeFields fills the dependsOn link; parentIdOf reads it back (null for a Backend)', () => {
    assert.deepEqual(completeFields('frontend', { name: 'n', mode: 'tcp', load_balancer: LB }, BE), { name: 'n', mode: 'tcp', load_balancer: LB, default_backend: BE });
    assert.deepEqual(completeFields('backend', { name: 'n', mode: 'tcp', health_check: 'h', load_balancer: LB }, 'ignored'), { name: 'n', mode: 'tcp', health_check: 'h', load_balancer: LB });
    const fields = { name: 'n', mode: 'tcp', load_balancer: LB, default_backend: BE };
    assert.equal(parentIdOf({ kind: 'frontend', identifier: FE, name: 'n', state: 'Deployed', tagged: true, fields }), BE);
    assert.equal(parentIdOf({ kind: 'backend', identifier: BE, name: 'n', state: 'Deployed', tagged: true, fields: { name: 'n', mode: 'tcp', health_check: 'h', load_balancer: LB } }), null);
  });
});

describe('Engine schemas and fields derived from the kind definitions', () => {
  const frontend = { identifier: FE, name: 'http.web', state, load_balancer: { identifier: LB, name: 'lb' }, default_backend: { identifier: BE, name: 'http.web' }, mode: 'tcp', client_timeout: '10s' };

  test('fieldsOf reduces an Engine object to its compared fields, links to identifiers', () => {
    const parsed = objectSchemas.frontend.parse(frontend);
    assert.deepEqual(fieldsOf('frontend', parsed), { name: 'http.web', mode: 'tcp', load_balancer: LB, default_backend: BE });
  });

  test('fields that are not compared may be missing or null in an answer', () => {
    const { client_timeout: _dropped, ...sparse } = frontend;
    assert.equal(objectSchemas.frontend.parse(sparse).client_timeout, undefined);
    assert.equal(objectSchemas.frontend.parse({ ...frontend, client_timeout: null }).client_timeout, null);
  });

  test('a compared field missing, null or of the wrong type is rejected, naming the field', () => {
    const { mode: _mode, ...noMode } = frontend;
    for (const bad of [noMode, { ...frontend, default_backend: null }, { ...frontend, mode: 7 }]) {
      const r = objectSchemas.frontend.safeParse(bad);
      assert.equal(r.success, false);
      const path = r.error?.issues[0]?.path[0];
      assert.ok(path === 'mode' || path === 'default_backend', String(path));
    }
  });

  test('the PUT body turns every link of the table into a bare identifier', () => {
    const parsed = objectSchemas.frontend.parse(frontend);
    assert.deepEqual(toUpdateBody('frontend', parsed), { identifier: FE, name: 'http.web', load_balancer: LB, default_backend: BE, mode: 'tcp', client_timeout: '10s', state: '0' });
  });
});
