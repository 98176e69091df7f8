/** Frontend: one per port, `<port>.<suffix>`, plain TCP, defaulting to that port's Backend. */
import { MODE_TCP, resourceName } from '../names';
import { backendKey } from './backend';
import type { DesiredOf } from './compare';
import { defineKind } from './define';

export const frontend = defineKind({
  kind: 'frontend',
  title: 'Frontend',
  resourceType: 'da9d14b9d95840c08213de67f9cee6e2',
  fields: {
    name: { type: 'string', compared: true },
    mode: { type: 'string', compared: true },
    load_balancer: { type: 'link', compared: true, to: 'loadbalancer' },
    default_backend: { type: 'link', compared: true, to: 'backend' },
    client_timeout: { type: 'string', compared: false, omitEmpty: true },
  },
  // Created after the Backend it forwards to, yet listed (and found) under its load balancer.
  dependsOn: 'default_backend',
  listedUnder: 'load_balancer',
  destroyStage: 1,
});

export function frontendKey(port: string): string {
  return `frontend:${port}`;
}

export function desiredFrontend(port: string, nameSuffix: string, loadBalancer: string): DesiredOf<'frontend'> {
  const name = resourceName([port], nameSuffix);
  return {
    kind: 'frontend',
    key: frontendKey(port),
    name,
    port,
    parent: backendKey(port),
    fields: { name, mode: MODE_TCP, load_balancer: loadBalancer },
  };
}
