/**
 * The Engine objects a spec means on one load balancer (docs/spec.md#engine-objects): per kind, the objects of one
 * port; in all, every kind in the registry's dependency order (kinds/registry.ts, KINDS).
 */
import { BIND_SSL, MODE_TCP, SERVER_CHECK_ENABLED, TCP_HEALTH_CHECK, resourceName } from './names';
import { KINDS } from './kinds';
import type { DesiredObject, DesiredOf, Kind, PortSpec, ServerSpec, ServiceSpec } from './types';

export function backendKey(port: string): string {
  return `backend:${port}`;
}

export function frontendKey(port: string): string {
  return `frontend:${port}`;
}

/** Backend: one per port, `<port>.<suffix>`, plain TCP with the upstream TCP health check. */
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

/** Frontend: one per port, `<port>.<suffix>`, plain TCP, defaulting to that port's Backend. */
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

/**
 * Bind: one per external address and port, `<v4|v6>.<port>.<suffix>`, listening on the external port without TLS.
 * The name carries only the family, so Binds of two addresses of one family share a name: the key adds the address.
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

/** Server: one per backend server and port, `<server>.<port>.<suffix>`, the internal (NodePort) port, checked. */
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

/** The objects of each kind that one port of the spec means; the compiler checks that every kind has an entry. */
const OBJECTS_OF_PORT: { readonly [K in Kind]: (spec: ServiceSpec, loadBalancer: string, name: string, port: PortSpec) => DesiredOf<K>[] } = {
  backend: (spec, lb, name) => [desiredBackend(name, spec.nameSuffix, lb)],
  frontend: (spec, lb, name) => [desiredFrontend(name, spec.nameSuffix, lb)],
  bind: (spec, _lb, name, port) => spec.externalAddresses.map((address) => desiredBind(name, port, address, spec.nameSuffix)),
  server: (spec, _lb, name, port) => spec.servers.map((server) => desiredServer(name, port, server, spec.nameSuffix)),
};

/**
 * Every desired object of the spec on `loadBalancer`, in dependency order: kind by kind in KINDS order (each
 * parent's kind before its children's), port by port within a kind. Ports are taken in name order, so the order
 * does not depend on how the spec's map was written (JavaScript puts integer-like keys first); addresses and
 * servers keep the spec's order.
 */
export function desiredObjects(spec: ServiceSpec, loadBalancer: string): DesiredObject[] {
  const ports = Object.keys(spec.ports)
    .sort(compareText)
    .flatMap((name) => {
      const port = spec.ports[name];
      return port === undefined ? [] : [{ name, port }];
    });
  return KINDS.flatMap((kind) => ports.flatMap(({ name, port }): DesiredObject[] => OBJECTS_OF_PORT[kind](spec, loadBalancer, name, port)));
}

/** Code-unit order, the same in every locale and runtime (localeCompare is neither). */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
