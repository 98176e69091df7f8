/** Frontend: one per port, `<port>.<suffix>`, plain TCP, defaulting to that port's Backend. */
import type { DesiredOf, KindRules } from '../diff';
import { MODE_TCP, resourceName } from '../names';
import { backendKey } from './backend';

export const frontendRules: KindRules<'frontend'> = {
  kind: 'frontend',
  compared: [(f) => f.name, (f) => f.mode, (f) => f.load_balancer, (f) => f.default_backend],
  parentOf: (f) => f.default_backend,
  complete: (fields, parentId) => ({ ...fields, default_backend: parentId }),
};

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
