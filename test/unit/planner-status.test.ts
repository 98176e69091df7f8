import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mergeStatus, statusFromSnapshot, type ObservedObject } from '../../domain';

const LB = '6f0c3d2e9a8b4c7d8e9f0a1b2c3d4e5f';
let next = 0;

function bind(address: string, port: number, tagged = true): ObservedObject {
  next += 1;
  const name = address.includes(':') ? 'v6.p' : 'v4.p';
  return { kind: 'bind', identifier: String(next).padStart(32, '0'), name, state: 'Deployed', tagged, fields: { name, address, port, ssl: false, frontend: 'f'.repeat(32) } };
}

describe('statusFromSnapshot', () => {
  test('maps each external address to its sorted unique ports, from tagged Binds only, whatever their state', () => {
    const objects: ObservedObject[] = [
      bind('203.0.113.10', 8080),
      bind('203.0.113.10', 443),
      bind('203.0.113.10', 80),
      { ...bind('203.0.113.10', 443), state: 'DeploymentError' },
      bind('2001:db8::10', 443),
      bind('198.51.100.1', 22, false),
      { kind: 'backend', identifier: 'b'.repeat(32), name: 'http', state: 'Deployed', tagged: true, fields: { name: 'http', mode: 'tcp', health_check: '', load_balancer: LB } },
    ];
    const status = statusFromSnapshot({ loadBalancer: LB, objects });
    assert.deepEqual(status, { '2001:db8::10': [443], '203.0.113.10': [80, 443, 8080] });
    assert.deepEqual(Object.keys(status), ['2001:db8::10', '203.0.113.10']);
  });

  test('addresses are canonicalized, so differently written Binds of one address land together', () => {
    const objects = [bind('2001:DB8:0::10', 80), bind('2001:db8::10', 443), bind('::ffff:203.0.113.10', 80)];
    assert.deepEqual(statusFromSnapshot({ loadBalancer: LB, objects }), { '2001:db8::10': [80, 443], '203.0.113.10': [80] });
  });

  test('no Binds is an empty status', () => {
    assert.deepEqual(statusFromSnapshot({ loadBalancer: LB, objects: [] }), {});
  });
});

describe('mergeStatus', () => {
  test('keeps only the address/port pairs present on every load balancer, keys sorted', () => {
    const merged = mergeStatus([
      { '203.0.113.10': [80, 443], '2001:db8::10': [80, 443], '198.51.100.1': [80] },
      { '2001:db8::10': [443], '203.0.113.10': [443, 80] },
    ]);
    assert.deepEqual(merged, { '2001:db8::10': [443], '203.0.113.10': [80, 443] });
    assert.deepEqual(Object.keys(merged), ['2001:db8::10', '203.0.113.10']);
  });

  test('an address with no common port is dropped', () => {
    assert.deepEqual(mergeStatus([{ '203.0.113.10': [80] }, { '203.0.113.10': [443] }]), {});
  });

  test('one status is returned sorted; no statuses at all is {}', () => {
    assert.deepEqual(mergeStatus([{ b: [443, 80], a: [22] }]), { a: [22], b: [80, 443] });
    assert.deepEqual(mergeStatus([]), {});
  });

  test('a load balancer with nothing empties the merge', () => {
    assert.deepEqual(mergeStatus([{ '203.0.113.10': [80] }, {}]), {});
  });
});
