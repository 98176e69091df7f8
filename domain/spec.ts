/**
 * Validation of a service spec (docs/spec.md#validation): one pure function that reports every violation at once,
 * each with its field path and an exact message, and returns the spec in canonical form.
 */
import { SERVICE_UID_PATTERN, SERVICE_UID_RULE } from './names';
import { checkReadiness } from './spec-readiness';
import { IssueList, indexPath, isRecord, keyPath, type SpecIssue } from './spec-issues';
import { ADDRESS_RULE, checkAddress, checkPattern, checkServers, MAX_SERVERS, SERVER_NAME_RULE } from './spec-servers';
import { POOL_NAME_PATTERN, POOL_NAME_RULE } from './names';
import type { FailedResourcesPolicy, PortSpec, ServiceSpec, ValidatedSpec } from './types';

export { formatIssues, type SpecIssue } from './spec-issues';
export { DEFAULT_READINESS, READINESS_LIMITS } from './spec-readiness';
export { SERVICE_TAG_PREFIX, serviceTag } from './names';

/** A failed object is first asked to redeploy in place: it keeps its identifier and its children. */
export const DEFAULT_FAILED_RESOURCES: FailedResourcesPolicy = 'recover';

/**
 * Size limits, so that a hostile or mistaken spec cannot make validation, planning or workflow history blow up.
 * Each is far beyond a real service. Objects per load balancer is the one that binds in practice: snapshots and
 * plans travel as single Temporal payloads (2 MiB limit, a few hundred bytes per object).
 */
export const SPEC_LIMITS = Object.freeze({
  loadBalancers: 1024,
  externalAddresses: 1024,
  ports: 1024,
  servers: MAX_SERVERS,
  // A pool of MAX_SERVERS nodes on one port with its Backend, Frontend and up to 98 Binds: about 1.4 MB as one load
  // balancer's observation (some 270 bytes per object), under Temporal's 2 MiB payload limit.
  objectsPerLoadBalancer: 5100,
});

export type SpecResult = { ok: true; spec: ValidatedSpec } | { ok: false; issues: SpecIssue[] };

const TOP_KEYS = [
  'serviceUid',
  'nameSuffix',
  'loadBalancers',
  'externalAddresses',
  'ports',
  'servers',
  'serverPool',
  'readiness',
  'failedResources',
] as const;
const PORT_KEYS = ['external', 'internal'] as const;

const NAME_SUFFIX = /^[A-Za-z0-9._-]{0,200}$/;
const PORT_NAME = /^[a-z0-9-]{1,63}$/;
const LOAD_BALANCER_MAX_LENGTH = 128;

export const MESSAGES = Object.freeze({
  serviceUid: SERVICE_UID_RULE,
  nameSuffix: 'must be at most 200 characters of A-Z a-z 0-9 . _ -',
  address: ADDRESS_RULE,
  portName: 'port names must be 1-63 characters of a-z 0-9 -, or "" for a single unnamed port',
  portNumber: 'must be an integer from 1 to 65535',
  serverName: SERVER_NAME_RULE,
  serverPool: POOL_NAME_RULE,
});

/** Validates and canonicalizes a parsed YAML/JSON spec. Never throws; reports every violation it finds. */
export function validateSpec(input: unknown): SpecResult {
  const issues = new IssueList();
  if (!isRecord(input)) {
    issues.add('', `the spec must be a mapping with the keys ${TOP_KEYS.join(', ')}`);
    return { ok: false, issues: issues.issues };
  }
  issues.unknownKeys(input, TOP_KEYS, '');
  const serviceUid = checkPattern(input.serviceUid, 'serviceUid', SERVICE_UID_PATTERN, MESSAGES.serviceUid, issues);
  const nameSuffix = checkPattern(input.nameSuffix, 'nameSuffix', NAME_SUFFIX, MESSAGES.nameSuffix, issues);
  const loadBalancers = checkLoadBalancers(input.loadBalancers, issues);
  const externalAddresses = checkAddresses(input.externalAddresses, issues);
  const ports = checkPorts(input.ports, issues);
  const { servers, serverPool } = checkServerSource(input, issues);
  const readiness = checkReadiness(input.readiness, issues);
  const failedResources = checkFailedResources(input.failedResources, issues);

  if (ports !== null) {
    const names = Object.keys(ports);
    if (nameSuffix === '' && names.length === 1 && names[0] === '') {
      issues.add('nameSuffix', 'must not be empty when the only port is unnamed (""): every Backend and Frontend name would be empty');
    }
    // With a pool the server count is known only when the pool is resolved; the controller checks it then.
    if (externalAddresses !== null && servers !== null && serverPool === undefined) {
      const objects = names.length * (2 + externalAddresses.length + servers.length);
      if (objects > SPEC_LIMITS.objectsPerLoadBalancer) {
        issues.add(
          'ports',
          `this spec means ${objects} Engine objects per load balancer (ports x (2 + externalAddresses + servers)); at most ${SPEC_LIMITS.objectsPerLoadBalancer} are supported`,
        );
      }
    }
  }

  if (
    issues.issues.length > 0 ||
    serviceUid === null ||
    nameSuffix === null ||
    loadBalancers === null ||
    externalAddresses === null ||
    ports === null ||
    servers === null ||
    readiness === null ||
    failedResources === null
  ) {
    return { ok: false, issues: issues.issues };
  }
  const spec: ServiceSpec = { serviceUid, nameSuffix, loadBalancers, externalAddresses, ports, servers, ...(serverPool === undefined ? {} : { serverPool }), readiness, failedResources };
  // The one place a spec is branded as validated: every check above has passed.
  return { ok: true, spec: spec as ValidatedSpec };
}


