/**
 * IPAM v1 prefixes and addresses (docs/engine-api.md#ipam-prefixes-and-addresses): GET by identifier, the reads the
 * cluster discovery makes. Read-only here: prefixes and addresses are seeded through the admin API, and tagged
 * through the Core resource routes like every other object.
 */
import { isIP } from 'node:net';
import { SimError } from '../errors';
import { decodeSegment, type Reply } from '../http';
import type { Kind, SimObject } from '../model';
import type { Handler, RequestContext, RouteMatch } from './types';

export const IPAM_PREFIX = '/api/ipam/v1/';

/** The fields go-anxcloud's `prefix.Info` reads; the name is the CIDR. */
function renderPrefix(o: SimObject): Record<string, unknown> {
  const [address = '', length = '0'] = o.name.split('/');
  return {
    identifier: o.identifier,
    name: o.name,
    description_customer: '',
    description_internal: '',
    version: isIP(address) === 6 ? 6 : 4,
    netmask: Number(length),
    role_text: 'Default',
    status: 'Active',
    locations: [],
    router_redundancy: false,
    vlans: [],
    type: 0,
  };
}

/** The fields go-anxcloud's `address.Address` reads; `prefix` is the bare identifier of the prefix. */
function renderAddress(o: SimObject): Record<string, unknown> {
  return {
    identifier: o.identifier,
    name: o.name,
    description_customer: '',
    description_internal: '',
    rdns_name: '',
    role_text: 'Default',
    version: isIP(o.name) === 6 ? 6 : 4,
    status: 'Active',
    vlan: '',
    prefix: String(o.fields.prefix ?? ''),
  };
}

const TITLES: Record<'prefix' | 'address', string> = { prefix: 'Prefix', address: 'Address' };

function getOne(kind: 'prefix' | 'address', id: string): Handler {
  return ({ sim }: RequestContext): Reply => {
    const o = sim.store.getLive(id);
    if (!o || o.kind !== (kind satisfies Kind)) throw new SimError(404, `${TITLES[kind]} ${id} not found.`);
    return { status: 200, body: kind === 'prefix' ? renderPrefix(o) : renderAddress(o) };
  };
}

/** Matches `/api/ipam/v1/{prefix,address}.json/<id>`. */
export function matchIpam(path: string): RouteMatch | null {
  if (!path.startsWith(IPAM_PREFIX)) return null;
  const [collection, rawId, ...rest] = path.slice(IPAM_PREFIX.length).split('/');
  const kind = collection === 'prefix.json' ? 'prefix' : collection === 'address.json' ? 'address' : null;
  if (kind === null || !rawId || rest.some((r) => r !== '') || rest.length > 1) return null;
  return { pattern: `${IPAM_PREFIX}${collection}/{id}`, methods: { GET: getOne(kind, decodeSegment(rawId)) } };
}
