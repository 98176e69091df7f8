/** Service status as docs/spec.md#status defines it: which external address/port pairs exist. */
import { canonicalIp } from './ip';
import type { AddressStatus, Snapshot } from './types';

/**
 * External address -> sorted unique external ports, read from the tagged Binds of one load balancer, whatever
 * their state (a Bind that exists is reported, as upstream does). Addresses are canonicalized where they parse,
 * so statuses of several load balancers merge even if one Bind was written in another form.
 */
export function statusFromSnapshot(snapshot: Snapshot): AddressStatus {
  const ports = new Map<string, Set<number>>();
  for (const o of snapshot.objects) {
    if (o.kind !== 'bind' || !o.tagged) continue;
    const address = canonicalIp(o.fields.address)?.text ?? o.fields.address;
    const set = ports.get(address) ?? new Set<number>();
    set.add(o.fields.port);
    ports.set(address, set);
  }
  return toStatus(ports);
}

/**
 * The address/port pairs present on every one of the given load balancers' statuses; addresses left with no
 * port are dropped. No statuses at all means nothing is known to be served: `{}`.
 */
export function mergeStatus(statuses: readonly AddressStatus[]): AddressStatus {
  const [first, ...rest] = statuses;
  if (first === undefined) return {};
  const ports = new Map<string, Set<number>>();
  for (const [address, list] of Object.entries(first)) {
    const common = list.filter((port) => rest.every((status) => status[address]?.includes(port) === true));
    if (common.length > 0) ports.set(address, new Set(common));
  }
  return toStatus(ports);
}

/** A plain object with keys in sorted order and each port list sorted ascending. */
function toStatus(ports: ReadonlyMap<string, ReadonlySet<number>>): AddressStatus {
  const status: AddressStatus = {};
  for (const address of [...ports.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
    const set = ports.get(address);
    if (set !== undefined && set.size > 0) {
      Object.defineProperty(status, address, { value: [...set].sort((a, b) => a - b), enumerable: true, writable: true, configurable: true });
    }
  }
  return status;
}
