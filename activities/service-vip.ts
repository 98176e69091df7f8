/**
 * A Service's own VIP from an IPAM prefix (docs/kubernetes.md#a-vip-of-its-own), for lbaas kube; one activity per
 * operation, each idempotent under retries and lost answers:
 *
 * - allocate: what is tagged `lbaas-kube-vip=<uid>` first (adoption: a restart, another replica, a retry after the
 *   tag was written); then an address of the prefix whose customer description is that same marker (a create whose
 *   answer was lost, or whose tag failed): it is tagged now; only then a new address, the first free one of the
 *   prefix, created with the marker as its description and tagged. A lost create answer therefore never makes a
 *   second address: the retry finds the first by its description.
 * - release: only what carries the tag, read back from the resource itself (the tag index can lag), and only if it is
 *   an IPAM address; anything else listed under the tag is left alone and reported.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { AllocateServiceVipsInput, AllocateServiceVipsResult, ReleaseServiceVipsInput, ReleaseServiceVipsResult, ServiceVip, VipPrefix } from '../contract';
import { FAILURE_TYPES } from '../contract';
import { canonicalIp } from '../domain';
import { fromBigInt, toBigInt } from './discover-vip';
import { EngineNotFoundError, EngineProtocolError, EngineValidationError, parseCidr, type EngineAddress, type EngineClient } from './engine';

/** The tag, and the customer description, that mark an address as the VIP lbaas kube allocated for one Service. */
export const vipTag = (serviceUid: string) => `lbaas-kube-vip=${serviceUid}`;

/** How many addresses of a prefix are tried at most: far more than one cluster's Services, and a bounded scan of an IPv6 /64. */
const MAX_CANDIDATES = 65_536;
/** Picks after a create refused as taken (another client took the address between our list and our create). */
const MAX_PICKS = 5;

const familyOf = (text: string): 4 | 6 => (canonicalIp(text)?.family === 'v6' ? 6 : 4);

function inside(address: string, prefix: VipPrefix): boolean {
  const p = parseCidr(prefix.cidr);
  const ip = canonicalIp(address);
  if (p === null || ip === null || (ip.family === 'v6') !== (p.family === 6)) return false;
  const bits = p.family === 4 ? 32 : 128;
  const host = BigInt(bits - p.length);
  const net = (toBigInt(canonicalIp(p.address)?.text ?? p.address, p.family) >> host) << host;
  return (toBigInt(ip.text, p.family) >> host) << host === net;
}

/**
 * The first address of the prefix that is neither taken nor reserved, skipping the network address and the one after
 * it (the gateway, as go-anxcloud's ipam address integration test counts), the broadcast address and the one below it
 * (the VIP upstream calculates). Null when none is left.
 */
export function firstFree(prefix: VipPrefix, taken: ReadonlySet<string>): string | null {
  const p = parseCidr(prefix.cidr);
  if (p === null) return null;
  const bits = p.family === 4 ? 32 : 128;
  const hostBits = BigInt(bits - p.length);
  if (hostBits < 3n) return null;
  const network = (toBigInt(canonicalIp(p.address)?.text ?? p.address, p.family) >> hostBits) << hostBits;
  const last = network + (1n << hostBits) - 3n;
  const end = network + 2n + BigInt(MAX_CANDIDATES) <= last ? network + 2n + BigInt(MAX_CANDIDATES) - 1n : last;
  for (let n = network + 2n; n <= end; n++) {
    const text = fromBigInt(n, p.family);
    if (!taken.has(text)) return text;
  }
  return null;
}

function unusable(err: unknown): boolean {
  return err instanceof EngineNotFoundError || err instanceof EngineValidationError || err instanceof EngineProtocolError;
}

/** Tags `id`; a 422 is success when the resource carries the tag already (a retry after a lost tag answer). */
async function ensureTagged(engine: EngineClient, id: string, tag: string): Promise<void> {
  try {
    await engine.tag(id, tag);
  } catch (err) {
    if (!(err instanceof EngineValidationError)) throw err;
    const resource = await engine.getResource(id);
    if (!resource.tags.includes(tag)) throw err;
  }
}

