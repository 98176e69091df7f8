/** Server: one per backend server and port, `<server>.<port>.<suffix>`, the internal (NodePort) port, checked. */
import type { DesiredOf, KindRules } from '../diff';
import { SERVER_CHECK_ENABLED, resourceName } from '../names';
import type { PortSpec, ServerSpec } from '../types';
import { backendKey } from './backend';

export const serverRules: KindRules<'server'> = {
  kind: 'server',
  compared: [(f) => f.name, (f) => f.ip, (f) => f.port, (f) => f.check, (f) => f.backend],
  parentOf: (f) => f.backend,
  complete: (fields, parentId) => ({ ...fields, backend: parentId }),
};

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
