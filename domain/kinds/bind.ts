/**
 * Bind: one per external address and port, `<v4|v6>.<port>.<suffix>`, listening on the external port without TLS.
 * The name carries only the family, so Binds of two addresses of one family share a name: the key adds the address.
 */
import { BIND_SSL, resourceName } from '../names';
import type { PortSpec } from '../types';
import type { DesiredOf } from './compare';
import { defineKind } from './define';
import { frontendKey } from './frontend';

export const bind = defineKind({
  kind: 'bind',
  title: 'Bind',
  resourceType: 'bd24def982aa478fb3352cb5f49aab47',
  fields: {
    name: { type: 'string', compared: true },
    address: { type: 'string', compared: true },
    port: { type: 'integer', compared: true },
    // Upstream compares name, address, port and frontend; ssl is compared too, so a TLS Bind is never adopted.
    ssl: { type: 'boolean', compared: true, engineDefault: true },
    frontend: { type: 'link', compared: true, to: 'frontend' },
    ssl_certificate_path: { type: 'string', compared: false, omitEmpty: true },
  },
  dependsOn: 'frontend',
  listedUnder: 'frontend',
  destroyStage: 0,
});

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
