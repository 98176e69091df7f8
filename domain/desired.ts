/** The Engine objects a spec means on one load balancer (docs/spec.md#engine-objects). */
import { desiredBackend, desiredBind, desiredFrontend, desiredServer } from './kinds';
import type { DesiredObject, ServiceSpec } from './types';

/**
 * Every desired object of the spec on `loadBalancer`, in dependency order: all Backends, then Frontends, Binds
 * and Servers (each parent before its children). Ports are taken in name order, so the order does not depend on
 * how the spec's map was written (JavaScript puts integer-like keys first); addresses and servers keep the
 * spec's order.
 */
export function desiredObjects(spec: ServiceSpec, loadBalancer: string): DesiredObject[] {
  const ports = Object.keys(spec.ports)
    .sort(compareText)
    .flatMap((name) => {
      const port = spec.ports[name];
      return port === undefined ? [] : [{ name, port }];
    });
  return [
    ...ports.map(({ name }) => desiredBackend(name, spec.nameSuffix, loadBalancer)),
    ...ports.map(({ name }) => desiredFrontend(name, spec.nameSuffix, loadBalancer)),
    ...ports.flatMap(({ name, port }) => spec.externalAddresses.map((address) => desiredBind(name, port, address, spec.nameSuffix))),
    ...ports.flatMap(({ name, port }) => spec.servers.map((server) => desiredServer(name, port, server, spec.nameSuffix))),
  ];
}

/** Code-unit order, the same in every locale and runtime (localeCompare is neither). */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
