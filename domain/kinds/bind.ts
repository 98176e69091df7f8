/**
 * Bind: one per external address and port, `<v4|v6>.<port>.<suffix>`, listening on the external port without TLS.
 * The name carries only the family, so Binds of two addresses of one family share a name: the key adds the address.
 */
import { defineKind } from './define';

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
