import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_READINESS, MESSAGES, formatIssues, serviceTag, validateSpec, type SpecIssue } from '../../domain';

/** The example of docs/spec.md#format, as parsed from YAML. */
function example(): Record<string, unknown> {
  return {
    serviceUid: '9a5f0c1e-3b7d-4c7a-9d8e-0f1a2b3c4d5e',
    nameSuffix: 'web.default.prod',
    loadBalancers: ['6f0c3d2e9a8b4c7d8e9f0a1b2c3d4e5f'],
    externalAddresses: ['203.0.113.10', '2001:db8::10'],
    ports: { http: { external: 80, internal: 30080 }, https: { external: 443, internal: 30443 } },
    servers: [
      { name: 'node-1', address: '10.0.0.11' },
      { name: 'node-2', address: '10.0.0.12' },
    ],
    readiness: { initialInterval: '1s', backoffCoefficient: 1.5, maximumInterval: '5m', maximumAttempts: 30 },
    failedResources: 'recover',
  };
}

function issuesOf(input: unknown): SpecIssue[] {
  const result = validateSpec(input);
  return result.ok ? [] : result.issues;
}

const ALLOWED_TOP = 'serviceUid, nameSuffix, loadBalancers, externalAddresses, ports, servers, serverPool, readiness, failedResources';
const ADDRESS = MESSAGES.address;
const PORT = MESSAGES.portNumber;
const DURATION = 'must be a duration like 250ms, 1s, 5m or 1m30s';

describe('validateSpec accepts valid specs in canonical form', () => {
  test('the example of docs/spec.md#format is valid and comes back unchanged, readiness in milliseconds', () => {
    assert.deepEqual(validateSpec(example()), {
      ok: true,
      spec: {
        serviceUid: '9a5f0c1e-3b7d-4c7a-9d8e-0f1a2b3c4d5e',
        nameSuffix: 'web.default.prod',
        loadBalancers: ['6f0c3d2e9a8b4c7d8e9f0a1b2c3d4e5f'],
        externalAddresses: ['203.0.113.10', '2001:db8::10'],
        ports: { http: { external: 80, internal: 30080 }, https: { external: 443, internal: 30443 } },
        servers: [
          { name: 'node-1', address: '10.0.0.11' },
          { name: 'node-2', address: '10.0.0.12' },
        ],
        readiness: { initialIntervalMs: 1000, backoffCoefficient: 1.5, maximumIntervalMs: 300000, maximumAttempts: 30 },
        failedResources: 'recover',
      },
    });
  });

  test('readiness and failedResources are optional and default to the documented values', () => {
    const { readiness: _r, failedResources: _f, ...rest } = example();
    const result = validateSpec(rest);
    assert.ok(result.ok);
    assert.deepEqual(result.spec.readiness, { initialIntervalMs: 1000, backoffCoefficient: 1.5, maximumIntervalMs: 300000, maximumAttempts: 30 });
    assert.deepEqual(result.spec.readiness, DEFAULT_READINESS);
    assert.equal(result.spec.failedResources, 'recover');
  });

  test('a partial readiness block keeps the other defaults, and a long initialInterval raises the default cap', () => {
    const result = validateSpec({ ...example(), readiness: { initialInterval: '10m', maximumAttempts: 5 } });
    assert.ok(result.ok);
    assert.deepEqual(result.spec.readiness, { initialIntervalMs: 600000, backoffCoefficient: 1.5, maximumIntervalMs: 600000, maximumAttempts: 5 });
  });

  test('addresses of external addresses and servers are canonicalized as Go prints them', () => {
    const result = validateSpec({
      ...example(),
      externalAddresses: ['2001:DB8:0::10', '::ffff:203.0.113.10'],
      servers: [{ name: 'node-1', address: '::FFFF:10.0.0.11' }, { name: 'node-2', address: 'FD00:0:0:0:0:0:0:2' }],
    });
    assert.ok(result.ok);
    assert.deepEqual(result.spec.externalAddresses, ['2001:db8::10', '203.0.113.10']);
    assert.deepEqual(result.spec.servers, [{ name: 'node-1', address: '10.0.0.11' }, { name: 'node-2', address: 'fd00::2' }]);
  });

  test('edge values that are allowed: empty suffix, unnamed single port with a suffix, empty lists, empty ports, 128-char uid, recreate', () => {
    for (const patch of [
      { nameSuffix: '' },
      { ports: { '': { external: 1, internal: 65535 } } },
      { externalAddresses: [], servers: [] },
      { ports: {} },
      { serviceUid: 'a'.repeat(128), nameSuffix: 'x'.repeat(200) },
      { failedResources: 'recreate' },
    ]) {
      assert.deepEqual(issuesOf({ ...example(), ...patch }), [], JSON.stringify(patch));
    }
  });

  test('serviceTag is the upstream tag', () => {
    assert.equal(serviceTag('9a5f'), 'anxccm-svc-uid=9a5f');
  });
});

