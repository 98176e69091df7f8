/**
 * allocateServiceVips and releaseServiceVips: a Service's own VIP from an IPAM prefix, for lbaas kube
 * (docs/kubernetes.md#a-vip-of-its-own). Short one-shots around one activity each (activities/service-vip.ts), so
 * that lbaas kube stays a Temporal client and the Engine token stays on the workers; Temporal retries the activity,
 * which is idempotent (find by tag, then by description, before creating). The id of each is per Service
 * (contract/ids.ts), so a second starter joins the running one.
 */
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { AllocateServiceVipsInput, AllocateServiceVipsResult, ReleaseServiceVipsInput, ReleaseServiceVipsResult, VipPrefix } from '../contract';
import { fieldsOf, invalidInput, onlyKnownFields } from './input';
import { ENGINE_CALL } from './options';

/** As discovery's: about a minute of Engine trouble is ridden out; longer, and lbaas kube's next sync tries again. */
const VIP_CALL = { ...ENGINE_CALL, retry: { ...ENGINE_CALL.retry, maximumAttempts: 13 } };

const UID = /^[^\s/]{1,128}$/;

function uidOf(fields: Record<string, unknown>, where: string): string {
  const uid = fields.serviceUid;
  if (typeof uid !== 'string' || !UID.test(uid)) throw invalidInput(`${where}: serviceUid: must be 1-128 characters without whitespace or "/"`);
  return uid;
}

function prefixesOf(input: Record<string, unknown>, where: string): VipPrefix[] {
  const { prefixes } = input;
  if (!Array.isArray(prefixes) || prefixes.length === 0 || prefixes.length > 2) throw invalidInput(`${where}: prefixes: must list 1 or 2 prefixes (one per IP family)`);
  return prefixes.map((p: unknown, i) => {
    const r = (typeof p === 'object' && p !== null ? p : {}) as Record<string, unknown>;
    onlyKnownFields(r, `${where}: prefixes[${i}]`, ['identifier', 'cidr', 'family']);
    if (typeof r.identifier !== 'string' || r.identifier === '' || typeof r.cidr !== 'string' || !/^[0-9a-fA-F.:]+\/\d{1,3}$/.test(r.cidr) || (r.family !== 4 && r.family !== 6)) {
      throw invalidInput(`${where}: prefixes[${i}]: must be {identifier, cidr, family: 4 | 6}`);
    }
    return { identifier: r.identifier, cidr: r.cidr, family: r.family };
  });
}

export async function allocateServiceVips(input: AllocateServiceVipsInput): Promise<AllocateServiceVipsResult> {
  const where = `allocateServiceVips (${workflowInfo().workflowId})`;
  const fields = fieldsOf(input, where, '"serviceUid" and "prefixes"');
  onlyKnownFields(fields, where, ['serviceUid', 'prefixes', 'reserved']);
  const serviceUid = uidOf(fields, where);
  const prefixes = prefixesOf(fields, where);
  const reserved = fields.reserved ?? [];
  if (!Array.isArray(reserved) || reserved.some((r) => typeof r !== 'string')) throw invalidInput(`${where}: reserved: must be a list of addresses`);
  const engine = proxyActivities<Activities>(VIP_CALL);
  return engine.allocateServiceVips.executeWithOptions({ summary: `VIPs of service ${serviceUid}` }, [{ serviceUid, prefixes, reserved: reserved as string[] }]);
}

export async function releaseServiceVips(input: ReleaseServiceVipsInput): Promise<ReleaseServiceVipsResult> {
  const where = `releaseServiceVips (${workflowInfo().workflowId})`;
  const fields = fieldsOf(input, where, '"serviceUid"');
  onlyKnownFields(fields, where, ['serviceUid']);
  const serviceUid = uidOf(fields, where);
  const engine = proxyActivities<Activities>(VIP_CALL);
  return engine.releaseServiceVips.executeWithOptions({ summary: `release the VIPs of service ${serviceUid}` }, [{ serviceUid }]);
}
