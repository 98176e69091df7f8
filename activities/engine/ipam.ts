/**
 * IPAM v1 answers (docs/engine-api.md#ipam-prefixes-and-addresses): a prefix's CIDR and an address's text and
 * prefix, which is all the cluster discovery reads; and the address summaries of a prefix's filtered list and of a
 * create, whose customer description is how a Service's VIP whose create answer was lost is found again. Unknown fields are dropped; a prefix whose name is not CIDR or an
 * address whose name is not an IP fails the parse (EngineProtocolError), since nothing sensible can be made of it.
 */
import { isIP } from 'node:net';
import { z } from 'zod';

export const IPAM_PREFIX = '/api/ipam/v1';

const identifier = z.string().min(1);

/** `<address>/<length>`, the length within the family's bits. */
export function parseCidr(text: string): { address: string; length: number; family: 4 | 6 } | null {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(text);
  if (!m?.[1] || !m[2]) return null;
  const family = isIP(m[1]);
  const length = Number(m[2]);
  if (family === 0 || length > (family === 4 ? 32 : 128)) return null;
  return { address: m[1], length, family: family as 4 | 6 };
}

export const ipamPrefixSchema = z.object({
  identifier,
  name: z.string().refine((n) => parseCidr(n) !== null, { message: 'is not a prefix in CIDR notation' }),
});
export type EnginePrefix = z.infer<typeof ipamPrefixSchema>;

export const ipamAddressSchema = z.object({
  identifier,
  name: z.string().refine((n) => isIP(n) !== 0, { message: 'is not an IP address' }),
  // go-anxcloud reads a bare identifier; an empty one (an address outside any prefix) is kept as "".
  prefix: z.string().nullish().transform((p) => p ?? ''),
});
export type EngineAddress = z.infer<typeof ipamAddressSchema>;

/**
 * An address as the filtered list and a create answer it (go-anxcloud's ipam address Summary): no prefix, but the
 * customer description we wrote. A missing description (sparse answer) reads as "".
 */
export const ipamAddressSummarySchema = z.object({
  identifier,
  name: z.string().refine((n) => isIP(n) !== 0, { message: 'is not an IP address' }),
  description_customer: z.string().nullish().transform((d) => d ?? ''),
});
export type EngineAddressSummary = z.infer<typeof ipamAddressSummarySchema>;

/**
 * One page of `address/filtered.json`: go-anxcloud reads `data.data`; the page counters, when present, end the
 * listing like every other list.
 */
export const ipamAddressPageSchema = z.object({
  data: z.object({
    page: z.number().int().nullish(),
    total_pages: z.number().int().nullish(),
    total_items: z.number().int().nullish(),
    limit: z.number().int().nullish(),
    data: z.array(ipamAddressSummarySchema),
  }),
});

/** The body of an address create (go-anxcloud's ipam address Create): the prefix's identifier and the address itself. */
export interface AddressCreate {
  prefix: string;
  name: string;
  description_customer: string;
}
