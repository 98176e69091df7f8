/**
 * The VIP k8s-anexia-ccm configures for a prefix when no address of it is tagged as the VIP: the address just below
 * the prefix's broadcast (last) address, `198.51.100.14` for `198.51.100.0/28`, `2001:db8::ffff:ffff:ffff:fffe` for
 * `2001:db8::/64`. A prefix too small to have one (/31, /32, /127, /128) has none.
 */
import { canonicalIp } from '../domain';
import { parseCidr } from './engine';

export function toBigInt(text: string, family: 4 | 6): bigint {
  if (family === 4) return text.split('.').reduce((n, o) => (n << 8n) | BigInt(Number(o)), 0n);
  const [head = '', tail] = text.split('::');
  const groups = (s: string) => (s === '' ? [] : s.split(':'));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return all.reduce((n, g) => (n << 16n) | BigInt(parseInt(g, 16)), 0n);
}

export function fromBigInt(n: bigint, family: 4 | 6): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 0xffn)).join('.');
  const groups = Array.from({ length: 8 }, (_, i) => ((n >> BigInt(112 - 16 * i)) & 0xffffn).toString(16));
  // canonicalIp gives the RFC 5952 text (zero runs compressed), the form every other address in lbaas has.
  return canonicalIp(groups.join(':'))?.text ?? groups.join(':');
}

/** The calculated VIP of a prefix in CIDR notation, or null when it has none (too small, or not CIDR). */
export function calculatedVip(cidr: string): { address: string; family: 4 | 6 } | null {
  const p = parseCidr(cidr);
  if (p === null) return null;
  const bits = p.family === 4 ? 32 : 128;
  if (bits - p.length < 2) return null;
  // The IPv4 text of an IPv6 form (::ffff:a.b.c.d) is not a CIDR the Engine names; canonicalIp refuses nothing valid.
  const canonical = canonicalIp(p.address);
  if (canonical === null || (canonical.family === 'v4') !== (p.family === 4)) return null;
  const hostBits = BigInt(bits - p.length);
  const broadcast = toBigInt(canonical.text, p.family) | ((1n << hostBits) - 1n);
  return { address: fromBigInt(broadcast - 1n, p.family), family: p.family };
}
