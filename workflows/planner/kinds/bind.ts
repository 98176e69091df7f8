/**
 * Bind: one per external address and port, `<v4|v6>.<port>.<suffix>`, listening on the external port without TLS.
 * The name carries only the family, so Binds of two addresses of one family share a name: the key adds the address.
 */
import type { DesiredOf, KindRules } from '../diff';
import { BIND_SSL, resourceName } from '../names';
import type { PortSpec } from '../types';
import { frontendKey } from './frontend';

export const bindRules: KindRules<'bind'> = {
  kind: 'bind',
  // Upstream compares name, address, port and frontend; we add ssl (docs/spec.md#compared-fields), so a TLS Bind is
  // never adopted.
  compared: [(f) => f.name, (f) => f.address, (f) => f.port, (f) => f.ssl, (f) => f.frontend],
  parentOf: (f) => f.frontend,
  complete: (fields, parentId) => ({ ...fields, frontend: parentId }),
};

/**
 * `address` is canonical (as validateSpec leaves it): canonical IPv6 text always has a colon, canonical IPv4
 * (including what was an IPv4-mapped IPv6 address) never does, which is the family upstream derives with To4().
 */
export function desiredBind(port: string, ports: PortSpec, address: string, nameSuffix: string): DesiredOf<'bind'> {
  const family = address.includes(':') ? 'v6' : 'v4';
  const name = resourceName([family, port], nameSuffix);
  return {
    kind: 'bind',
    key: `bind:${port}:${address}`,
    name,
    port,
    parent: frontendKey(port),
    fields: { name, address, port: ports.external, ssl: BIND_SSL },
  };
}
