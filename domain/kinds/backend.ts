/** Backend: one per port, `<port>.<suffix>`, plain TCP with the upstream TCP health check. */
import type { DesiredOf, KindRules } from '../diff';
import { MODE_TCP, TCP_HEALTH_CHECK, resourceName } from '../names';

export const backendRules: KindRules<'backend'> = {
  kind: 'backend',
  compared: [(f) => f.name, (f) => f.mode, (f) => f.health_check, (f) => f.load_balancer],
  parentOf: () => null,
  complete: (fields) => ({ ...fields }),
};

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