describe('validateSpec reports every violation at once, with exact paths and messages', () => {
  test('a spec breaking every rule gets one issue per violation, in field order', () => {
    const spec = {
      serviceUid: '-bad uid',
      nameSuffix: 'web default',
      loadBalancers: ['lb-1', '', 'a/b', 'lb-1'],
      externalAddresses: ['203.0.113.10', '::ffff:203.0.113.10', '2001:DB8::10', '2001:db8:0::10', '010.0.0.1', 'fe80::1%eth0'],
      ports: {
        http: { external: 80, internal: 0 },
        https: { external: 80, internal: 65536 },
        Web: { external: 1.5, internal: '30080' },
        '': { external: 81, internal: 30081 },
      },
      servers: [
        { name: 'node-1', address: '10.0.0.11' },
        { name: 'node-1', address: '10.0.0.256' },
        { name: 'node 3', address: '', zone: 'a' },
      ],
      readiness: { initialInterval: '10', backoffCoefficient: 0.5, maximumInterval: '1d', maximumAttempts: 0, jitter: 1 },
      failedResources: 'retry',
      extra: true,
    };
    const expected: SpecIssue[] = [
      { path: 'extra', message: `unknown key (allowed: ${ALLOWED_TOP})` },
      { path: 'serviceUid', message: 'must be 1-128 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit' },
      { path: 'nameSuffix', message: 'must be at most 200 characters of A-Z a-z 0-9 . _ -' },
      { path: 'loadBalancers[1]', message: 'must not be empty' },
      { path: 'loadBalancers[2]', message: 'must not contain "/" (load balancer identifiers are part of workflow ids)' },
      { path: 'loadBalancers[3]', message: 'duplicate of loadBalancers[0]' },
      { path: 'externalAddresses[1]', message: 'duplicate of externalAddresses[0] (both are 203.0.113.10)' },
      { path: 'externalAddresses[3]', message: 'duplicate of externalAddresses[2] (both are 2001:db8::10)' },
      { path: 'externalAddresses[4]', message: ADDRESS },
      { path: 'externalAddresses[5]', message: ADDRESS },
      { path: 'ports.http.internal', message: PORT },
      { path: 'ports.https.external', message: 'external port 80 is also used by ports.http' },
      { path: 'ports.https.internal', message: PORT },
      { path: 'ports.Web', message: 'port names must be 1-63 characters of a-z 0-9 -, or "" for a single unnamed port' },
      { path: 'ports.Web.external', message: PORT },
      { path: 'ports.Web.internal', message: PORT },
      { path: 'ports[""]', message: 'the unnamed port "" must be the only port: it leaves nothing in the names to tell ports apart' },
      { path: 'servers[1].name', message: 'duplicate of servers[0].name' },
      { path: 'servers[1].address', message: ADDRESS },
      { path: 'servers[2].zone', message: 'unknown key (allowed: name, address)' },
      { path: 'servers[2].name', message: 'must be 1-253 characters of A-Z a-z 0-9 . _ -' },
      { path: 'servers[2].address', message: ADDRESS },
      { path: 'readiness.jitter', message: 'unknown key (allowed: initialInterval, backoffCoefficient, maximumInterval, maximumAttempts)' },
      { path: 'readiness.initialInterval', message: DURATION },
      { path: 'readiness.maximumInterval', message: DURATION },
      { path: 'readiness.backoffCoefficient', message: 'must be a number >= 1' },
      { path: 'readiness.maximumAttempts', message: 'must be an integer from 1 to 10000' },
      { path: 'failedResources', message: 'must be "recover" or "recreate"' },
    ];
    assert.deepEqual(issuesOf(spec), expected);
  });

  test('formatIssues prints one "path: message" line per issue, the bare message for the spec itself', () => {
    assert.equal(
      formatIssues([
        { path: '', message: 'the spec must be a mapping' },
        { path: 'ports.http.external', message: PORT },
      ]),
      `the spec must be a mapping\nports.http.external: ${PORT}`,
    );
  });

  const cases: [name: string, patch: Record<string, unknown>, expected: SpecIssue[]][] = [
    ['missing required keys', { serviceUid: undefined, nameSuffix: undefined, loadBalancers: undefined, externalAddresses: undefined, ports: undefined, servers: undefined }, [
      { path: 'serviceUid', message: 'required' },
      { path: 'nameSuffix', message: 'required' },
      { path: 'loadBalancers', message: 'required' },
      { path: 'externalAddresses', message: 'required' },
      { path: 'ports', message: 'required' },
      { path: 'servers', message: 'required (or serverPool: the name of a server pool)' },
    ]],
    ['wrong types', { serviceUid: 42, loadBalancers: 'lb', externalAddresses: {}, ports: [], servers: 'node-1', readiness: '1s' }, [
      { path: 'serviceUid', message: 'must be a string' },
      { path: 'loadBalancers', message: 'must be a list of load balancers' },
      { path: 'externalAddresses', message: 'must be a list of addresses' },
      { path: 'ports', message: 'must be a mapping of port name to {external, internal}' },
      { path: 'servers', message: 'must be a list of servers' },
      { path: 'readiness', message: 'must be a mapping with the optional keys initialInterval, backoffCoefficient, maximumInterval, maximumAttempts' },
    ]],
    ['serviceUid longer than 128', { serviceUid: 'a'.repeat(129) }, [{ path: 'serviceUid', message: MESSAGES.serviceUid }]],
    ['serviceUid empty', { serviceUid: '' }, [{ path: 'serviceUid', message: MESSAGES.serviceUid }]],
    ['serviceUid starting with a dot', { serviceUid: '.abc' }, [{ path: 'serviceUid', message: MESSAGES.serviceUid }]],
    ['nameSuffix longer than 200', { nameSuffix: 'x'.repeat(201) }, [{ path: 'nameSuffix', message: MESSAGES.nameSuffix }]],
    ['no load balancers', { loadBalancers: [] }, [{ path: 'loadBalancers', message: 'must list at least one load balancer' }]],
    ['load balancer with whitespace, not a string, too long', { loadBalancers: ['lb 1', 7, 'l'.repeat(129)] }, [
      { path: 'loadBalancers[0]', message: 'must not contain whitespace or control characters' },
      { path: 'loadBalancers[1]', message: 'must be a string' },
      { path: 'loadBalancers[2]', message: 'must be at most 128 characters' },
    ]],
    ['port 0 and 65536', { ports: { http: { external: 0, internal: 65536 } } }, [
      { path: 'ports.http.external', message: PORT },
      { path: 'ports.http.internal', message: PORT },
    ]],
    ['ports as strings, floats, negative, missing', { ports: { a: { external: '80', internal: 1.5 }, b: { external: -1 } } }, [
      { path: 'ports.a.external', message: PORT },
      { path: 'ports.a.internal', message: PORT },
      { path: 'ports.b.external', message: PORT },
      { path: 'ports.b.internal', message: 'required' },
    ]],
    ['port entry not a mapping, port name too long', { ports: { http: 80, ['p'.repeat(64)]: { external: 1, internal: 1 } } }, [
      { path: 'ports.http', message: 'must be a mapping {external, internal}' },
      { path: `ports.${'p'.repeat(64)}`, message: MESSAGES.portName },
    ]],
    ['duplicate external ports', { ports: { a: { external: 80, internal: 1 }, b: { external: 81, internal: 2 }, c: { external: 80, internal: 3 } } }, [
      { path: 'ports.c.external', message: 'external port 80 is also used by ports.a' },
    ]],
    ['unnamed only port without suffix: objects would get empty names', { nameSuffix: '', ports: { '': { external: 80, internal: 30080 } } }, [
      { path: 'nameSuffix', message: 'must not be empty when the only port is unnamed (""): every Backend and Frontend name would be empty' },
    ]],
    ['IPv6 duplicates after canonicalization', { externalAddresses: ['2001:DB8::10', '2001:db8:0::10'] }, [
      { path: 'externalAddresses[1]', message: 'duplicate of externalAddresses[0] (both are 2001:db8::10)' },
    ]],
    ['IPv4-mapped duplicate of IPv4', { externalAddresses: ['::ffff:203.0.113.10', '203.0.113.10'] }, [
      { path: 'externalAddresses[1]', message: 'duplicate of externalAddresses[0] (both are 203.0.113.10)' },
    ]],
    ['empty, zoned and leading-zero addresses', { externalAddresses: ['', 'fe80::1%eth0', '203.0.113.010', 5] }, [
      { path: 'externalAddresses[0]', message: ADDRESS },
      { path: 'externalAddresses[1]', message: ADDRESS },
      { path: 'externalAddresses[2]', message: ADDRESS },
      { path: 'externalAddresses[3]', message: 'must be a string' },
    ]],
    ['server not a mapping, missing fields', { servers: ['node-1', {}] }, [
      { path: 'servers[0]', message: 'must be a mapping {name, address}' },
      { path: 'servers[1].name', message: 'required' },
      { path: 'servers[1].address', message: 'required' },
    ]],
    ['unknown keys at every level name the key', {
      nameSufix: 'x',
      ports: { http: { external: 80, internal: 30080, extrnal: 81 } },
      servers: [{ name: 'node-1', address: '10.0.0.11', ip: '10.0.0.11' }],
      readiness: { initalInterval: '1s' },
    }, [
      { path: 'nameSufix', message: `unknown key (allowed: ${ALLOWED_TOP})` },
      { path: 'ports.http.extrnal', message: 'unknown key (allowed: external, internal)' },
      { path: 'servers[0].ip', message: 'unknown key (allowed: name, address)' },
      { path: 'readiness.initalInterval', message: 'unknown key (allowed: initialInterval, backoffCoefficient, maximumInterval, maximumAttempts)' },
    ]],
    ['bad durations', { readiness: { initialInterval: 1000, maximumInterval: '-1s' } }, [
      { path: 'readiness.initialInterval', message: DURATION },
      { path: 'readiness.maximumInterval', message: DURATION },
    ]],
    ['durations out of range', { readiness: { initialInterval: '0s', maximumInterval: '25h' } }, [
      { path: 'readiness.initialInterval', message: 'must be between 1ms and 24h' },
      { path: 'readiness.maximumInterval', message: 'must be between 1ms and 24h' },
    ]],
    ['maximumInterval shorter than initialInterval', { readiness: { initialInterval: '1m30s', maximumInterval: '500ms' } }, [
      { path: 'readiness.maximumInterval', message: 'must not be shorter than initialInterval (1m30s)' },
    ]],
    ['coefficient below 1 or not a number, attempts not a positive integer', { readiness: { backoffCoefficient: '2', maximumAttempts: 1.5 } }, [
      { path: 'readiness.backoffCoefficient', message: 'must be a number >= 1' },
      { path: 'readiness.maximumAttempts', message: 'must be an integer from 1 to 10000' },
    ]],
  ];
  for (const [name, patch, expected] of cases) {
    test(`${name}: ${expected.map((i) => i.path).join(', ')}`, () => {
      assert.deepEqual(issuesOf({ ...example(), ...patch }), expected);
    });
  }

  for (const input of [null, [], 'serviceUid: x', 42]) {
    test(`a spec that is not a mapping (${JSON.stringify(input)}) is one issue at the root`, () => {
      assert.deepEqual(issuesOf(input), [{ path: '', message: `the spec must be a mapping with the keys ${ALLOWED_TOP}` }]);
    });
  }
});

