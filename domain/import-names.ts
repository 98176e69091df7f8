/**
 * Reading the upstream naming scheme backwards: `<port>.<suffix>` for Backends and Frontends, `<v4|v6>.<port>.<suffix>`
 * for Binds, `<server>.<port>.<suffix>` for Servers (domain/kinds). Port names never contain a dot (validateSpec's
 * rule, and Kubernetes' for port names), so the port is the first label of a Backend's name and the suffix the rest.
 */
import { resourceName } from './names';
import type { PortSpec } from './types';

/** How the note on a single port whose name admits two readings begins. */
export const AMBIGUOUS = 'ambiguous:';

/** validateSpec's port-name rule: one DNS label. */
const PORT_LABEL = /^[a-z0-9-]{1,63}$/;

export interface SuffixReading {
  nameSuffix: string;
  /** Backend name -> port name, for the names that fit the suffix. */
  ports: Map<string, string>;
  /** Backend names that do not fit `<port>.<suffix>`. */
  unfit: string[];
  /** Set when the names admit another reading that means the same objects (one port only). */
  note?: string;
}

/**
 * The name suffix and the port of every Backend name. With several names the suffix is the one most of them share
 * after their first label (ties: the text-smallest, so the result never depends on order); names that do not fit it
 * are returned as unfit. With one name the port cannot be told from the suffix: `http.web.prod` is port `http` with
 * suffix `web.prod`, or the single unnamed port "" with suffix `http.web.prod`. Both mean the same Engine objects; the
 * first is chosen when the first label is a valid port name, and a note says so.
 */
export function readSuffix(backendNames: readonly string[]): SuffixReading {
  const names = [...new Set(backendNames)].sort();
  if (names.length === 1) {
    const name = names[0] as string;
    const dot = name.indexOf('.');
    const first = dot < 0 ? name : name.slice(0, dot);
    if (dot > 0 && PORT_LABEL.test(first)) {
      const rest = name.slice(dot + 1);
      return {
        nameSuffix: rest,
        ports: new Map([[name, first]]),
        unfit: [],
        note: `${AMBIGUOUS} one port: its Backend ${name} is read as port "${first}" with nameSuffix "${rest}"; the single unnamed port "" with nameSuffix "${name}" names the same objects, so either spec adopts them unchanged (the cluster name tells them apart: lbaas import --cluster-name)`,
      };
    }
    return { nameSuffix: name, ports: new Map([[name, '']]), unfit: [] };
  }
  const split = names.map((name) => {
    const dot = name.indexOf('.');
    return dot > 0 && PORT_LABEL.test(name.slice(0, dot)) ? { name, port: name.slice(0, dot), rest: name.slice(dot + 1) } : { name, port: name, rest: '' };
  });
  const votes = new Map<string, number>();
  for (const s of split) votes.set(s.rest, (votes.get(s.rest) ?? 0) + 1);
  const [nameSuffix] = [...votes].sort(([a, x], [b, y]) => y - x || (a < b ? -1 : a > b ? 1 : 0))[0] as [string, number];
  const ports = new Map<string, string>();
  const unfit: string[] = [];
  for (const s of split) {
    if (s.rest === nameSuffix && PORT_LABEL.test(s.port)) ports.set(s.name, s.port);
    else unfit.push(s.name);
  }
  return { nameSuffix, ports, unfit };
}

/** The server name in a Server's name `<server>.<port>.<suffix>`, or null when the name does not end that way. */
export function serverNameOf(name: string, port: string, nameSuffix: string): string | null {
  const tail = resourceName([port], nameSuffix);
  if (tail === '') return name === '' ? null : name;
  if (!name.endsWith(`.${tail}`)) return null;
  const server = name.slice(0, name.length - tail.length - 1);
  return server === '' ? null : server;
}

/** The name the scheme gives a Bind of `family` on `port`. */
export function bindName(family: 'v4' | 'v6', port: string, nameSuffix: string): string {
  return resourceName([family, port], nameSuffix);
}

/**
 * The reading of a one-port spec that follows the upstream's suffix `<service>.<namespace>.<cluster>` (Service and
 * namespace names are single labels). With cluster `prod`, the Backend `http.web.default.prod` is port `http` of
 * Service `web` in `default`, while `web.default.prod` is the single unnamed port of that Service (readSuffix reads
 * it as port `web` with suffix `default.prod`). Returns the ports and suffix as the upstream named them, or why
 * neither reading fits. Specs with several ports, or with the unnamed port already, come back unchanged.
 */
export function upstreamPortReading(
  ports: Readonly<Record<string, PortSpec>>,
  nameSuffix: string,
  clusterName: string,
): { ok: true; ports: Record<string, PortSpec>; nameSuffix: string; changed: boolean } | { ok: false; message: string } {
  const names = Object.keys(ports);
  const upstream = (suffix: string) => suffix.endsWith(`.${clusterName}`) && suffix.slice(0, -clusterName.length - 1).split('.').length === 2;
  if (names.length !== 1 || names[0] === '') return { ok: true, ports: { ...ports }, nameSuffix, changed: false };
  const port = names[0] as string;
  if (upstream(nameSuffix)) return { ok: true, ports: { ...ports }, nameSuffix, changed: false };
  const whole = `${port}.${nameSuffix}`;
  if (upstream(whole)) return { ok: true, ports: { '': ports[port] as PortSpec }, nameSuffix: whole, changed: true };
  return { ok: false, message: `neither nameSuffix "${nameSuffix}" nor "${whole}" is <service>.<namespace>.${clusterName}` };
}
