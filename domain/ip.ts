/**
 * IP address parsing and canonicalization with the exact semantics of Go's `net.ParseIP` and `net.IP.String()`,
 * because the upstream controller wrote Bind addresses and Server IPs in that form and we must compare equal to
 * what it created. Written by hand: workflow code runs in Temporal's sandbox, where `node:net` does not exist.
 */

export type IpFamily = 'v4' | 'v6';

export interface CanonicalIp {
  text: string;
  /** `v4` also for IPv4-mapped IPv6 addresses, as Go's `To4() != nil` decides (upstream Bind names use it). */
  family: IpFamily;
}

/** The longest valid text form: six 4-digit groups plus a dotted quad. Anything longer is rejected unread. */
const MAX_TEXT_LENGTH = 45;

/**
 * Parses an address the way Go's `net.ParseIP` does and prints it the way `net.IP.String()` does:
 * IPv4 dotted decimal; IPv6 lower case, no leading zeros, the longest run of two or more zero groups compressed
 * to `::` (the leftmost on ties); an IPv4-mapped IPv6 address (`::ffff:a.b.c.d` or `::ffff:xxxx:xxxx`) printed as
 * dotted IPv4. Returns null for anything Go rejects: empty strings, zones (`%eth0`), IPv4 octets with leading
 * zeros, surrounding whitespace, more than one `::`.
 */
export function canonicalIp(input: string): CanonicalIp | null {
  if (input.length === 0 || input.length > MAX_TEXT_LENGTH) return null;
  const v4 = parseIPv4(input);
  if (v4 !== null) return { text: formatIPv4(v4), family: 'v4' };
  if (!input.includes(':')) return null;
  const v6 = parseIPv6(input);
  if (v6 === null) return null;
  if (isV4Mapped(v6)) return { text: formatIPv4(v6.slice(12)), family: 'v4' };
  return { text: formatIPv6(v6), family: 'v6' };
}

/** Four decimal octets, 0-255, no leading zeros (Go rejects `010.0.0.1` since 1.17), nothing else. */
function parseIPv4(s: string): number[] | null {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  const bytes: number[] = [];
  for (const part of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part)) return null;
    const value = Number(part);
    if (value > 255) return null;
    bytes.push(value);
  }
  return bytes;
}

function hexValue(c: string): number {
  const code = c.charCodeAt(0);
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  if (code >= 65 && code <= 70) return code - 55;
  return -1;
}

/** IPv6 into 16 bytes, following the structure of Go's netip parser (same accept/reject decisions). */
function parseIPv6(input: string): number[] | null {
  const ip: number[] = new Array<number>(16).fill(0);
  let s = input;
  let ellipsis = -1;
  let i = 0;
  if (s.startsWith('::')) {
    ellipsis = 0;
    s = s.slice(2);
    if (s === '') return ip;
  }
  while (i < 16) {
    let off = 0;
    let acc = 0;
    while (off < s.length) {
      const digit = hexValue(s.charAt(off));
      if (digit < 0) break;
      if (off > 3) return null;
      acc = acc * 16 + digit;
      off++;
    }
    if (off === 0) return null;
    if (off < s.length && s.charAt(off) === '.') {
      // A trailing dotted quad fills the last four bytes and must end the address.
      if ((ellipsis < 0 && i !== 12) || i + 4 > 16) return null;
      const v4 = parseIPv4(s);
      if (v4 === null) return null;
      ip.splice(i, 4, ...v4);
      i += 4;
      s = '';
      break;
    }
    ip[i] = acc >> 8;
    ip[i + 1] = acc & 0xff;
    i += 2;
    s = s.slice(off);
    if (s === '') break;
    if (s.charAt(0) !== ':' || s.length === 1) return null;
    s = s.slice(1);
    if (s.charAt(0) === ':') {
      if (ellipsis >= 0) return null;
      ellipsis = i;
      s = s.slice(1);
      if (s === '') break;
    }
  }
  if (s !== '') return null;
  if (i < 16) {
    if (ellipsis < 0) return null;
    const n = 16 - i;
    const zeros = new Array<number>(n).fill(0);
    ip.splice(i, n);
    ip.splice(ellipsis, 0, ...zeros);
  } else if (ellipsis >= 0) {
    // `::` must stand for at least one zero group.
    return null;
  }
  return ip;
}

function isV4Mapped(ip: readonly number[]): boolean {
  for (let k = 0; k < 10; k++) if (ip[k] !== 0) return false;
  return ip[10] === 0xff && ip[11] === 0xff;
}

function formatIPv4(bytes: readonly number[]): string {
  return bytes.slice(0, 4).join('.');
}

function formatIPv6(ip: readonly number[]): string {
  const groups: number[] = [];
  for (let k = 0; k < 16; k += 2) groups.push(((ip[k] ?? 0) << 8) | (ip[k + 1] ?? 0));
  // Longest run of zero groups; strictly longer wins, so the leftmost run wins ties.
  let bestStart = -1;
  let bestLen = 0;
  for (let k = 0; k < 8; ) {
    if (groups[k] !== 0) {
      k++;
      continue;
    }
    let end = k;
    while (end < 8 && groups[end] === 0) end++;
    if (end - k > bestLen) {
      bestStart = k;
      bestLen = end - k;
    }
    k = end;
  }
  // RFC 5952 4.2.2: "::" never shortens a single zero group.
  if (bestLen < 2) bestStart = -1;
  const hex = (g: number): string => g.toString(16);
  if (bestStart < 0) return groups.map(hex).join(':');
  const head = groups.slice(0, bestStart).map(hex).join(':');
  const tail = groups.slice(bestStart + bestLen).map(hex).join(':');
  return `${head}::${tail}`;
}
