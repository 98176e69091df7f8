/** Backend: one per port, `<port>.<suffix>`, plain TCP with the upstream TCP health check. */
import { MODE_TCP, TCP_HEALTH_CHECK, resourceName } from '../names';
import type { DesiredOf } from './compare';
import { defineKind } from './define';

export const backend = defineKind({
  kind: 'backend',
  title: 'Backend',
  resourceType: '33164a3066a04a52be43c607f0c5dd8c',
  fields: {
    name: { type: 'string', compared: true },
    mode: { type: 'string', compared: true },
    health_check: { type: 'string', compared: true, engineDefault: true, omitEmpty: true },
    load_balancer: { type: 'link', compared: true, to: 'loadbalancer' },
    server_timeout: { type: 'integer', compared: false, omitEmpty: true },
  },
  // The load balancer is given, not one of the service's objects: a Backend is created first.
  dependsOn: null,
  listedUnder: 'load_balancer',
  destroyStage: 2,
});

export function backendKey(port: string): string {
  return `backend:${port}`;
}

export function desiredBackend(port: string, nameSuffix: string, loadBalancer: string): DesiredOf<'backend'> {
  const name = resourceName([port], nameSuffix);
  return {
    kind: 'backend',
    key: backendKey(port),
    name,
    port,
    parent: null,
    fields: { name, mode: MODE_TCP, health_check: TCP_HEALTH_CHECK, load_balancer: loadBalancer },
  };
}