/** The IPAM addresses carrying the tag (read back: the index can list what no longer carries it, or is no address). */
async function tagged(engine: EngineClient, tag: string): Promise<{ owned: EngineAddress[]; skipped: { identifier: string; reason: string }[] }> {
  const owned: EngineAddress[] = [];
  const skipped: { identifier: string; reason: string }[] = [];
  for (const ref of await engine.listResourcesByTag(tag)) {
    try {
      const resource = await engine.getResource(ref.identifier);
      if (!resource.tags.includes(tag)) {
        skipped.push({ identifier: ref.identifier, reason: `listed under ${tag} but does not carry it` });
        continue;
      }
      owned.push(await engine.getAddress(ref.identifier));
    } catch (err) {
      if (!unusable(err)) throw err;
      skipped.push({ identifier: ref.identifier, reason: `not an IPAM address (${(err as Error).message})` });
    }
  }
  return { owned, skipped };
}

export async function allocateServiceVips(engine: EngineClient, input: AllocateServiceVipsInput): Promise<AllocateServiceVipsResult> {
  const tag = vipTag(input.serviceUid);
  const { owned } = await tagged(engine, tag);
  const reserved = new Set(input.reserved.flatMap((a) => canonicalIp(a)?.text ?? []));
  const vips: ServiceVip[] = [];
  for (const prefix of input.prefixes) {
    const have = owned.find((a) => a.prefix === prefix.identifier) ?? owned.find((a) => inside(a.name, prefix));
    if (have) {
      vips.push({ identifier: have.identifier, address: canonicalIp(have.name)?.text ?? have.name, family: familyOf(have.name), prefix: prefix.identifier, how: 'adopted' });
      continue;
    }
    vips.push(await reserveIn(engine, prefix, tag, reserved));
  }
  return { vips };
}

async function reserveIn(engine: EngineClient, prefix: VipPrefix, tag: string, reserved: ReadonlySet<string>): Promise<ServiceVip> {
  for (let pick = 1; ; pick++) {
    const listed = await engine.listPrefixAddresses(prefix.identifier);
    const marked = listed.find((a) => a.description_customer === tag);
    if (marked) {
      await ensureTagged(engine, marked.identifier, tag);
      return { identifier: marked.identifier, address: canonicalIp(marked.name)?.text ?? marked.name, family: familyOf(marked.name), prefix: prefix.identifier, how: 'adopted' };
    }
    const taken = new Set([...reserved, ...listed.flatMap((a) => canonicalIp(a.name)?.text ?? [])]);
    const address = firstFree(prefix, taken);
    if (address === null) {
      throw ApplicationFailure.create({
        type: FAILURE_TYPES.engineRejected,
        nonRetryable: true,
        message: `prefix ${prefix.cidr} (${prefix.identifier}) has no free address left for a VIP (${listed.length} addresses in use)`,
      });
    }
    let created;
    try {
      created = await engine.createAddress({ prefix: prefix.identifier, name: address, description_customer: tag });
    } catch (err) {
      if (err instanceof EngineProtocolError && err.createdIdentifier !== undefined) {
        // Created, answer unreadable: it is the address we asked for; tag it by the identifier the answer had.
        await ensureTagged(engine, err.createdIdentifier, tag);
        return { identifier: err.createdIdentifier, address, family: prefix.family, prefix: prefix.identifier, how: 'reserved' };
      }
      // Taken between the list and the create (another client of the prefix): list again and pick the next one.
      if (err instanceof EngineValidationError && pick < MAX_PICKS) continue;
      throw err;
    }
    await ensureTagged(engine, created.identifier, tag);
    return { identifier: created.identifier, address: canonicalIp(created.name)?.text ?? created.name, family: familyOf(created.name), prefix: prefix.identifier, how: 'reserved' };
  }
}

export async function releaseServiceVips(engine: EngineClient, input: ReleaseServiceVipsInput): Promise<ReleaseServiceVipsResult> {
  const { owned, skipped } = await tagged(engine, vipTag(input.serviceUid));
  const released: ReleaseServiceVipsResult['released'] = [];
  for (const a of owned) {
    try {
      await engine.deleteAddress(a.identifier);
    } catch (err) {
      if (!(err instanceof EngineNotFoundError)) throw err;
    }
    released.push({ identifier: a.identifier, address: canonicalIp(a.name)?.text ?? a.name });
  }
  return { released, skipped };
}
