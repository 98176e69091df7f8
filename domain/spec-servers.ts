/**
 * Validation of server entries `{name, address}`, shared by a service spec's `servers` and a pool file's
 * `servers` (domain/pool.ts): both must accept and reject exactly the same entries, since a service moved from
 * inline servers to a pool must mean the same Engine objects.
 */
import { canonicalIp } from './ip';
import { type IssueList, indexPath, isRecord, keyPath } from './spec-issues';
import type { ServerSpec } from './types';

/**
 * At most this many servers per service or pool: Kubernetes' documented largest cluster, 5,000 nodes, since every Node
 * of a cluster becomes a member of its pool (docs/kubernetes.md); it also bounds validation work.
 */
export const MAX_SERVERS = 5000;

const SERVER_KEYS = ['name', 'address'] as const;
const SERVER_NAME = /^[A-Za-z0-9._-]{1,253}$/;

export const ADDRESS_RULE = 'must be an IPv4 or IPv6 address without zone, like 203.0.113.10 or 2001:db8::10';
export const SERVER_NAME_RULE = 'must be 1-253 characters of A-Z a-z 0-9 . _ -';

export function checkPattern(value: unknown, path: string, pattern: RegExp, message: string, issues: IssueList): string | null {
  const text = issues.string(value, path);
  if (text === null) return null;
  if (!pattern.test(text)) {
    issues.add(path, message);
    return null;
  }
  return text;
}

export function checkAddress(value: unknown, path: string, issues: IssueList): string | null {
  const text = issues.string(value, path);
  if (text === null) return null;
  const ip = canonicalIp(text);
  if (ip === null) {
    issues.add(path, ADDRESS_RULE);
    return null;
  }
  return ip.text;
}

/** The list of servers at `value` (reported at `base`, e.g. `servers`), canonical, or null after reporting why not. */
export function checkServers(value: unknown, issues: IssueList, base = 'servers'): ServerSpec[] | null {
  const list = issues.list(value, base, MAX_SERVERS, 'servers');
  if (list === null) return null;
  const servers: ServerSpec[] = [];
  const seen = new Map<string, number>();
  let valid = true;
  list.forEach((item, index) => {
    const path = indexPath(base, index);
    if (!isRecord(item)) {
      issues.add(path, 'must be a mapping {name, address}');
      valid = false;
      return;
    }
    issues.unknownKeys(item, SERVER_KEYS, path);
    const namePath = keyPath(path, 'name');
    let name = checkPattern(item.name, namePath, SERVER_NAME, SERVER_NAME_RULE, issues);
    if (name !== null && seen.has(name)) {
      issues.add(namePath, `duplicate of ${keyPath(indexPath(base, seen.get(name) ?? 0), 'name')}`);
      name = null;
    } else if (name !== null) {
      seen.set(name, index);
    }
    const address = checkAddress(item.address, keyPath(path, 'address'), issues);
    if (name === null || address === null) valid = false;
    else servers.push({ name, address });
  });
  return valid ? servers : null;
}
