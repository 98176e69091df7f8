/** Server: one per backend server and port, `<server>.<port>.<suffix>`, the internal (NodePort) port, checked. */
import { SERVER_CHECK_ENABLED, resourceName } from '../names';
import type { PortSpec, ServerSpec } from '../types';
import { backendKey } from './backend';
import type { DesiredOf } from './compare';
import { defineKind } from './define';

export const server = defineKind({
  kind: 'server',
  title: 'Server',
  resourceType: '01f321a4875446409d7d8469503a905f',
  fields: {
    name: { type: 'string', compared: true },
    ip: { type: 'string', compared: true },
    port: { type: 'integer', compared: true },
    check: { type: 'string', compared: true, engineDefault: true, omitEmpty: true },
    backend: { type: 'link', compared: true, to: 'backend' },
  },
  dependsOn: 'backend',
  listedUnder: 'backend',
  destroyStage: 0,
});

export function desiredServer(port: string, ports: PortSpec, server: ServerSpec, nameSuffix: string): DesiredOf<'server'> {
  const name = resourceName([server.name, port], nameSuffix);
  return {
    kind: 'server',
    key: `server:${port}:${server.name}`,
    name,
    port,
    parent: backendKey(port),
    fields: { name, ip: server.address, port: ports.internal, check: SERVER_CHECK_ENABLED },
  };
}
