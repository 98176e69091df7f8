/**
 * The health endpoints of `lbaas worker` and `lbaas kube` (LBAAS_HEALTH_ADDRESS, docs/operations.md#health-endpoints):
 * `GET /healthz` (liveness), `GET /readyz` (readiness), and `/metrics` where the process has metrics of its own to
 * serve. 200 with `ok`, or 503 with one line saying what is missing. node:http: three plain-text routes need nothing
 * more.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { invalid } from './errors';

export interface HealthChecks {
  /** Null while the process is alive and its worker or controller has not failed; otherwise why. */
  live(): string | null;
  /** Null when ready; otherwise what is missing. */
  ready(): Promise<string | null> | string | null;
  /** Prometheus text for `/metrics`; no such route when absent. */
  metrics?(): string;
}

export interface HealthServer {
  /** `host:port` actually bound (port 0 asks for a free one). */
  address: string;
  close(): Promise<void>;
}

/** `host:port`, `[v6]:port` or `:port` (all interfaces); a bad value is `invalid` (exit 2), naming `variable`. */
export function parseListenAddress(raw: string, variable: string): { host: string; port: number } {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s[\]]*)):(\d{1,5})$/.exec(raw);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 0 && port <= 65535)) throw invalid(`${variable}: must be host:port (e.g. 0.0.0.0:8081), got "${raw}"`);
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

/** Answers a check within this long, or says it did not: a probe must not hang on a server that does not answer. */
const CHECK_TIMEOUT_MS = 5_000;

export async function startHealthServer(listen: { host: string; port: number }, checks: HealthChecks): Promise<HealthServer> {
  const server = http.createServer((req, res) => {
    const answer = (status: number, body: string, type = 'text/plain; charset=utf-8') => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return answer(405, 'only GET\n');
    const route = (req.url ?? '/').split('?')[0];
    if (route === '/healthz') {
      const why = checks.live();
      return why === null ? answer(200, 'ok\n') : answer(503, `${why}\n`);
    }
    if (route === '/readyz') {
      const live = checks.live();
      if (live !== null) return answer(503, `${live}\n`);
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<string>((resolve) => (timer = setTimeout(() => resolve(`no answer within ${CHECK_TIMEOUT_MS / 1000} s`), CHECK_TIMEOUT_MS)));
      void Promise.race([Promise.resolve().then(() => checks.ready()), timeout])
        .catch((err: unknown) => `readiness check failed: ${(err as Error).message ?? String(err)}`)
        .then((why) => {
          clearTimeout(timer);
          if (why === null) answer(200, 'ok\n');
          else answer(503, `${why.replace(/\s*\n\s*/g, ' ')}\n`);
        });
      return;
    }
    if (route === '/metrics' && checks.metrics) return answer(200, checks.metrics(), 'text/plain; version=0.0.4; charset=utf-8');
    answer(404, `no such path: ${route}; /healthz, /readyz${checks.metrics ? ', /metrics' : ''}\n`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const a = server.address() as AddressInfo;
  return {
    address: a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