describe('validateSpec guards against huge inputs', () => {
  test('an over-long list is one issue and its elements are not inspected', () => {
    const many = Array.from({ length: 1025 }, () => 'not an address');
    const tooManyServers = Array.from({ length: 5001 }, () => 'not a server');
    assert.deepEqual(issuesOf({ ...example(), loadBalancers: many, externalAddresses: many, servers: tooManyServers }), [
      { path: 'loadBalancers', message: 'must list at most 1024 load balancers (has 1025)' },
      { path: 'externalAddresses', message: 'must list at most 1024 addresses (has 1025)' },
      { path: 'servers', message: 'must list at most 5000 servers (has 5001)' },
    ]);
  });

  test('more than 1024 ports is one issue', () => {
    const ports = Object.fromEntries(Array.from({ length: 1025 }, (_, i) => [`p${i}`, { external: 1, internal: 1 }]));
    assert.deepEqual(issuesOf({ ...example(), ports }), [{ path: 'ports', message: 'must have at most 1024 ports (has 1025)' }]);
  });

  test('a spec meaning more than 5100 objects per load balancer is refused; 5,000 servers on one port are accepted', () => {
    const ports = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`p${i}`, { external: i + 1, internal: i + 1 }]));
    const servers = Array.from({ length: 1020 }, (_, i) => ({ name: `n${i}`, address: '10.0.0.1' }));
    assert.deepEqual(issuesOf({ ...example(), ports, servers }), [
      { path: 'ports', message: 'this spec means 5120 Engine objects per load balancer (ports x (2 + externalAddresses + servers)); at most 5100 are supported' },
    ]);
    const cluster = Array.from({ length: 5000 }, (_, i) => ({ name: `n${i}`, address: '10.0.0.1' }));
    assert.deepEqual(issuesOf({ ...example(), ports: { http: { external: 80, internal: 30080 } }, servers: cluster }), []);
  });

  test('unknown keys beyond ten are counted, and long keys are cut in paths', () => {
    const extra = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`k${i}`.padEnd(i === 0 ? 100 : 2, 'x'), 1]));
    const issues = issuesOf({ ...example(), ...extra });
    assert.equal(issues.length, 11);
    assert.deepEqual(issues[0], { path: `["${'k0'.padEnd(64, 'x')}…"]`, message: `unknown key (allowed: ${ALLOWED_TOP})` });
    assert.deepEqual(issues[1], { path: 'k1', message: `unknown key (allowed: ${ALLOWED_TOP})` });
    assert.deepEqual(issues[10], { path: '', message: '2 more unknown keys' });
  });
});
