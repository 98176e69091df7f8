/**
 * An EngineClient on an undici MockAgent, for the client's unit tests: replies are queued in request order and
 * requests are recorded as sent. Plus Engine objects of every kind, as the Engine answers them.
 */
import { MockAgent } from 'undici';
import { EngineClient, type EngineClientOptions, type EngineResponseEvent } from '../../activities/engine';

export const ORIGIN = 'http://engine.test';
export const TOKEN = 'unit-secret-token-5f2c';

export const LB_ID = '1'.repeat(32);
export const BACKEND_ID = 'b'.repeat(32);
export const FRONTEND_ID = 'f'.repeat(32);
export const BIND_ID = 'd'.repeat(32);
export const SERVER_ID = 'e'.repeat(32);
export const TAG = 'anxccm-svc-uid=0b5e3c1a-5d3f-4b8e-9e1d-2f0c6a7b8c9d';

export const DEPLOYED = { id: '3', title: 'Deployed', text: 'Deployed', type: 1 };
export const COMMON = { customer_identifier: 'cust', reseller_identifier: 'resl', automation_rules: [] };

export const BACKEND = {
  identifier: BACKEND_ID,
  name: 'http.web.default.prod',
  state: DEPLOYED,
  ...COMMON,
  load_balancer: { identifier: LB_ID, name: 'lb-1' },
  mode: 'tcp',
  health_check: '"adv_check": "tcp-check"',
  server_timeout: 30,
};
export const FRONTEND = {
  identifier: FRONTEND_ID,
  name: 'http.web.default.prod',
  state: DEPLOYED,
  ...COMMON,
  load_balancer: { identifier: LB_ID, name: 'lb-1' },
  default_backend: { identifier: BACKEND_ID, name: 'http.web.default.prod' },
  mode: 'tcp',
  client_timeout: '50000',
};
export const BIND = {
  identifier: BIND_ID,
  name: 'v4.http.web.default.prod',
  state: DEPLOYED,
  ...COMMON,
  frontend: { identifier: FRONTEND_ID, name: 'http.web.default.prod' },
  address: '192.0.2.10',
  port: 80,
  ssl: false,
  ssl_certificate_path: '',
};
export const SERVER = {
  identifier: SERVER_ID,
  name: 'node-1.http.web.default.prod',
  state: DEPLOYED,
  ...COMMON,
  backend: { identifier: BACKEND_ID, name: 'http.web.default.prod' },
  ip: '10.0.0.5',
  port: 30080,
  check: 'enabled',
};
export const LOADBALANCER = { identifier: LB_ID, name: 'lb-1', state: DEPLOYED, ...COMMON, ip_address: '192.0.2.10' };

export interface Seen {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | null;
}

export interface Reply {
  status: number;
  /** Sent as is when a string, JSON-encoded (with a JSON content type) otherwise. */
  body?: unknown;
  headers?: Record<string, string>;
  delayMs?: number;
}

export const JSON_HEADERS = { 'content-type': 'application/json' };

/** A client on a MockAgent whose replies are queued in request order and whose requests are recorded as sent. */
export function harness(options: Partial<EngineClientOptions> = {}) {
  const agent = new MockAgent();
  agent.disableNetConnect();
  const pool = agent.get(ORIGIN);
  const seen: Seen[] = [];
  const events: EngineResponseEvent[] = [];
  const client = new EngineClient({
    baseUrl: ORIGIN,
    token: TOKEN,
    dispatcher: agent,
    onResponse: (e) => events.push(e),
    ...options,
  });
  const reply = (r: Reply | ((seen: Seen) => Reply), times = 1): void => {
    const scope = pool.intercept({ path: () => true, method: () => true }).reply((req) => {
      const request: Seen = {
        method: req.method,
        path: req.path,
        headers: { ...(req.headers as Record<string, string>) },
        body: typeof req.body === 'string' ? req.body : null,
      };
      seen.push(request);
      const { status, body, headers } = typeof r === 'function' ? r(request) : r;
      const raw = typeof body === 'string' || body === undefined;
      return {
        statusCode: status,
        data: raw ? (body ?? '') : JSON.stringify(body),
        responseOptions: { headers: headers ?? (raw ? {} : JSON_HEADERS) },
      };
    });
    if (times > 1) scope.times(times);
    if (typeof r !== 'function' && r.delayMs !== undefined) scope.delay(r.delayMs);
  };
  const done = async (): Promise<void> => {
    agent.assertNoPendingInterceptors();
    await agent.close();
  };
  return { agent, client, seen, events, reply, done };
}

export const page = (n: number, totalPages: number, items: { identifier: string; name: string }[]) => ({
  state: 'success',
  messages: [],
  data: { page: n, total_pages: totalPages, total_items: items.length, limit: 100, data: items },
});
export const ref = (i: number) => ({ identifier: i.toString(16).padStart(32, '0'), name: `obj-${i}` });
