/**
 * Names, tags and fixed field values shared with the upstream controller (k8s-anexia-ccm). They must stay byte
 * for byte identical to what it wrote, or adopting its objects would replace every one of them.
 */

/** The Core tag that marks an Engine object as owned by a service. */
export const SERVICE_TAG_PREFIX = 'anxccm-svc-uid=';

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
