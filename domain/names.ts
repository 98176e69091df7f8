/**
 * Names, tags and fixed field values shared with the upstream controller (k8s-anexia-ccm). They must stay byte
 * for byte identical to what it wrote, or adopting its objects would replace every one of them.
 */

/** The Core tag that marks an Engine object as owned by a service. */
export const SERVICE_TAG_PREFIX = 'anxccm-svc-uid=';

/**
 * The service-uid rule, the one every entry point checks (spec validation, the controller's input, the CLI's uid
 * arguments): a uid becomes part of workflow ids (`lbaas/<uid>/...`) and of the tag, so it must be plain text.
 * 128 characters hold a Kubernetes uid (36) with room to spare.
 */
export const SERVICE_UID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
export const SERVICE_UID_RULE = 'must be 1-128 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit';

export function isServiceUid(value: unknown): value is string {
  return typeof value === 'string' && SERVICE_UID_PATTERN.test(value);
}

export function serviceTag(serviceUid: string): string {
  return `${SERVICE_TAG_PREFIX}${serviceUid}`;
}

/** Frontends and Backends balance plain TCP. */
export const MODE_TCP = 'tcp';

/** The Backend health check, exactly as the upstream controller sends it (the Engine echoes it unchanged). */
export const TCP_HEALTH_CHECK = '"adv_check": "tcp-check"';

/** Servers are health-checked. */
export const SERVER_CHECK_ENABLED = 'enabled';

/** Binds terminate no TLS: the service behind the NodePort does. */
export const BIND_SSL = false;

/** Joins the non-empty parts and the suffix with `.`, as upstream's makeResourceName does. */
export function resourceName(parts: readonly string[], nameSuffix: string): string {
  return [...parts, nameSuffix].filter((part) => part !== '').join('.');
}

/**
 * Server pool names follow the service-uid rule for the same reason: a pool name is part of its workflow id
 * (`lbaas-pool/<name>`) and of search attributes, so it must be plain text.
 */
export const POOL_NAME_PATTERN = SERVICE_UID_PATTERN;
export const POOL_NAME_RULE = 'must be 1-128 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit';

export function isPoolName(value: unknown): value is string {
  return typeof value === 'string' && POOL_NAME_PATTERN.test(value);
}
