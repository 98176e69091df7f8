/**
 * IPAM v1 prefixes and addresses (docs/engine-api.md#ipam-prefixes-and-addresses): GET by identifier, the reads the
 * cluster discovery makes; and the address calls a Service's own VIP needs: the filtered list of a prefix's addresses,
 * create (an address of a prefix, named by the caller) and delete. Prefixes are seeded through the admin API; both
 * kinds are tagged through the Core resource routes like every other object.
 */
import { BlockList, isIP } from 'node:net';
import { SimError } from '../errors';
import { decodeSegment, paging, parseJsonObject, type Reply } from '../http';
import type { Kind, SimObject } from '../model';
import type { Simulator } from '../sim';
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
    description_customer: String(o.fields.description_customer ?? ''),
    description_internal: '',
    rdns_name: '',
    role_text: 'Default',
    version: isIP(o.name) === 6 ? 6 : 4,
    status: 'Active',
    vlan: '',
    prefix: String(o.fields.prefix ?? ''),
  };
}

/** go-anxcloud's `address.Summary`: what a create and the filtered list answer (no prefix). */
function renderSummary(o: SimObject): Record<string, unknown> {
  return { identifier: o.identifier, name: o.name, description_customer: String(o.fields.description_customer ?? ''), role_text: 'Default', rdns_name: '' };
}

const TITLES: Record<'prefix' | 'address', string> = { prefix: 'Prefix', address: 'Address' };

function getOne(kind: 'prefix' | 'address', id: string): Handler {
  return ({ sim }: RequestContext): Reply => {
    const o = sim.store.getLive(id);
    if (!o || o.kind !== (kind satisfies Kind)) throw new SimError(404, `${TITLES[kind]} ${id} not found.`);
    return { status: 200, body: kind === 'prefix' ? renderPrefix(o) : renderAddress(o) };
  };
}

function inPrefix(address: string, cidr: string): boolean {
  const [net = '', length = '0'] = cidr.split('/');
  const family = isIP(net) === 6 ? 'ipv6' : 'ipv4';
  if ((isIP(address) === 6 ? 'ipv6' : 'ipv4') !== family) return false;
  const list = new BlockList();
  list.addSubnet(net, Number(length), family);
  return list.check(address, family);
}

/** The live addresses of a prefix (the index by prefix), in creation order. */
function addressesOf(sim: Simulator, prefixId: string): SimObject[] {
  const result = sim.store.query('address', [['prefix', prefixId]]);
  return result.slice(0, result.total).filter((o) => !o.deleting);
}

/**
 * An address of a prefix, named by the caller. Besides the usual field checks: the address must lie inside the prefix
 * and not be taken by another address of it (422 naming `name`), as a real IPAM refuses a duplicate.
 */
const createAddress: Handler = ({ sim, body }: RequestContext): Reply => {
  const parsed = parseJsonObject(body);
  const prefixId = typeof parsed.prefix === 'string' ? parsed.prefix : '';
  const prefix = prefixId === '' ? undefined : sim.store.getLive(prefixId);
  const name = typeof parsed.name === 'string' ? parsed.name : '';
  if (prefix?.kind === 'prefix' && isIP(name) !== 0) {
    if (!inPrefix(name, prefix.name)) throw new SimError(422, 'Validation failed.', { name: `Address ${name} is not inside prefix ${prefix.name}.` });
    if (addressesOf(sim, prefix.identifier).some((a) => a.name === name)) throw new SimError(422, 'Validation failed.', { name: `Address ${name} is already in use.` });
  }
  const o = sim.create('address', parsed);
  return { status: 200, body: renderSummary(o), mutated: true };
};

function deleteAddress(id: string): Handler {
  return ({ sim }: RequestContext): Reply => {
    const o = sim.store.get(id);
    if (!o || o.kind !== 'address') throw new SimError(404, `Address ${id} not found.`);
    return { status: 200, body: {}, mutated: sim.remove(o) };
  };
}

/** `address/filtered.json?prefix=<id>`: the LBaaS-style envelope go-anxcloud's GetFiltered reads (`data.data`). */
const filteredAddresses: Handler = ({ sim, query }: RequestContext): Reply => {
  const prefixId = query.get('prefix');
  const every = sim.store.query('address', []);
  const all = prefixId === null ? every.slice(0, every.total).filter((o) => !o.deleting) : addressesOf(sim, prefixId);
  const p = paging(query);
  const items = all.slice((p.page - 1) * p.limit, p.page * p.limit).map(renderSummary);
  return {
    status: 200,
    body: { state: 'success', messages: [], data: { page: p.page, total_pages: Math.ceil(all.length / p.limit), total_items: all.length, limit: p.limit, data: items } },
  };
};

/** Matches `/api/ipam/v1/{prefix,address}.json/<id>`, `/api/ipam/v1/address.json` and `/api/ipam/v1/address/filtered.json`. */
export function matchIpam(path: string): RouteMatch | null {
  if (!path.startsWith(IPAM_PREFIX)) return null;
  const rest = path.slice(IPAM_PREFIX.length);
  if (rest === 'address/filtered.json') return { pattern: `${IPAM_PREFIX}address/filtered.json`, methods: { GET: filteredAddresses } };
  if (rest === 'address.json' || rest === 'address.json/') return { pattern: `${IPAM_PREFIX}address.json`, methods: { POST: createAddress } };
  const [collection, rawId, ...tail] = rest.split('/');
  const kind = collection === 'prefix.json' ? 'prefix' : collection === 'address.json' ? 'address' : null;
  if (kind === null || !rawId || tail.some((r) => r !== '') || tail.length > 1) return null;
  const id = decodeSegment(rawId);
  const methods: RouteMatch['methods'] = { GET: getOne(kind, id) };
  if (kind === 'address') methods.DELETE = deleteAddress(id);
  return { pattern: `${IPAM_PREFIX}${collection}/{id}`, methods };
}