function checkLoadBalancers(value: unknown, issues: IssueList): string[] | null {
  const list = issues.list(value, 'loadBalancers', SPEC_LIMITS.loadBalancers, 'load balancers');
  if (list === null) return null;
  if (list.length === 0) {
    issues.add('loadBalancers', 'must list at least one load balancer');
    return null;
  }
  const seen = new Map<string, number>();
  let valid = true;
  list.forEach((item, index) => {
    const path = indexPath('loadBalancers', index);
    const id = issues.string(item, path);
    let message: string | null = null;
    if (id === null) message = null;
    else if (id === '') message = 'must not be empty';
    else if (id.length > LOAD_BALANCER_MAX_LENGTH) message = `must be at most ${LOAD_BALANCER_MAX_LENGTH} characters`;
    else if (id.includes('/')) message = 'must not contain "/" (load balancer identifiers are part of workflow ids)';
    // eslint-disable-next-line no-control-regex
    else if (/[\s\u0000-\u001f\u007f]/.test(id)) message = 'must not contain whitespace or control characters';
    else if (seen.has(id)) message = `duplicate of ${indexPath('loadBalancers', seen.get(id) ?? 0)}`;
    if (id === null || message !== null) {
      if (message !== null) issues.add(path, message);
      valid = false;
      return;
    }
    seen.set(id, index);
  });
  return valid ? [...seen.keys()] : null;
}

function checkAddresses(value: unknown, issues: IssueList): string[] | null {
  const list = issues.list(value, 'externalAddresses', SPEC_LIMITS.externalAddresses, 'addresses');
  if (list === null) return null;
  const seen = new Map<string, number>();
  let valid = true;
  list.forEach((item, index) => {
    const path = indexPath('externalAddresses', index);
    const ip = checkAddress(item, path, issues);
    if (ip === null) {
      valid = false;
    } else if (seen.has(ip)) {
      issues.add(path, `duplicate of ${indexPath('externalAddresses', seen.get(ip) ?? 0)} (both are ${ip})`);
      valid = false;
    } else {
      seen.set(ip, index);
    }
  });
  return valid ? [...seen.keys()] : null;
}


function checkPorts(value: unknown, issues: IssueList): Record<string, PortSpec> | null {
  if (value === undefined) {
    issues.add('ports', 'required');
    return null;
  }
  if (!isRecord(value)) {
    issues.add('ports', 'must be a mapping of port name to {external, internal}');
    return null;
  }
  const names = Object.keys(value);
  if (names.length > SPEC_LIMITS.ports) {
    issues.add('ports', `must have at most ${SPEC_LIMITS.ports} ports (has ${names.length})`);
    return null;
  }
  const ports: Record<string, PortSpec> = {};
  const byExternal = new Map<number, string>();
  let valid = true;
  for (const name of names) {
    const path = keyPath('ports', name);
    if (name === '' ? names.length > 1 : !PORT_NAME.test(name)) {
      issues.add(path, name === '' ? 'the unnamed port "" must be the only port: it leaves nothing in the names to tell ports apart' : MESSAGES.portName);
      valid = false;
    }
    const entry = value[name];
    if (!isRecord(entry)) {
      issues.add(path, 'must be a mapping {external, internal}');
      valid = false;
      continue;
    }
    issues.unknownKeys(entry, PORT_KEYS, path);
    const external = checkPortNumber(entry.external, keyPath(path, 'external'), issues);
    if (external !== null) {
      const first = byExternal.get(external);
      if (first !== undefined) {
        issues.add(keyPath(path, 'external'), `external port ${external} is also used by ${keyPath('ports', first)}`);
        valid = false;
      } else {
        byExternal.set(external, name);
      }
    }
    const internal = checkPortNumber(entry.internal, keyPath(path, 'internal'), issues);
    if (external === null || internal === null) valid = false;
    else Object.defineProperty(ports, name, { value: { external, internal }, enumerable: true, writable: true, configurable: true });
  }
  return valid ? ports : null;
}

function checkPortNumber(value: unknown, path: string, issues: IssueList): number | null {
  if (value === undefined) {
    issues.add(path, 'required');
    return null;
  }
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535) {
    issues.add(path, MESSAGES.portNumber);
    return null;
  }
  return value;
}


/**
 * Exactly one of `servers` (inline) and `serverPool` (the name of a pool, resolved by the controller). A pool
 * spec's canonical form has `servers: []` and `serverPool`; resolvePool (domain/pool.ts) fills the servers in.
 */
function checkServerSource(input: Record<string, unknown>, issues: IssueList): { servers: ServiceSpec['servers'] | null; serverPool?: string } {
  const hasPool = input.serverPool !== undefined;
  if (hasPool && input.servers !== undefined) {
    issues.add('serverPool', 'give either servers or serverPool, not both');
    return { servers: null };
  }
  if (!hasPool) {
    if (input.servers === undefined) {
      issues.add('servers', 'required (or serverPool: the name of a server pool)');
      return { servers: null };
    }
    return { servers: checkServers(input.servers, issues) };
  }
  const name = checkPattern(input.serverPool, 'serverPool', POOL_NAME_PATTERN, POOL_NAME_RULE, issues);
  return name === null ? { servers: null } : { servers: [], serverPool: name };
}

function checkFailedResources(value: unknown, issues: IssueList): FailedResourcesPolicy | null {
  if (value === undefined) return DEFAULT_FAILED_RESOURCES;
  if (value === 'recover' || value === 'recreate') return value;
  issues.add('failedResources', 'must be "recover" or "recreate"');
  return null;
}
