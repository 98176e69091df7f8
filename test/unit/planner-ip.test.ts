import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalIp, formatDuration, parseDuration } from '../../domain';

describe('canonicalIp prints what Go net.IP.String() prints', () => {
  const cases: [input: string, text: string, family: 'v4' | 'v6'][] = [
    ['203.0.113.10', '203.0.113.10', 'v4'],
    ['0.0.0.0', '0.0.0.0', 'v4'],
    ['255.255.255.255', '255.255.255.255', 'v4'],
    ['2001:DB8::10', '2001:db8::10', 'v6'],
    ['2001:db8:0::10', '2001:db8::10', 'v6'],
    ['2001:0db8:0000:0000:0000:0000:0000:0010', '2001:db8::10', 'v6'],
    ['ABCD:EF01:2345:6789:ABCD:EF01:2345:6789', 'abcd:ef01:2345:6789:abcd:ef01:2345:6789', 'v6'],
    ['::', '::', 'v6'],
    ['0:0:0:0:0:0:0:0', '::', 'v6'],
    ['0:0:0:0:0:0:0:1', '::1', 'v6'],
    ['0000::0001', '::1', 'v6'],
    ['1:0:0:0:0:0:0:0', '1::', 'v6'],
    ['1::', '1::', 'v6'],
    // A single zero group is never compressed (RFC 5952 4.2.2).
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1', 'v6'],
    // The longest run wins, even when a shorter one comes first.
    ['2001:db8:0:1:0:0:0:1', '2001:db8:0:1::1', 'v6'],
    ['1:0:0:2:0:0:0:3', '1:0:0:2::3', 'v6'],
    // Equal runs: the leftmost is compressed.
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1', 'v6'],
    ['fe80:0:0:0:1:0:0:0', 'fe80::1:0:0:0', 'v6'],
    // IPv4-mapped addresses become dotted IPv4, in either notation.
    ['::ffff:203.0.113.10', '203.0.113.10', 'v4'],
    ['::FFFF:cb00:710a', '203.0.113.10', 'v4'],
    ['0:0:0:0:0:ffff:1.2.3.4', '1.2.3.4', 'v4'],
    ['::ffff:0:0', '0.0.0.0', 'v4'],
    // IPv4-compatible and NAT64 addresses are not mapped: they stay IPv6, printed in hex.
    ['::203.0.113.10', '::cb00:710a', 'v6'],
    ['64:ff9b::203.0.113.10', '64:ff9b::cb00:710a', 'v6'],
    ['1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:102:304', 'v6'],
    ['1:2:3:4:5:6:7::', '1:2:3:4:5:6:7:0', 'v6'],
  ];
  for (const [input, text, family] of cases) {
    test(`${input} -> ${text} (${family})`, () => {
      assert.deepEqual(canonicalIp(input), { text, family });
    });
  }
});

describe('canonicalIp rejects what Go net.ParseIP rejects', () => {
  const rejected: [input: string, why: string][] = [
    ['', 'empty'],
    [' 203.0.113.10', 'leading space'],
    ['203.0.113.10 ', 'trailing space'],
    ['010.0.0.1', 'IPv4 octet with a leading zero'],
    ['1.2.3.04', 'IPv4 octet with a leading zero'],
    ['::ffff:1.2.3.04', 'leading zero in an embedded IPv4'],
    ['256.1.1.1', 'octet above 255'],
    ['1.2.3', 'three octets'],
    ['1.2.3.4.5', 'five octets'],
    ['1..2.3', 'empty octet'],
    ['0x1.2.3.4', 'hex octet'],
    ['fe80::1%eth0', 'zone'],
    ['2001:db8::10%1', 'numeric zone'],
    [':::', 'three colons'],
    ['1::2::3', 'two ellipses'],
    ['1:2:3:4:5:6:7:8:9', 'nine groups'],
    ['1:2:3:4:5:6:7', 'seven groups without ellipsis'],
    ['1:2:3:4:5:6:7::8', 'ellipsis standing for no group'],
    ['1:2:3:4:5:6:7:8::', 'ellipsis after eight groups'],
    [':1:2:3:4:5:6:7', 'leading single colon'],
    ['1:2:3:4:5:6:7:', 'trailing single colon'],
    ['12345::', 'five hex digits'],
    ['g::1', 'not hex'],
    ['::1.2.3', 'short embedded IPv4'],
    ['1.2.3.4::', 'IPv4 before the ellipsis'],
    ['1:2:3:4:5:6:7:1.2.3.4', 'embedded IPv4 past the end'],
    ['1:2:3:4:5:1.2.3.4', 'embedded IPv4 not in the last two groups'],
    ['::1.2.3.4:5', 'group after the embedded IPv4'],
    ['1:2:3:4:5:6:7:8'.padEnd(46, '0'), 'longer than any address'],
  ];
  for (const [input, why] of rejected) {
    test(`${JSON.stringify(input)} is rejected (${why})`, () => {
      assert.equal(canonicalIp(input), null);
    });
  }
});

describe('parseDuration', () => {
  const valid: [string, number][] = [
    ['250ms', 250],
    ['1s', 1_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1m30s', 90_000],
    ['1.5s', 1_500],
    ['1.1s', 1_100],
    ['1h0m0.5s', 3_600_500],
    ['0s', 0],
  ];
  for (const [text, ms] of valid) {
    test(`${text} is ${ms}ms`, () => assert.equal(parseDuration(text), ms));
  }
  const invalid: [string, string][] = [
    ['', 'empty'],
    ['10', 'no unit (seconds or milliseconds?)'],
    ['1.5ms', 'not a whole millisecond'],
    ['-1s', 'negative'],
    ['1 s', 'space'],
    ['1d', 'unknown unit'],
    ['s', 'no number'],
    ['1.s', 'no fraction digits'],
    ['1sm', 'unit without number'],
    ['1e3ms', 'exponent'],
    ['99999999999999999999h', 'beyond safe integers'],
    ['1s'.repeat(17), 'longer than 32 characters'],
  ];
  for (const [text, why] of invalid) {
    test(`${JSON.stringify(text)} is rejected (${why})`, () => assert.equal(parseDuration(text), null));
  }
  test('formatDuration is the inverse used in messages', () => {
    assert.deepEqual([0, 250, 1_000, 90_000, 3_600_500, 86_400_000].map(formatDuration), ['0s', '250ms', '1s', '1m30s', '1h500ms', '24h']);
  });
});
